/* SPDX-License-Identifier: MIT */
/*
 * The fabric warmup's authentication for one step (step_fabric_auth.c):
 * MUNGE or the per-step key from slurm.conf's AuthType and fabric_auth=,
 * the key's derivation as root (a script standing in for nccl-warmup
 * --fabric-key-derive) through its pipe, and its reaping.  The
 * derivation needs root; under CI=true (root) it must run.  This program
 * has no libcrypto until the last tests load it, as auth_slurm.so does in
 * slurmstepd: before, the plugin takes the exec path; after, it derives
 * the key itself (step_key.c), in a thread joined by the end call.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "pipe_testutil.h"
#include "plugin_testutil.h"
#include "root_testutil.h"
#include "step_fabric_auth.h"

#define KEY_HEX "0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef"

/* Root only: the derivation switches to root for good. */
#define NEEDS_ROOT "the step key's derivation and its reaping"

static void path_in(struct fixture *fx, const char *name, char *out,
		    size_t len)
{
	snprintf(out, len, "%s/%s", fx->dir, name);
}

/* slurm.conf in the fixture (SLURM_CONF) with TEXT; slurm.key beside. */
static void slurm_conf(struct fixture *fx, const char *text)
{
	char path[192];

	path_in(fx, "slurm.conf", path, sizeof(path));
	write_file(path, text, 0644);
	setenv("SLURM_CONF", path, 1);
	path_in(fx, "slurm.key", path, sizeof(path));
	write_file(path, "site secret\n", 0600);
}

/*
 * The derivation's stand-in: checks its argv (the site key, readable,
 * then cluster, job, step, uid), its uid and empty environment, and
 * writes the key to descriptor 3; BEFORE runs first.  -p: the shell
 * keeps an effective uid that is not its real one.
 */
static void write_derive(struct fixture *fx, const char *before)
{
	char script[2048];

	snprintf(script, sizeof(script),
		 "#!/bin/sh -p\n%s\n"
		 "[ \"$1\" = --fabric-key-derive ] || { echo \"argv $*\" >&2; exit 2; }\n"
		 "/bin/cat \"$2\" >/dev/null || exit 1\n"
		 "[ \"$3 $4 $5 $6\" = \"c1 42 7 4242\" ] || { echo \"ids $3 $4 $5 $6\" >&2; exit 2; }\n"
		 "[ \"$(/usr/bin/id -u)\" = 0 ] || { echo 'not root' >&2; exit 2; }\n"
		 "[ -z \"$HOME$SLURM_CONF\" ] || { echo 'environment' >&2; exit 2; }\n"
		 "printf %%s %s >&3\n", before, KEY_HEX);
	write_file(fx->helper, script, 0755);
}

static int start(struct fixture *fx, const char *extra_arg, int *key_fd,
		 struct sn_fabric_key_job *job, char *message, size_t len)
{
	struct sn_job_ids ids = { .uid = 4242, .job_id = 42, .step_id = 7 };

	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, extra_arg), 0);
	message[0] = '\0';
	return sn_step_fabric_auth(&fx->p, &ids, key_fd, job, message, len);
}

static int teardown_auth(void **state)
{
	struct fixture *fx = *state;
	const char *names[] = { "slurm.conf", "slurm.key", "site.key" };
	char path[192];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_in(fx, names[i], path, sizeof(path));
		unlink(path);
	}
	unsetenv("SLURM_CONF");
	return teardown(state);
}

