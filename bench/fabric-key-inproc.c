/* SPDX-License-Identifier: MIT */
/*
 * bench/fabric-auth.sh's stand-in for slurmstepd on an auth/slurm node:
 * a process with libcrypto.so.3 mapped (slurmstepd has it through
 * auth_slurm.so -> libjwt), not set up.  Its copies stand for the
 * step's slurmstepds, one per node and step (each a fresh libcrypto,
 * not set up either), which exist before the plugin's user_init runs:
 * "ready N" on stdin forks N copies that wait, then says "ready" on
 * ACK, before the bench's clock starts (as the MUNGE row's slurmstepd,
 * and its munged, are not on the clock either).  Then each request
 * ("FIFO JOB STEP UID") goes to a waiting copy, which does what the
 * plugin does (src/plugin/step_fabric_auth.c's derive_here and its
 * thread, with the same code: step_key.c, protocol/step_key_io.c): the
 * site key read, the key's pipe there at once (FIFO, opened for writing
 * while the helper's shell opens it as its --fabric-key-fd, so the
 * helper starts without waiting for the key), then HKDF and the key's
 * line into it, beside the helper's exec and start.
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
#include <unistd.h>

#include "step_key.h"

#define COPIES_MAX 64

/* One copy's request: the plugin's user_init for one node of a step. */
static int derive(const char *site_path, const char *cluster,
		  const char *fifo, uint32_t job, uint32_t step, uint32_t uid)
{
	static unsigned char site[SN_STEP_KEY_SITE_MAX];
	unsigned char key[SN_STEP_KEY_BYTES];
	struct sn_step_key_lib *lib;
	char why[512] = "";
	size_t n = 0;
	int fd, ok;

	/* Before the helper's fork, as in the plugin. */
	lib = sn_step_key_open(why, sizeof(why));
	ok = lib && sn_step_key_site_read(site_path, site, &n, why,
					  sizeof(why)) == 0;
	/* The pipe the helper inherits; opened even on failure: the helper
	 * then finds no key. */
	fd = open(fifo, O_WRONLY | O_CLOEXEC);
	if (ok && fd < 0)
		snprintf(why, sizeof(why), "%s: cannot open", fifo);
	/* The plugin's thread, beside the helper's start. */
	ok = ok && fd >= 0 &&
	     sn_step_key_derive(lib, site, n, cluster, job, step, uid, key,
				why, sizeof(why)) == 0 &&
	     sn_step_key_write(fd, key, why, sizeof(why)) == 0;
	if (!ok)
		fprintf(stderr, "fabric-key-inproc: %s\n", why);
	return ok ? 0 : 1;
}

/* A waiting copy: its one request from R, then the derivation. */
static void copy_main(int r, const char *site, const char *cluster)
{
	char line[4096], fifo[4096];
	uint32_t job, step, uid;
	ssize_t n = read(r, line, sizeof(line) - 1);

	if (n <= 0)
		_exit(0);		/* not needed: the bench ended */
	line[n] = '\0';
	if (sscanf(line, "%4095s %" SCNu32 " %" SCNu32 " %" SCNu32, fifo,
		   &job, &step, &uid) != 4) {
		fprintf(stderr, "fabric-key-inproc: a bad request: %s", line);
		_exit(2);
	}
	_exit(derive(site, cluster, fifo, job, step, uid));
}

int main(int argc, char **argv)
{
	int waiting[COPIES_MAX], first = 0, last = 0, ack, copies;
	char line[4096];

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
		if (sscanf(line, "ready %d", &copies) == 1) {
			for (; copies > 0 && last - first < COPIES_MAX; copies--) {
				pid_t pid;
				int p[2];

				if (pipe(p) < 0 || (pid = fork()) < 0) {
					perror("fabric-key-inproc: a copy");
					return 1;
				}
				if (pid == 0) {
					/* Only its own pipe: the others' end. */
					for (int i = first; i < last; i++)
						close(waiting[i % COPIES_MAX]);
					close(p[1]);
					close(ack);
					fclose(stdin);
					copy_main(p[0], argv[1], argv[2]);
				}
				close(p[0]);
				waiting[last++ % COPIES_MAX] = p[1];
			}
			if (write(ack, "ready\n", 6) != 6)
				return 1;
			continue;
		}
		if (first == last) {
			fprintf(stderr, "fabric-key-inproc: no copy ready for: %s",
				line);
			continue;
		}
		/* One write: the copy reads its whole line at once. */
		if (write(waiting[first % COPIES_MAX], line, strlen(line)) < 0)
			perror("fabric-key-inproc: a copy");
		close(waiting[first++ % COPIES_MAX]);
	}
	return 0;
}
