/* SPDX-License-Identifier: MIT */
/* Warmup reuse (src/core/fleet/reuse.c): the key, the record, the checks. */
#include "core_testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fleet/reuse.h"

static struct sn_reuse_inputs inputs(char *const *envp)
{
	struct sn_reuse_inputs in = {
		.node = "n1",
		.gpus = "2,3",
		.visible = "0,1",
		.helper = "/usr/libexec/nccl-warmup",
		.envp = envp,
	};

	return in;
}

static void test_key_text_and_order(void **state)
{
	char *env[] = { "NCCL_SOCKET_IFNAME=eth0", "HOME=/root",
			"LD_LIBRARY_PATH=/opt/nccl/lib", "NCCL_ALGO=Ring",
			"NCCL_=x", "NCCL", "PATH=/bin", "CUDA_DEVICE_ORDER=PCI_BUS_ID",
			"LD_PRELOAD=", "FAKE_X=1",
			"NCCL_RAS_ADDR=127.0.0.1:28101", NULL };
	struct sn_reuse_inputs in = inputs(env);
	struct sn_reuse_key k;
	struct sn_error err = { "" };

	assert_int_equal(sn_reuse_key_build(&k, &in, &err), 0);
	assert_string_equal(k.text,
		"node=n1\ngpus=2,3\nvisible=0,1\nhelper=/usr/libexec/nccl-warmup\n"
		"nccl=\nnccl_default=\n"
		"env:CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
		"env:LD_LIBRARY_PATH=/opt/nccl/lib\n"
		"env:LD_PRELOAD=\n"
		"env:NCCL_ALGO=Ring\n"
		"env:NCCL_SOCKET_IFNAME=eth0\n");
	assert_int_equal(k.len, strlen(k.text));
	assert_int_equal(strlen(k.name), 16);
	assert_int_equal(strspn(k.name, "0123456789abcdef"), 16);
	sn_reuse_key_free(&k);
	assert_null(k.text);
}

static void test_key_changes_with_each_input(void **state)
{
	char *env[] = { "NCCL_ALGO=Ring", NULL };
	char *env2[] = { "NCCL_ALGO=Tree", NULL };
	char *env3[] = { "NCCL_ALGO=Ring", "NCCL_PROTO=LL", NULL };
	char *env4[] = { "NCCL_ALGO=Ring", "LD_PRELOAD=/x/libnccl.so", NULL };
	char *env5[] = { "NCCL_ALGO=Ring",
			 "SPANK_NCCL_CONTAINER_LD_LIBRARY_PATH=/usr/lib", NULL };
	char *env_same[] = { "OTHER=1", "NCCL_ALGO=Ring", NULL };
	struct sn_reuse_inputs base = inputs(env), in;
	struct sn_reuse_key a, a2, b;
	struct sn_error err;
	int i;

	assert_int_equal(sn_reuse_key_build(&a, &base, &err), 0);
	for (i = 0; i < 13; i++) {
		in = base;
		switch (i) {
		case 0: in.node = "n2"; break;
		case 1: in.gpus = "0,1"; break;
		case 2: in.visible = "0"; break;
		case 3: in.helper = "/opt/nccl-warmup"; break;
		case 4: in.envp = env2; break;
		case 5: in.envp = env3; break;
		case 6: in.envp = env4; break;
		case 7: in.envp = NULL; break;
		case 8: in.nccl = "/opt/venv/nccl/lib"; break;
		case 9: in.nccl_default = "/opt/nccl/lib"; break;
		/* A container step: its image, the image's library path. */
		case 10: in.image = "./ok.sqsh"; break;
		case 11: in.image = ""; break;
		case 12: in.envp = env5; break;
		}
		assert_int_equal(sn_reuse_key_build(&b, &in, &err), 0);
		if (strcmp(a.text, b.text) == 0 || strcmp(a.name, b.name) == 0)
			fail_msg("input %d did not change the key", i);
		sn_reuse_key_free(&b);
	}
	/* Two images: two keys. */
	in = base;
	in.image = "./a.sqsh";
	assert_int_equal(sn_reuse_key_build(&b, &in, &err), 0);
	in.image = "./b.sqsh";
	assert_int_equal(sn_reuse_key_build(&a2, &in, &err), 0);
	assert_string_not_equal(b.text, a2.text);
	assert_non_null(strstr(b.text, "\nimage=./a.sqsh\n"));
	sn_reuse_key_free(&a2);
	sn_reuse_key_free(&b);
	/* Variables outside the key change nothing. */
	in = base;
	in.envp = env_same;
	assert_int_equal(sn_reuse_key_build(&b, &in, &err), 0);
	assert_string_equal(a.text, b.text);
	assert_string_equal(a.name, b.name);
	sn_reuse_key_free(&b);
	sn_reuse_key_free(&a);
}