/* auth/munge, no AuthType, an unreadable slurm.conf: MUNGE, no key. */
static void munge_needs_no_key(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512];
	int fd;

	write_derive(fx, "exit 3");
	slurm_conf(fx, "ClusterName=c1\n  authtype=auth/munge # comment\n");
	assert_int_equal(start(fx, NULL, &fd, &job, message, sizeof(message)),
			 0);
	assert_int_equal(fd, -1);
	assert_int_equal(job.pid, -1);
	sn_step_fabric_auth_end(&job, "n1");
	assert_int_equal(mock_spank()->n_errors, 0);

	slurm_conf(fx, "ClusterName=c1\n");
	assert_int_equal(start(fx, NULL, &fd, &job, message, sizeof(message)),
			 0);
	assert_int_equal(fd, -1);

	/* Unreadable: logged under auto, quiet under fabric_auth=munge. */
	setenv("SLURM_CONF", "/nonexistent/slurm.conf", 1);
	assert_int_equal(start(fx, NULL, &fd, &job, message, sizeof(message)),
			 0);
	assert_int_equal(fd, -1);
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"cannot read /nonexistent/slurm.conf: AuthType and ClusterName unknown"));
	assert_int_equal(start(fx, "fabric_auth=munge", &fd, &job, message,
			       sizeof(message)), 0);
	assert_int_equal(fd, -1);
	assert_int_equal(mock_spank()->n_info, 0);
}

/* auth/slurm: the key from slurm.key, derived as root (from the job
 * user's euid, as in user_init), through the pipe. */
static void slurm_auth_derives_the_key(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512], key[256];
	uid_t saved = geteuid();
	int fd, rc;

	if (!need_root(NEEDS_ROOT)) {
		skip();
		return;
	}
	write_derive(fx, "");
	slurm_conf(fx, "AuthType=auth/slurm\nClusterName=c1\n");
	assert_int_equal(seteuid(65534), 0);
	rc = start(fx, NULL, &fd, &job, message, sizeof(message));
	assert_int_equal(seteuid(saved), 0);
	assert_int_equal(rc, 0);
	assert_true(fd >= 0);
	assert_true(job.pid > 0);
	pipe_drain(fd, key, sizeof(key));
	assert_string_equal(key, KEY_HEX);
	sn_step_fabric_auth_end(&job, "n1");
	assert_int_equal(job.pid, -1);
	assert_int_equal(mock_spank()->n_errors, 0);
	/* libcrypto not mapped: the exec path, and nothing loaded. */
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"fabric warmup, job 42 step 7: the step key derived by nccl-warmup --fabric-key-derive (not in slurmstepd: libcrypto.so.3 is not mapped in this process)"));
	assert_null(dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD));
}

/* fabric_key=: the site key instead of slurm.key, whatever AuthType. */
static void fabric_key_overrides_slurm_key(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512], key[256], site[192], arg[256];
	int fd;

	if (!need_root(NEEDS_ROOT)) {
		skip();
		return;
	}
	path_in(fx, "site.key", site, sizeof(site));
	write_file(site, "other secret\n", 0600);
	snprintf(arg, sizeof(arg), "fabric_key=%s", site);
	write_derive(fx, "[ \"$2\" = \"${2%/site.key}/site.key\" ] || "
			 "{ echo \"not the site key: $2\" >&2; exit 2; }");
	slurm_conf(fx, "AuthType=auth/munge\nClusterName=c1\n");
	/* fabric_key= alone: MUNGE still, as AuthType says. */
	assert_int_equal(start(fx, arg, &fd, &job, message, sizeof(message)),
			 0);
	assert_int_equal(fd, -1);
	slurm_conf(fx, "AuthType=auth/slurm\nClusterName=c1\n");
	assert_int_equal(start(fx, arg, &fd, &job, message, sizeof(message)),
			 0);
	assert_true(fd >= 0);
	pipe_drain(fd, key, sizeof(key));
	assert_string_equal(key, KEY_HEX);
	sn_step_fabric_auth_end(&job, "n1");
	assert_int_equal(mock_spank()->n_errors, 0);
}

