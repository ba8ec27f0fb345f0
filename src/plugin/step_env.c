/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init: applies the resolved profiles, then the step's
 * NCCL RAS address (ras=, ras.h), to the job environment.  spank_setenv() in user_init reaches every task of the step
 * on this node; TaskProlog and plugins whose task_init sets variables
 * (pyxis re-imports the container's) run later and can still override.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "profiles/applied.h"
#include "profiles/env_apply.h"
#include "plugin.h"
#include "config/ras.h"
#include "spank_wrap.h"

static int spank_env_get(void *ctx, const char *name, char *buf, size_t len)
{
	return sn_spank_getenv((spank_t)ctx, name, buf, len);
}

static int spank_env_set(void *ctx, const char *name, const char *value)
{
	return sn_spank_setenv((spank_t)ctx, name, value);
}

static int spank_env_unset(void *ctx, const char *name)
{
	return sn_spank_unsetenv((spank_t)ctx, name);
}

/* Notices and warnings are printed once per step, by the first node. */
static void report_notices(const struct sn_apply_report *report)
{
	char line[1024];
	size_t i;

	for (i = 0; i < report->n_notices; i++) {
		sn_notice_format(&report->notices[i], line, sizeof(line));
		sn_log_user("%s", line);
	}
}

int sn_step_apply_profiles(struct sn_plugin *p, spank_t sp,
			   const struct sn_job_ids *ids)
{
	struct sn_env env = {
		.get = spank_env_get,
		.set = spank_env_set,
		.unset = spank_env_unset,
		.ctx = sp,
	};
	struct sn_apply_report report;
	bool first_node = ids->node_id == 0;
	struct sn_error err;
	int rc;

	rc = sn_step_env_apply(p->have_plan ? &p->plan : NULL, &env, &report,
			       &err);
	if (report.inherited_ignored)
		sn_log_info("ignoring the inherited record: %s",
			    report.inherited_error.msg);
	if (rc < 0) {
		sn_log_error("%s", err.msg);
		sn_apply_report_free(&report);
		return -1;
	}
	if (!p->have_plan)
		return 0;	/* --nccl-profile=none */
	if (report.record_lost)
		sn_log_info("could not record the changes in %s; later steps may see them as the user's",
			    SN_ENV_APPLIED);
	sn_log_info("job %u step %u: profiles %s applied (%zu set, %zu unset, %zu notices)",
		    ids->job_id, ids->step_id, p->plan.names, report.n_set,
		    report.n_unset, report.n_notices);
	if (first_node)
		report_notices(&report);
	sn_apply_report_free(&report);
	if (p->profiles_loaded)
		rc = sn_rules_report(p, &env, NULL, first_node);
	return rc;
}

/*
 * Whether 127.0.0.1:PORT is free: a bind() there fails with EADDRINUSE
 * while any process of any user listens on it (NCCL's RAS sets
 * SO_REUSEPORT, which the kernel honours for one uid only).  When the
 * check itself fails the port counts as free.
 */
static int port_free(void *ctx, unsigned int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, rc;

	(void)ctx;
	if (fd < 0)
		return 1;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	     errno == EADDRINUSE ? 0 : 1;
	close(fd);
	return rc;
}

void sn_step_ras(struct sn_plugin *p, spank_t sp, const struct sn_job_ids *ids)
{
	struct sn_env env = {
		.get = spank_env_get,
		.set = spank_env_set,
		.unset = spank_env_unset,
		.ctx = sp,
	};
	struct sn_error err;
	char done[160];

	if (p->cfg.ras == SN_RAS_NCCL)
		return;
	if (sn_ras_apply(p->cfg.ras, &p->cfg.ras_ports, ids->job_id,
			 ids->step_id, &env, port_free, NULL, done,
			 sizeof(done), &err) < 0) {
		sn_log_info("job %u step %u: NCCL RAS not set up: %s",
			    ids->job_id, ids->step_id, err.msg);
		return;
	}
	sn_log_info("job %u step %u: %s", ids->job_id, ids->step_id, done);
}