static void test_key_escapes_newlines(void **state)
{
	/* A value cannot forge another key line. */
	char *env[] = { "NCCL_X=a\nenv:NCCL_Y=b", "NCCL_Z=c\\d", NULL };
	char *env2[] = { "NCCL_X=a", "NCCL_Y=b", "NCCL_Z=c\\d", NULL };
	struct sn_reuse_inputs in = inputs(env);
	struct sn_reuse_key a, b;
	struct sn_error err;

	assert_int_equal(sn_reuse_key_build(&a, &in, &err), 0);
	assert_contains(a.text, "env:NCCL_X=a\\nenv:NCCL_Y=b\n");
	assert_contains(a.text, "env:NCCL_Z=c\\\\d\n");
	in.envp = env2;
	assert_int_equal(sn_reuse_key_build(&b, &in, &err), 0);
	assert_string_not_equal(a.text, b.text);
	sn_reuse_key_free(&a);
	sn_reuse_key_free(&b);
}

static struct sn_reuse_record record(const char *key)
{
	struct sn_reuse_record r = {
		.job_id = 4242,
		.uid = 1000,
		.step_id = 0xfffffffb,
		.mode = SN_WARMUP_MODE_COMM,
		.elapsed_ms = 1234,
		.key = key,
		.key_len = strlen(key),
	};

	return r;
}