/* An AuthType neither mechanism serves: the user's one line. */
static void unknown_auth_type_is_told(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512];
	int fd;

	write_derive(fx, "exit 3");
	slurm_conf(fx, "AuthType=auth/jwt\n");
	assert_int_equal(start(fx, NULL, &fd, &job, message, sizeof(message)),
			 -1);
	assert_int_equal(fd, -1);
	assert_int_equal(job.pid, -1);
	assert_contains(message, "cannot authenticate the step's nodes with AuthType=auth/jwt: set fabric_auth=munge");
	/* fabric_auth= chosen: AuthType does not matter. */
	assert_int_equal(start(fx, "fabric_auth=munge", &fd, &job, message,
			       sizeof(message)), 0);
	assert_int_equal(fd, -1);
}

/* fabric_auth=key without the key: the derivation's reason to the log,
 * and the pipe ends empty. */
static void missing_key_is_logged(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512], key[256], path[192];
	int fd;

	if (!need_root(NEEDS_ROOT)) {
		skip();
		return;
	}
	write_derive(fx, "");
	slurm_conf(fx, "AuthType=auth/munge\nClusterName=c1\n");
	path_in(fx, "slurm.key", path, sizeof(path));
	unlink(path);
	assert_int_equal(start(fx, "fabric_auth=key", &fd, &job, message,
			       sizeof(message)), 0);
	assert_true(fd >= 0);
	pipe_drain(fd, key, sizeof(key));
	assert_string_equal(key, "");
	sn_step_fabric_auth_end(&job, "n3");
	assert_int_equal(mock_spank()->n_errors, 1);
	assert_contains(mock_spank()->errors[0],
			"fabric warmup on n3: the step key's derivation failed: ");
	assert_contains(mock_spank()->errors[0], "/slurm.key: No such file");
	assert_not_contains(mock_spank()->errors[0], "\n");
}

/* No descriptor for the derivation's stderr pipe: the user's one line,
 * the key's pipe closed again, nothing to reap. */
static void no_pipe_is_told(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512];
	struct rlimit saved, low;
	int fd, first = dup(0), rc;

	write_derive(fx, "");
	slurm_conf(fx, "AuthType=auth/slurm\nClusterName=c1\n");
	assert_true(first >= 0);
	close(first);
	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, NULL), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	low.rlim_cur = (rlim_t)first + 2;	/* the key's pipe, no more */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	rc = sn_step_fabric_auth(&fx->p,
				 &(struct sn_job_ids){ .job_id = 42 }, &fd,
				 &job, message, sizeof(message));
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	assert_int_equal(rc, -1);
	assert_int_equal(fd, -1);
	assert_int_equal(job.pid, -1);
	assert_string_equal(message, "the fabric warmup cannot start the step key's derivation: Too many open files");
	/* Both ends of the key's pipe closed: the first free one again. */
	fd = dup(0);
	assert_int_equal(fd, first);
	close(fd);
}

/* A derivation that outlives the helper: killed after DERIVE_REAP_MS
 * (2 s) and reaped. */
static void hung_derivation_is_killed(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512];
	pid_t pid;
	int fd;

	if (!need_root(NEEDS_ROOT)) {
		skip();
		return;
	}
	write_derive(fx, "exec /bin/sleep 60");
	slurm_conf(fx, "AuthType=auth/slurm\nClusterName=c1\n");
	assert_int_equal(start(fx, NULL, &fd, &job, message, sizeof(message)),
			 0);
	pid = job.pid;
	assert_true(pid > 0);
	close(fd);
	sn_step_fabric_auth_end(&job, "n2");
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"fabric warmup on n2: the step key's derivation failed: it did not run as root"));
}

/* The known answer of tests/unit/test_step_key.c (c1, 42, 7, 4242). */
#define SITE "spank-nccl test site key, 40 bytes long."
#define SITE_KEY_HEX "e9de2602ff393c4ce481cd50097481b3" \
		     "ddf531d1db950e47d0601407d90ffe7c\n"

/*
 * START with libcrypto mapped (as auth_slurm.so maps it), in user_init's
 * ids (real 0, the job user's effective ones), and slurm.key SITE; no
 * derivation process (a stand-in that writes nothing).
 */
