/* SPDX-License-Identifier: MIT */
/*
 * bench/fabric-auth.sh's stand-in for slurmstepd on an auth/slurm node:
 * a process already running with libcrypto.so.3 mapped (slurmstepd has it
 * through auth_slurm.so -> libjwt), not set up.  Per line on stdin
 * ("FIFO JOB STEP UID") it forks a fresh copy (one slurmstepd per step:
 * its libcrypto not set up either), which derives the step key with the
 * plugin's own code (src/plugin/step_key.c: site key, HKDF, the key's
 * line) and writes it into FIFO, which the helper opens as its
 * --fabric-key-fd: so the helper starts once the key is there, as after
 * the plugin's derivation.  The fork is the bench's, not the plugin's.
 *
 *	fabric-key-inproc SITE_KEY CLUSTER <requests
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "step_key.h"

static int derive(const char *site_path, const char *cluster,
		  const char *fifo, uint32_t job, uint32_t step, uint32_t uid)
{
	static unsigned char site[SN_STEP_KEY_SITE_MAX];
	unsigned char key[SN_STEP_KEY_BYTES];
	struct sn_step_key_lib *lib;
	char why[512];
	size_t n;
	int fd;

	int ok;

	lib = sn_step_key_open(why, sizeof(why));
	ok = lib && sn_step_key_site_read(site_path, site, &n, why,
					  sizeof(why)) == 0 &&
	     sn_step_key_derive(lib, site, n, cluster, job, step, uid, key,
				why, sizeof(why)) == 0;
	/* Opened even on failure: the helper waits on it, then finds no key. */
	fd = open(fifo, O_WRONLY | O_CLOEXEC);
	if (ok && fd >= 0)
		ok = sn_step_key_write(fd, key, why, sizeof(why)) == 0;
	else if (ok)
		snprintf(why, sizeof(why), "%s: cannot open", fifo);
	if (!ok)
		fprintf(stderr, "fabric-key-inproc: %s\n", why);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	char line[4096], fifo[4096];
	uint32_t job, step, uid;

	if (argc != 3) {
		fprintf(stderr, "usage: fabric-key-inproc SITE_KEY CLUSTER <requests\n");
		return 2;
	}
	if (!dlopen("libcrypto.so.3", RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "fabric-key-inproc: %s\n", dlerror());
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
		if (fork() == 0)
			_exit(derive(argv[1], argv[2], fifo, job, step, uid));
	}
	return 0;
}