static void test_record_round_trip(void **state)
{
	const char *key = "node=n1\ngpus=0,1\n";
	struct sn_reuse_record r = record(key), back;
	struct sn_error err = { "" };
	char *buf;
	size_t len;

	r.mode = SN_WARMUP_MODE_BANDWIDTH;
	r.bytes = 64UL << 20;
	r.min_busbw = 37.5;
	assert_int_equal(sn_reuse_record_format(&r, &buf, &len), 0);
	assert_int_equal(strlen(buf), len);
	assert_true(strncmp(buf, SN_REUSE_MAGIC "\njob=4242\nuid=1000\n", 35) == 0);
	if (sn_reuse_record_parse(buf, len, &back, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(back.job_id, 4242);
	assert_int_equal(back.uid, 1000);
	assert_int_equal(back.step_id, 0xfffffffb);
	assert_int_equal(back.mode, SN_WARMUP_MODE_BANDWIDTH);
	assert_int_equal(back.bytes, 64UL << 20);
	assert_true(back.min_busbw == 37.5);
	assert_true(back.elapsed_ms == 1234);
	assert_int_equal(back.key_len, strlen(key));
	assert_memory_equal(back.key, key, back.key_len);
	assert_int_equal(sn_reuse_record_usable(&back, &r, &err), 0);
	free(buf);
}

static void test_record_parse_refuses(void **state)
{
	static const struct {
		const char *text;
		const char *why;
	} cases[] = {
		{ "", "first line" },
		{ "spank-nccl warmup pass 2\n", "first line" },
		{ SN_REUSE_MAGIC "\n", "\"job\"" },
		{ SN_REUSE_MAGIC "\njob=x\n", "\"job\"" },
		{ SN_REUSE_MAGIC "\njob=-1\n", "\"job\"" },
		{ SN_REUSE_MAGIC "\njob=4294967296\n", "\"job\"" },
		{ SN_REUSE_MAGIC "\nuid=1\njob=1\n", "\"job\"" },
		{ SN_REUSE_MAGIC "\njob=1\nuid=1\nstep=0\nmode=off\n", "\"mode\"" },
		{ SN_REUSE_MAGIC "\njob=1\nuid=1\nstep=0\nmode=fast\n", "\"mode\"" },
		{ SN_REUSE_MAGIC "\njob=1\nuid=1\nstep=0\nmode=comm\nbytes=0\nmin_busbw=nan\n", "\"min_busbw\"" },
		{ SN_REUSE_MAGIC "\njob=1\nuid=1\nstep=0\nmode=comm\nbytes=0\nmin_busbw=0\nelapsed_ms=1\nkey_len=3\nab", "header says 3" },
		{ SN_REUSE_MAGIC "\njob=1\nuid=1\nstep=0\nmode=comm\nbytes=0\nmin_busbw=0\nelapsed_ms=1\nkey_len=1\nab", "header says 1" },
		{ SN_REUSE_MAGIC "\njob=1\nuid=1\nstep=0\nmode=comm\nbytes=0\nmin_busbw=0\nelapsed_ms=1\nkey_len=99999999\n", "\"key_len\"" },
	};
	struct sn_reuse_record r;
	struct sn_error err;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err.msg[0] = '\0';
		if (sn_reuse_record_parse(cases[i].text, strlen(cases[i].text),
					  &r, &err) != -1)
			fail_msg("accepted case %zu", i);
		assert_contains(err.msg, cases[i].why);
	}
}

static void test_record_usable(void **state)
{
	struct sn_reuse_record have = record("K1\n"), want = record("K1\n");
	struct sn_error err;

	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), 0);
	want.job_id = 4243;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	assert_contains(err.msg, "job 4242");
	want = record("K1\n");
	want.uid = 0;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	assert_contains(err.msg, "uid 1000");
	want = record("K2\n");
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	assert_contains(err.msg, "different node, GPUs");
	want = record("K1\nmore");
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	/* A comm pass covers check, not bandwidth. */
	want = record("K1\n");
	want.mode = SN_WARMUP_MODE_CHECK;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), 0);
	want.mode = SN_WARMUP_MODE_BANDWIDTH;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	assert_contains(err.msg, "comm mode passed, bandwidth asked for");
	/* Bandwidth needs the same size and floor. */
	have.mode = SN_WARMUP_MODE_BANDWIDTH;
	have.bytes = want.bytes = 1024;
	have.min_busbw = want.min_busbw = 10;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), 0);
	want.min_busbw = 20;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	assert_contains(err.msg, "warmup_min_busbw");
	want.min_busbw = 10;
	want.bytes = 2048;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	want.mode = SN_WARMUP_MODE_COMM;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), 0);

	assert_true(sn_reuse_mode_covers(SN_WARMUP_MODE_BANDWIDTH, SN_WARMUP_MODE_CHECK));
	assert_false(sn_reuse_mode_covers(SN_WARMUP_MODE_CHECK, SN_WARMUP_MODE_COMM));
	assert_false(sn_reuse_mode_covers(SN_WARMUP_MODE_OFF, SN_WARMUP_MODE_OFF));
	assert_false(sn_reuse_mode_covers(SN_WARMUP_MODE_COMM, SN_WARMUP_MODE_UNSET));
	/* A fabric pass is never reused, and nothing stands in for one. */
	for (int m = SN_WARMUP_MODE_OFF; m <= SN_WARMUP_MODE_FABRIC; m++) {
		assert_false(sn_reuse_mode_covers(SN_WARMUP_MODE_FABRIC, m));
		assert_false(sn_reuse_mode_covers(m, SN_WARMUP_MODE_FABRIC));
	}
	have.mode = SN_WARMUP_MODE_FABRIC;
	want.mode = SN_WARMUP_MODE_CHECK;
	assert_int_equal(sn_reuse_record_usable(&have, &want, &err), -1);
	assert_contains(err.msg, "fabric mode passed, check asked for");
}

static void test_stat_trusted(void **state)
{
	struct stat st;
	struct sn_error err;

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR | 0700;
	st.st_nlink = 2;
	assert_int_equal(sn_reuse_stat_trusted(&st, true, &err), 0);
	assert_int_equal(sn_reuse_stat_trusted(&st, false, &err), -1);
	assert_contains(err.msg, "not a regular file");
	st.st_mode = S_IFDIR | 0755;
	assert_int_equal(sn_reuse_stat_trusted(&st, true, &err), -1);
	assert_contains(err.msg, "mode 0755");
	st.st_mode = S_IFDIR | 0700;
	st.st_uid = 1000;
	assert_int_equal(sn_reuse_stat_trusted(&st, true, &err), -1);
	assert_contains(err.msg, "owned by uid 1000");

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFREG | 0600;
	st.st_nlink = 1;
	assert_int_equal(sn_reuse_stat_trusted(&st, false, &err), 0);
	st.st_nlink = 2;	/* a hard link the user made to a root file */
	assert_int_equal(sn_reuse_stat_trusted(&st, false, &err), -1);
	assert_contains(err.msg, "2 hard links");
	st.st_nlink = 1;
	st.st_mode = S_IFREG | 0640;
	assert_int_equal(sn_reuse_stat_trusted(&st, false, &err), -1);
	st.st_mode = S_IFLNK | 0600;
	assert_int_equal(sn_reuse_stat_trusted(&st, false, &err), -1);
	st.st_mode = S_IFIFO | 0600;
	assert_int_equal(sn_reuse_stat_trusted(&st, false, &err), -1);
}

