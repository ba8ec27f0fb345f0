/* SPDX-License-Identifier: MIT */
/*
 * bench/fabric-auth.sh's stand-in for slurmstepd on an auth/slurm node:
 * a process with libcrypto.so.3 mapped (slurmstepd has it through
 * auth_slurm.so -> libjwt), not set up.  Per line on stdin ("FIFO JOB
 * STEP UID", one per node, before the step's clock) it forks a copy,
 * which stands for that node's slurmstepd: it exists before the helper
 * starts, as the MUNGE row's slurmstepd (not on the clock either), and
 * its libcrypto is not set up.  The copy says "ready" on ACK and waits
 * in open(FIFO) for writing: the key's pipe is there before the helper
 * starts, as the plugin's is, so the helper's shell opens it as its
 * --fabric-key-fd at once.  From then the copy does what the plugin
 * does beside the helper's start (src/plugin/step_fabric_auth.c, with
 * the same code: step_key.c, protocol/step_key_io.c): the site key read
 * (the plugin reads it just before the helper's fork), HKDF and the
 * key's line into the pipe, closed.
 *
 *	fabric-key-inproc SITE_KEY CLUSTER ACK <requests
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "step_key.h"

/* One node's slurmstepd: ready, then the derivation once the helper
 * starts. */
static int derive(const char *site_path, const char *cluster, int ack,
		  const char *fifo, uint32_t job, uint32_t step, uint32_t uid)
{
	static unsigned char site[SN_STEP_KEY_SITE_MAX];
	unsigned char key[SN_STEP_KEY_BYTES];
	struct sn_step_key_lib *lib;
	char why[512] = "";
	size_t n = 0;
	int fd, ok;

	if (write(ack, "ready\n", 6) != 6)
		return 1;
	close(ack);
	fd = open(fifo, O_WRONLY | O_CLOEXEC);	/* the helper starts */
	lib = sn_step_key_open(why, sizeof(why));
	ok = lib && sn_step_key_site_read(site_path, site, &n, why,
					  sizeof(why)) == 0;
	if (ok && fd < 0)
		snprintf(why, sizeof(why), "%s: cannot open", fifo);
	/* The plugin's thread. */
	ok = ok && fd >= 0 &&
	     sn_step_key_derive(lib, site, n, cluster, job, step, uid, key,
				why, sizeof(why)) == 0 &&
	     sn_step_key_write(fd, key, why, sizeof(why)) == 0;
	if (!ok)
		fprintf(stderr, "fabric-key-inproc: %s\n", why);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	char line[4096], fifo[4096];
	uint32_t job, step, uid;
	int ack;

	if (argc != 4) {
		fprintf(stderr, "usage: fabric-key-inproc SITE_KEY CLUSTER ACK <requests\n");
		return 2;
	}
	if (!dlopen("libcrypto.so.3", RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "fabric-key-inproc: %s\n", dlerror());
		return 1;
	}
	if ((ack = open(argv[3], O_WRONLY | O_CLOEXEC)) < 0) {
		perror("fabric-key-inproc: ACK");
		return 1;
	}
	signal(SIGCHLD, SIG_IGN);	/* the copies reap themselves */
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%4095s %" SCNu32 " %" SCNu32 " %" SCNu32,
			   fifo, &job, &step, &uid) != 4) {
			fprintf(stderr, "fabric-key-inproc: a bad request: %s",
				line);
			continue;
		}
		if (fork() == 0) {
			/* Not left waiting on a FIFO when the bench ends. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(derive(argv[1], argv[2], ack, fifo, job, step,
				     uid));
		}
	}
	return 0;
}