static int start_mapped(struct fixture *fx, bool no_return, int *key_fd,
			struct sn_fabric_key_job *job, char *message,
			size_t len)
{
	struct sn_job_ids ids = { .uid = 4242, .job_id = 42, .step_id = 7 };
	char path[192];

	assert_non_null(dlopen("libcrypto.so.3", RTLD_NOW));
	write_derive(fx, "exit 3");
	slurm_conf(fx, "AuthType=auth/slurm\nClusterName=c1\n");
	path_in(fx, "slurm.key", path, sizeof(path));
	write_file(path, SITE, 0600);
	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, NULL), 0);
	mock_spank()->proc = (struct sn_proc_ids){ .euid = 4242, .egid = 4242 };
	mock_spank()->proc_no_return = no_return;
	message[0] = '\0';
	return sn_step_fabric_auth(&fx->p, &ids, key_fd, job, message, len);
}

/* This process's threads (/proc/self/status). */
static int n_threads(void)
{
	char line[128];
	FILE *f = fopen("/proc/self/status", "r");
	int n = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The lowest free descriptor (as the next pipe would get). */
static int first_free_fd(void)
{
	int fd = dup(0);

	assert_true(fd >= 0);
	close(fd);
	return fd;
}

/*
 * libcrypto mapped: the key derived in slurmstepd by a thread beside the
 * helper's start, the site key read in the privileged section, the
 * helper's pipe as from the exec path; after the end call no thread and
 * no descriptor left.
 */
static void mapped_libcrypto_derives_here(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512], key[256];
	int fd, threads = n_threads(), free_fd = first_free_fd();

	assert_int_equal(start_mapped(fx, false, &fd, &job, message,
				      sizeof(message)), 0);
	assert_int_equal(job.pid, -1);
	assert_non_null(job.thread);
	assert_true(fd >= 0);
	pipe_drain(fd, key, sizeof(key));
	assert_string_equal(key, SITE_KEY_HEX);
	assert_int_equal(mock_spank()->proc_set_calls, 4);
	assert_int_equal(mock_spank()->proc.euid, 4242);
	sn_step_fabric_auth_end(&job, "n1");
	assert_null(job.thread);
	assert_int_equal(mock_spank()->n_errors, 0);
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"fabric warmup, job 42 step 7: the step key derived in slurmstepd (libcrypto mapped) beside the helper's start: "));
	assert_int_equal(n_threads(), threads);
	assert_int_equal(first_free_fd(), free_fd);
}

/*
 * The thread's HKDF fails (an openssl.cnf that leaves only the null
 * provider, read on libcrypto's first use: so in a child, before this
 * process uses it): the pipe closes with no key (the helper fails as
 * fabric_setup), the reason to slurmd's log, no exec path, nothing left.
 */
static void a_failed_derivation_is_reported(void **state)
{
	struct fixture *fx = *state;
	char cnf[192];
	int status;
	pid_t pid;

	path_in(fx, "null.cnf", cnf, sizeof(cnf));
	write_file(cnf, "openssl_conf = init\n[init]\nproviders = prov\n"
			"[prov]\nnull = null_sect\n[null_sect]\nactivate = 1\n",
		   0644);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sn_fabric_key_job job;
		char message[512], key[256];
		int fd, threads, free_fd, rc;

		setenv("OPENSSL_CONF", cnf, 1);
		threads = n_threads();
		free_fd = first_free_fd();
		rc = start_mapped(fx, false, &fd, &job, message,
				  sizeof(message));
		if (rc != 0 || fd < 0 || !job.thread || job.pid != -1)
			_exit(10);
		pipe_drain(fd, key, sizeof(key));
		sn_step_fabric_auth_end(&job, "n4");
		if (key[0] || job.thread || job.pid != -1)
			_exit(11);
		if (mock_spank()->n_errors != 1 ||
		    !strstr(mock_spank()->errors[0],
			    "fabric warmup on n4: the step key's derivation failed: HKDF-SHA256 failed (libcrypto.so.3)"))
			_exit(12);
		if (mock_logged(mock_spank()->info, mock_spank()->n_info,
				"the step key derived"))
			_exit(13);
		_exit(n_threads() == threads && first_free_fd() == free_fd ?
		      0 : 14);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	unlink(cnf);
}