static void test_job_dir_names(void **state)
{
	char buf[32];
	uint32_t job = 0;

	sn_reuse_job_dir_name(buf, sizeof(buf), 4294967295U);
	assert_string_equal(buf, "job-4294967295");
	assert_true(sn_reuse_job_dir_parse(buf, &job));
	assert_int_equal(job, 4294967295U);
	assert_true(sn_reuse_job_dir_parse("job-7", &job));
	assert_int_equal(job, 7);
	assert_false(sn_reuse_job_dir_parse("job-", &job));
	assert_false(sn_reuse_job_dir_parse("job-07", &job));
	assert_false(sn_reuse_job_dir_parse("job-0", &job));
	assert_false(sn_reuse_job_dir_parse("job-4294967296", &job));
	assert_false(sn_reuse_job_dir_parse("job-1x", &job));
	assert_false(sn_reuse_job_dir_parse("job--1", &job));
	assert_false(sn_reuse_job_dir_parse(".job-1.123", &job));
	assert_false(sn_reuse_job_dir_parse("x", &job));
}

/* ---- sn_reuse_job_alive: a forged title is not a slurmstepd ---------- */

#define NOBODY 65534

static char proc_root[] = "/tmp/sn-test-proc-XXXXXX";

static void put(const char *dir, const char *name, const char *text,
		size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* A fake PROC/PID: TITLE (NUL-ended as cmdline is), real uid, exe link. */
static void fake_process(const char *pid, const char *title, long ruid,
			 const char *exe)
{
	char dir[128], status[256], link[160];

	snprintf(dir, sizeof(dir), "%s/%s", proc_root, pid);
	assert_int_equal(mkdir(dir, 0755), 0);
	put(dir, "cmdline", title, strlen(title) + 1);
	snprintf(status, sizeof(status),
		 "Name:\tslurmstepd\nUmask:\t0022\nState:\tS (sleeping)\n"
		 "Tgid:\t%s\nPid:\t%s\nPPid:\t1\nTracerPid:\t0\n"
		 "Uid:\t%ld\t0\t0\t0\nGid:\t0\t0\t0\t0\n", pid, pid, ruid);
	put(dir, "status", status, strlen(status));
	snprintf(link, sizeof(link), "%s/exe", dir);
	assert_int_equal(symlink(exe, link), 0);
}

static void test_job_alive_fake_proc(void **state)
{
	static const char stepd[] = "/usr/sbin/slurmstepd-wlm";
	char self[128], cmd[128];

	assert_non_null(mkdtemp(proc_root));
	/* Nothing to compare with: cannot tell, the records stay. */
	assert_true(sn_reuse_job_alive("/nonexistent/proc", 42));
	assert_true(sn_reuse_job_alive(proc_root, 42));
	snprintf(self, sizeof(self), "%s/self", proc_root);
	assert_int_equal(mkdir(self, 0755), 0);
	snprintf(self, sizeof(self), "%s/self/exe", proc_root);
	assert_int_equal(symlink(stepd, self), 0);
	assert_false(sn_reuse_job_alive(proc_root, 42));

	/* Job 42: its title on a user's process (exec -a, prctl, argv). */
	fake_process("100", "slurmstepd: [42.0]", 1000, stepd);
	/* ... on a setuid-root program: effective 0, real the user's. */
	fake_process("101", "slurmstepd: [42.1]", 1000, "/usr/bin/passwd");
	/* Job 43: a root program, not slurmstepd, with its title. */
	fake_process("102", "slurmstepd: [43.0]", 0, "/usr/bin/su");
	/* Job 44: slurmstepd itself; 45: of a het job; 46: upgraded under
	 * it; 48: only job 480 runs. */
	fake_process("103", "slurmstepd: [44.0]", 0, stepd);
	fake_process("104", "slurmstepd: [45+1.0]", 0, stepd);
	fake_process("105", "slurmstepd: [46.batch]", 0,
		     "/usr/sbin/slurmstepd-wlm (deleted)");
	fake_process("106", "slurmstepd: [480.0]", 0, stepd);
	/* Kernel threads and the like: no exe, no title. */
	fake_process("107", "", 0, "/nonexistent");
	assert_false(sn_reuse_job_alive(proc_root, 42));
	assert_false(sn_reuse_job_alive(proc_root, 43));
	assert_true(sn_reuse_job_alive(proc_root, 44));
	assert_true(sn_reuse_job_alive(proc_root, 45));
	assert_true(sn_reuse_job_alive(proc_root, 46));
	assert_false(sn_reuse_job_alive(proc_root, 48));
	assert_true(sn_reuse_job_alive(proc_root, 480));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc_root);
	assert_int_equal(system(cmd), 0);
}

