/* SPDX-License-Identifier: MIT */
/* Which authentication the fabric warmup uses (slurm_auth.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/slurm_auth.h"

static const char *const names[] = {
	[SN_FABRIC_AUTH_AUTO] = "auto",
	[SN_FABRIC_AUTH_MUNGE] = "munge",
	[SN_FABRIC_AUTH_KEY] = "key",
};

int sn_auth_choice_parse(const char *value, enum sn_fabric_auth *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(value, names[i]) == 0) {
			*out = (enum sn_fabric_auth)i;
			return 0;
		}
	}
	return -1;
}

const char *sn_auth_choice_name(enum sn_fabric_auth a)
{
	return (size_t)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

/* VALUE of "KEY=VALUE" at the start of LINE (key in any case) into OUT. */
static void take(const char *line, const char *key, char *out, size_t len)
{
	size_t k = strlen(key), n;

	if (strncasecmp(line, key, k) != 0 || line[k] != '=')
		return;
	line += k + 1;
	n = strcspn(line, " \t#\r\n");
	snprintf(out, len, "%.*s", (int)n, line);
}

int sn_slurm_auth_read(const char *path, struct sn_slurm_auth *out,
		       struct sn_error *err)
{
	const char *key_dir = path, *slash;
	char line[4096];
	FILE *f;

	memset(out, 0, sizeof(*out));
	/* auth/slurm's key: slurm.key beside slurm.conf; configless
	 * slurmd's copy of slurm.conf has no key beside it. */
	if (strncmp(path, SN_SLURM_CONFLESS_DIR "/",
		    strlen(SN_SLURM_CONFLESS_DIR) + 1) == 0)
		key_dir = SN_SLURM_CONF_DEFAULT;
	slash = strrchr(key_dir, '/');
	snprintf(out->key, sizeof(out->key), "%.*s/slurm.key",
		 slash ? (int)(slash - key_dir) : 1, slash ? key_dir : ".");
	f = fopen(path, "re");
	if (!f) {
		sn_error_set(err, "cannot read %s", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;

		while (isspace((unsigned char)*p))
			p++;
		take(p, "AuthType", out->auth_type, sizeof(out->auth_type));
		take(p, "ClusterName", out->cluster, sizeof(out->cluster));
	}
	fclose(f);
	return 0;
}

int sn_auth_choice_resolve(enum sn_fabric_auth want, const char *auth_type,
			   enum sn_fabric_auth *out, struct sn_error *err)
{
	if (want != SN_FABRIC_AUTH_AUTO) {
		*out = want;
		return 0;
	}
	if (strcmp(auth_type, "auth/munge") == 0 || !auth_type[0]) {
		*out = SN_FABRIC_AUTH_MUNGE;	/* Slurm's default too */
		return 0;
	}
	if (strcmp(auth_type, "auth/slurm") == 0) {
		*out = SN_FABRIC_AUTH_KEY;
		return 0;
	}
	sn_error_set(err, "the fabric warmup cannot authenticate the step's nodes with AuthType=%.60s: set fabric_auth=munge (munged running) or fabric_auth=key (with fabric_key=FILE, a secret on every node) in plugstack.conf",
		     auth_type);
	return -1;
}
