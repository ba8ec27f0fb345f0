/* SPDX-License-Identifier: MIT */
/* The fabric warmup's authentication for one step (step_fabric_auth.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper_exec.h"
#include "plugin.h"
#include "spank_wrap.h"
#include "step_fabric_auth.h"

/* Hex of the step key, as the derivation writes it. */
#define KEY_HEX 64
#define DERIVE_TIMEOUT_MS 5000

/* The step key's hex from the root-run derivation into HEX; -1 + MESSAGE. */
static int derive(const struct sn_plugin *p, const struct sn_job_ids *ids,
		  const struct sn_slurm_auth *conf, char hex[KEY_HEX + 1],
		  char *message, size_t len)
{
	char job[16], step[16], uid[16];
	const char *site = p->cfg.fabric_key[0] ? p->cfg.fabric_key :
			   conf->key;
	char *argv[] = { (char *)p->cfg.warmup_helper,
			 SN_HELPER_FABRIC_KEY_DERIVE, (char *)site,
			 (char *)conf->cluster, job, step, uid, NULL };
	static char *empty_env[] = { NULL };
	struct sn_helper_outcome *o = calloc(1, sizeof(*o));
	struct sn_helper_spec spec = {
		.path = p->cfg.warmup_helper,
		.argv = argv,
		.envp = empty_env,
		/* Root, for good, as the clean check (step_confirm.c): the
		 * job user cannot signal, ptrace or preload into it. */
		.drop_privileges = true,
		.uid = 0,
		.gid = 0,
		.timeout_ms = DERIVE_TIMEOUT_MS,
		.kill_grace_ms = 500,
		.result_fd = SN_HELPER_RESULT_FD,
	};
	int rc = -1;

	if (!o) {
		snprintf(message, len, "fabric warmup: out of memory");
		return -1;
	}
	snprintf(job, sizeof(job), "%u", ids->job_id);
	snprintf(step, sizeof(step), "%u", ids->step_id);
	snprintf(uid, sizeof(uid), "%u", (unsigned int)ids->uid);
	if (sn_helper_run(&spec, o) == 0 && o->exited && o->exit_code == 0 &&
	    o->result_len >= KEY_HEX) {
		memcpy(hex, o->result, KEY_HEX);
		hex[KEY_HEX] = '\0';
		rc = 0;
	} else {
		char *nl = strchr(o->err, '\n');

		if (nl)
			*nl = '\0';
		snprintf(message, len,
			 "the fabric warmup cannot derive the step key (fabric_auth=key): %s",
			 o->err[0] ? o->err : "the derivation did not run");
	}
	explicit_bzero(o->result, sizeof(o->result));
	free(o);
	return rc;
}

int sn_step_fabric_auth(const struct sn_plugin *p,
			const struct sn_job_ids *ids, int *key_fd,
			char *message, size_t len)
{
	const char *path = getenv("SLURM_CONF");
	struct sn_slurm_auth *conf = calloc(1, sizeof(*conf));
	enum sn_fabric_auth how;
	struct sn_error e;
	char hex[KEY_HEX + 1];
	int fds[2] = { -1, -1 }, rc = -1;

	*key_fd = -1;
	if (!conf) {
		snprintf(message, len, "fabric warmup: out of memory");
		return -1;
	}
	if (!path || !*path)
		path = SN_SLURM_CONF_DEFAULT;
	if (sn_slurm_auth_read(path, conf, &e) < 0 &&
	    p->cfg.fabric_auth != SN_FABRIC_AUTH_MUNGE)
		sn_log_info("fabric warmup: %s: AuthType and ClusterName unknown",
			    e.msg);
	if (sn_auth_choice_resolve(p->cfg.fabric_auth, conf->auth_type, &how,
				   &e) < 0) {
		snprintf(message, len, "%s", e.msg);
		goto out;
	}
	rc = 0;
	if (how == SN_FABRIC_AUTH_MUNGE)
		goto out;
	rc = -1;
	if (derive(p, ids, conf, hex, message, len) < 0)
		goto out;
	/* 65 bytes fit any pipe's buffer: written whole before the helper. */
	if (pipe2(fds, O_CLOEXEC) < 0 ||
	    write(fds[1], hex, KEY_HEX) != KEY_HEX) {
		snprintf(message, len, "fabric warmup: cannot pass the step key to the helper");
	} else {
		*key_fd = fds[0];
		fds[0] = -1;
		rc = 0;
	}
	if (fds[1] >= 0)
		close(fds[1]);
	explicit_bzero(hex, sizeof(hex));
out:
	free(conf);
	return rc;
}