/* The real uid the kernel shows (not fakeroot's getuid()); -1: unknown. */
static long kernel_real_uid(void)
{
	char text[2048], *uid;
	FILE *f = fopen("/proc/self/status", "r");
	size_t n;
	long u = -1;

	if (!f)
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	uid = strstr(text, "\nUid:");
	if (!uid || sscanf(uid + 5, "%ld", &u) != 1)
		return -1;
	return u;
}

struct child {
	pid_t pid;
	int hold;	/* its stdin: it exits when this is closed */
};

/*
 * Starts PROG under the title TITLE (argv[0]), with ARG (or none), as uid
 * UID (-1: ours).  False if it could not run so (e.g. nobody cannot).
 */
static bool start_titled(const char *prog, const char *title,
			 const char *arg, long uid, struct child *c)
{
	int in[2], ready[2], e = 0;

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(in[0], 0);
		close(in[1]);
		/* Really that uid: fakeroot only pretends. */
		if (uid >= 0 && (setgroups(0, NULL) ||
				 setresgid(uid, uid, uid) ||
				 setresuid(uid, uid, uid) ||
				 kernel_real_uid() != uid)) {
			e = EPERM;
			(void)!write(ready[1], &e, sizeof(e));
			_exit(2);
		}
		execl(prog, title, arg, (char *)NULL);
		e = errno;
		(void)!write(ready[1], &e, sizeof(e));
		_exit(127);
	}
	close(in[0]);
	close(ready[1]);
	c->hold = in[1];
	/* EOF once execl() succeeded (O_CLOEXEC); errno if it failed. */
	if (read(ready[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
		close(ready[0]);
		close(c->hold);
		waitpid(c->pid, NULL, 0);
		return false;
	}
	close(ready[0]);
	return true;
}

static void stop_child(struct child *c)
{
	int status;

	close(c->hold);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
}

/*
 * Real processes in the real /proc.  A forged title on another program
 * never counts.  This very test binary under a slurmstepd title counts
 * only as root (real uid 0), as slurmstepd would; as nobody it does not.
 */
static void test_job_alive_real_proc(void **state)
{
	char self[4096];
	ssize_t n;
	struct child c;

	/* This binary's path (valgrind answers this one with the program). */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';

	/* Job ids no test cluster reaches. */
	assert_true(start_titled("/bin/cat", "slurmstepd: [3999999001.0]",
				 NULL, -1, &c));
	assert_false(sn_reuse_job_alive("/proc", 3999999001U));
	stop_child(&c);
	assert_true(start_titled(self, "slurmstepd: [3999999002.0]", "--hold",
				 -1, &c));
	assert_int_equal(sn_reuse_job_alive("/proc", 3999999002U),
			 kernel_real_uid() == 0);
	stop_child(&c);
	assert_false(sn_reuse_job_alive("/proc", 3999999002U));
	if (geteuid() != 0)
		return;
	if (!start_titled(self, "slurmstepd: [3999999003.0]", "--hold", NOBODY,
			  &c)) {
		print_message("  not runnable as nobody: case skipped\n");
		return;
	}
	assert_false(sn_reuse_job_alive("/proc", 3999999003U));
	stop_child(&c);
}

int main(int argc, char **argv)
{
	/* start_titled()'s child: wait for stdin's EOF, as slurmstepd waits. */
	if (argc == 2 && strcmp(argv[1], "--hold") == 0) {
		char b;

		while (read(0, &b, 1) > 0)
			;
		return 0;
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_text_and_order),
		cmocka_unit_test(test_key_changes_with_each_input),
		cmocka_unit_test(test_key_escapes_newlines),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_parse_refuses),
		cmocka_unit_test(test_record_usable),
		cmocka_unit_test(test_stat_trusted),
		cmocka_unit_test(test_job_dir_names),
		cmocka_unit_test(test_job_alive_fake_proc),
		cmocka_unit_test(test_job_alive_real_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
