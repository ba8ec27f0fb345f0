/* SPDX-License-Identifier: MIT */
/* fabric_auth= and slurm.conf's AuthType (src/core/config/slurm_auth.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/slurm_auth.h"

static void test_read_and_resolve(void **state)
{
	char dir[] = "/tmp/sn-slurm-auth.XXXXXX", path[64];
	struct sn_slurm_auth a;
	enum sn_fabric_auth how;
	struct sn_error e;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/slurm.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# AuthType=auth/munge\nclustername=blue # the name\n"
	      "  AUTHTYPE=auth/slurm\nCredType=cred/slurm\n", f);
	fclose(f);
	assert_int_equal(sn_slurm_auth_read(path, &a, &e), 0);
	assert_string_equal(a.auth_type, "auth/slurm");
	assert_string_equal(a.cluster, "blue");
	assert_string_equal(a.key + strlen(dir), "/slurm.key");
	assert_int_equal(sn_auth_choice_resolve(SN_FABRIC_AUTH_AUTO,
						a.auth_type, &how, &e), 0);
	assert_int_equal(how, SN_FABRIC_AUTH_KEY);
	/* The plugstack's choice wins. */
	assert_int_equal(sn_auth_choice_resolve(SN_FABRIC_AUTH_MUNGE,
						a.auth_type, &how, &e), 0);
	assert_int_equal(how, SN_FABRIC_AUTH_MUNGE);
	/* Slurm's default and auth/munge: MUNGE. */
	assert_int_equal(sn_auth_choice_resolve(SN_FABRIC_AUTH_AUTO, "", &how,
						&e), 0);
	assert_int_equal(how, SN_FABRIC_AUTH_MUNGE);
	assert_int_equal(sn_auth_choice_resolve(SN_FABRIC_AUTH_AUTO,
						"auth/munge", &how, &e), 0);
	assert_int_equal(how, SN_FABRIC_AUTH_MUNGE);
	/* Neither: one message naming what to set. */
	assert_int_equal(sn_auth_choice_resolve(SN_FABRIC_AUTH_AUTO,
						"auth/none", &how, &e), -1);
	assert_non_null(strstr(e.msg, "fabric_auth="));
	unlink(path);
	rmdir(dir);
	assert_int_equal(sn_slurm_auth_read(path, &a, &e), -1);
	/* Configless: the key is not beside slurmd's fetched copy. */
	sn_slurm_auth_read(SN_SLURM_CONFLESS_DIR "/slurm.conf", &a, &e);
	assert_string_equal(a.key, "/etc/slurm/slurm.key");
}

static void test_parse(void **state)
{
	enum sn_fabric_auth how;

	(void)state;
	assert_int_equal(sn_auth_choice_parse("key", &how), 0);
	assert_int_equal(how, SN_FABRIC_AUTH_KEY);
	assert_string_equal(sn_auth_choice_name(how), "key");
	assert_int_equal(sn_auth_choice_parse("auto", &how), 0);
	assert_int_equal(how, SN_FABRIC_AUTH_AUTO);
	assert_int_equal(sn_auth_choice_parse("Munge", &how), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_and_resolve),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