/*
 * The thread never returns (an openssl.cnf whose provider module is a
 * FIFO: libcrypto's first use blocks in its open, in a child as above):
 * the end call returns after DERIVE_REAP_MS, not never, with the reason
 * in slurmd's log and the thread left.  Nothing reaches the pipe.
 */
static void a_stuck_derivation_is_left(void **state)
{
	struct fixture *fx = *state;
	char cnf[192], fifo[192], text[512];
	int status;
	pid_t pid;

	path_in(fx, "stuck.cnf", cnf, sizeof(cnf));
	path_in(fx, "stuck.so", fifo, sizeof(fifo));
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(text, sizeof(text),
		 "openssl_conf = init\n[init]\nproviders = prov\n"
		 "[prov]\nstuck = stuck_sect\n[stuck_sect]\nmodule = %s\n"
		 "activate = 1\n", fifo);
	write_file(cnf, text, 0644);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sn_fabric_key_job job;
		char message[512];
		struct pollfd pfd;
		int fd, threads;
		double t0;

		alarm(30);	/* the old unbounded join: fail, not hang */
		setenv("OPENSSL_CONF", cnf, 1);
		threads = n_threads();
		if (start_mapped(fx, false, &fd, &job, message,
				 sizeof(message)) != 0 || fd < 0 || !job.thread)
			_exit(10);
		t0 = sn_clock_ms();
		sn_step_fabric_auth_end(&job, "n5");
		if (job.thread || sn_clock_ms() - t0 < 1500)
			_exit(11);
		if (mock_spank()->n_errors != 1 ||
		    !strstr(mock_spank()->errors[0],
			    "fabric warmup on n5: the step key's derivation in slurmstepd did not end 2000 ms after the helper (stuck in libcrypto?): left running, no key given"))
			_exit(12);
		/* Stuck, not ended: the thread is still there, the pipe
		 * still open and empty. */
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (n_threads() != threads + 1 || poll(&pfd, 1, 0) != 0)
			_exit(13);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	unlink(cnf);
	unlink(fifo);
}

/* The privileged section not left: no key, no exec path, the step fails. */
static void a_section_not_left_fails_the_step(void **state)
{
	struct fixture *fx = *state;
	struct sn_fabric_key_job job;
	char message[512];
	int fd;

	assert_int_equal(start_mapped(fx, true, &fd, &job, message,
				      sizeof(message)), -1);
	assert_true(job.priv_lost);
	assert_int_equal(fd, -1);
	assert_int_equal(job.pid, -1);
	assert_string_equal(message, "the fabric warmup's step key: slurmstepd could not return to the job user's ids");
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"cannot return to uid 4242 gid 4242 after the fabric warmup's site key"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown_auth)
		T(munge_needs_no_key),
		T(slurm_auth_derives_the_key),
		T(fabric_key_overrides_slurm_key),
		T(unknown_auth_type_is_told),
		T(missing_key_is_logged),
		T(no_pipe_is_told),
		T(hung_derivation_is_killed),
		/* Last: they load libcrypto, which stays; the first loads
		 * it in a child, before this process sets it up. */
		T(a_failed_derivation_is_reported),
		T(a_stuck_derivation_is_left),
		T(mapped_libcrypto_derives_here),
		T(a_section_not_left_fails_the_step),
#undef T
	};

	return cmocka_run_group_tests_name("step_fabric_auth", tests, NULL,
					   NULL);
}
