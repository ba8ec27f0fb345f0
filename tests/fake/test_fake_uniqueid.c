/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's ncclGetUniqueId without NCCL_COMM_ID (fake_nccl_uid.c),
 * as the fabric warmup uses it: the root's process makes the id, sends
 * its 128 bytes to the other processes (here through pipes), and every
 * process calls ncclCommInitRankConfig(nranks, id, rank).  Checked: the
 * id's layout (NCCL's { u64 magic; sockaddr }), the interface choice
 * (NCCL_SOCKET_IFNAME), the kept listener (CLOEXEC, closed once used),
 * an all-reduce over 3 processes (default interface, loopback, IPv6 when
 * the host has it), a communicator of one process, and rank 0 in a
 * process without the listener failing its init (blocking and not)
 * instead of hanging.  NCCL_COMM_ID's ids keep their old form.
 *
 * Drives the fake libcuda.so.1 and libnccl.so.2 next to this program
 * (tests/fake/cuda, tests/fake/nccl) through test_fake_util.c.  Every
 * wait is a poll against a deadline; an alarm() backs them up.  Exit 0
 * passed, 1 failed, 77 skipped (the fake libraries were not built).
 */
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "test_fake_util.h"

#define ADDR_OFF 8		/* the sockaddr follows the 8-byte magic */

/* The id's address, as a connect() target. */
static socklen_t id_addr(const ncclUniqueId *id, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, id->internal + ADDR_OFF, sizeof(struct sockaddr_in6));
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
					  sizeof(struct sockaddr_in6);
}

/* "ip<port>" of the id, as NCCL writes addresses. */
static const char *id_string(const ncclUniqueId *id, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = id_addr(id, &ss);
	char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";

	getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port,
		    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(buf, len, "%s<%s>", host, port);
	return buf;
}

/* Whether something listens at the id's address (local: no waiting). */
static bool listening(const ncclUniqueId *id)
{
	struct sockaddr_storage ss;
	socklen_t len = id_addr(id, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool up = fd >= 0 && connect(fd, (struct sockaddr *)&ss, len) == 0;

	if (fd >= 0)
		close(fd);
	return up;
}

/* The fd of this process bound to the id's address, or -1. */
static int bound_fd(const ncclUniqueId *id)
{
	struct sockaddr_storage want, got;
	socklen_t len = id_addr(id, &want), got_len;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	while (d && (e = readdir(d)) && found < 0) {
		int fd = atoi(e->d_name);

		got_len = sizeof(got);
		memset(&got, 0, sizeof(got));
		if (e->d_name[0] != '.' && fd != dirfd(d) &&
		    getsockname(fd, (struct sockaddr *)&got, &got_len) == 0 &&
		    got_len == len && memcmp(&got, &want, len) == 0)
			found = fd;
	}
	if (d)
		closedir(d);
	return found;
}

static bool all_zero(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* The first up address getifaddrs lists on an interface not named lo*. */
static bool first_non_lo(struct sockaddr_storage *out)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs) < 0)
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;

		if ((fam != AF_INET && fam != AF_INET6) ||
		    !(i->ifa_flags & IFF_UP) ||
		    strncmp(i->ifa_name, "lo", 2) == 0)
			continue;
		memset(out, 0, sizeof(*out));
		memcpy(out, i->ifa_addr, fam == AF_INET ?
		       sizeof(struct sockaddr_in) :
		       sizeof(struct sockaddr_in6));
		found = true;
	}
	freeifaddrs(ifs);
	return found;
}

/* A unique id under NCCL_SOCKET_IFNAME=IFNAME (NULL: unset). */
static ncclResult_t get_id(const char *ifname, ncclUniqueId *id)
{
	if (ifname)
		setenv("NCCL_SOCKET_IFNAME", ifname, 1);
	else
		unsetenv("NCCL_SOCKET_IFNAME");
	memset(id, 0xa5, sizeof(*id));
	return ft.get_unique_id(id);
}

static void test_layout(void)
{
	ncclUniqueId a, b;
	struct sockaddr_in sa, sb;
	struct sockaddr_storage want, got;
	int fd;

	CHECK(get_id("lo", &a) == ncclSuccess &&
	      get_id("lo", &b) == ncclSuccess,
	      "ncclGetUniqueId: %s", ft.last_error(NULL));
	memcpy(&sa, a.internal + ADDR_OFF, sizeof(sa));
	memcpy(&sb, b.internal + ADDR_OFF, sizeof(sb));
	CHECK(sa.sin_family == AF_INET &&
	      sa.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && sa.sin_port,
	      "not 127.0.0.1:port after the magic");
	CHECK(all_zero(a.internal + ADDR_OFF + sizeof(struct sockaddr_in6),
		       NCCL_UNIQUE_ID_BYTES - ADDR_OFF -
		       sizeof(struct sockaddr_in6)),
	      "bytes past ncclBootstrapHandle are not zero");
	CHECK(memcmp(a.internal, b.internal, 8) != 0 &&
	      sa.sin_port != sb.sin_port,
	      "two ids share their magic or port");
	fd = bound_fd(&a);
	CHECK(fd >= 0, "no socket of this process at the id's address");
	CHECK(fd < 0 || (fcntl(fd, F_GETFD) & FD_CLOEXEC),
	      "the kept listener is not close-on-exec");
	CHECK(listening(&a), "nothing listens at the id's address");

	/* '=' exact, '^' excludes, an unknown name fails as NCCL's does */
	CHECK(get_id("=lo", &a) == ncclSuccess && id_addr(&a, &got) &&
	      got.ss_family == AF_INET, "NCCL_SOCKET_IFNAME==lo");
	CHECK(get_id("=l", &a) == ncclInvalidUsage, "=l matched an interface");
	CHECK(get_id("nosuchif0", &a) == ncclInvalidUsage,
	      "NCCL_SOCKET_IFNAME=nosuchif0 did not fail with ncclInvalidUsage");
	if (first_non_lo(&want)) {
		CHECK(get_id("^lo", &a) == ncclSuccess, "^lo: %s",
		      ft.last_error(NULL));
		id_addr(&a, &got);
		/* the port: at the same offset in v4 and v6 */
		((struct sockaddr_in *)&got)->sin_port = 0;
		CHECK(memcmp(&got, &want, sizeof(got)) == 0,
		      "^lo did not take the first other interface");
	} else {
		CHECK(get_id("^lo", &a) == ncclInvalidUsage,
		      "^lo found an interface getifaddrs does not list");
	}

	/* NCCL_COMM_ID: the old ids, the same in every call, no listener */
	setenv("NCCL_COMM_ID", "127.0.0.1:29999", 1);
	CHECK(ft.get_unique_id(&a) == ncclSuccess &&
	      ft.get_unique_id(&b) == ncclSuccess &&
	      memcmp(&a, &b, sizeof(a)) == 0 && (a.internal[7] & 0x80) &&
	      all_zero(a.internal + 8, NCCL_UNIQUE_ID_BYTES - 8),
	      "NCCL_COMM_ID's ids changed");
	unsetenv("NCCL_COMM_ID");
}

struct ranks {
	int nranks, n, rank[MAX_RANKS];
};

static void child_ranks(const ncclUniqueId *id, void *arg)
{
	struct ranks *r = arg;

	CHECK(ft.init(0) == CUDA_SUCCESS, "cuInit");
	ft_run_ranks(id, r->nranks, r->rank, r->n);
}

/* A unique id under NCCL_SOCKET_FAMILY=FAMILY (NULL: unset) too. */
static ncclResult_t get_id_family(const char *ifname, const char *family,
				  ncclUniqueId *id)
{
	ncclResult_t rc;

	if (family)
		setenv("NCCL_SOCKET_FAMILY", family, 1);
	rc = get_id(ifname, id);
	unsetenv("NCCL_SOCKET_FAMILY");
	return rc;
}

/*
 * Ranks 0 (here, where the id is made), 1-2 and 3 (two children, forked
 * before: like other nodes' processes they share no state with it).
 */
static void test_processes(const char *ifname, const char *family)
{
	struct ranks a = { 4, 2, { 1, 2 } }, b = { 4, 1, { 3 } };
	char addr[NI_MAXHOST + 16];
	int fa, fb, st;
	pid_t pa, pb;
	ncclUniqueId id;
	ncclResult_t rc;

	if (family && get_id_family(ifname, family, &id) == ncclInvalidUsage) {
		printf("SKIP processes %s: no %s interface\n", family, family);
		return;
	}
	pa = ft_spawn(&fa, child_ranks, &a);
	pb = ft_spawn(&fb, child_ranks, &b);
	CHECK(pa > 0 && pb > 0, "fork");
	if (pa <= 0 || pb <= 0)
		return;
	rc = get_id_family(ifname, family, &id);
	CHECK(rc == ncclSuccess, "ncclGetUniqueId: %s", ft.last_error(NULL));
	if (rc != ncclSuccess) {
		close(fa);	/* the children see EOF */
		close(fb);
		ft_reap(pa);
		ft_reap(pb);
		return;
	}
	ft_send_id(fa, &id);
	ft_send_id(fb, &id);
	ft_run_ranks(&id, 4, (int[]){ 0 }, 1);
	st = ft_reap(pa);
	CHECK(st == 0, "ranks 1-2: exit %d", st);
	st = ft_reap(pb);
	CHECK(st == 0, "rank 3: exit %d", st);
	/* everyone came: the root stopped listening, as NCCL's does */
	CHECK(!listening(&id) && bound_fd(&id) < 0,
	      "the root still listens after the rendezvous");
	printf("%s 3 processes at %s (NCCL_SOCKET_IFNAME=%s "
	       "NCCL_SOCKET_FAMILY=%s)\n", ft_failures ? "FAIL" : "ok",
	       id_string(&id, addr, sizeof(addr)), ifname ? ifname : "",
	       family ? family : "");
}

/* Ranks 0-1 here: no rendezvous, and the listener is closed. */
static void test_one_process(void)
{
	ncclUniqueId id;

	CHECK(get_id(NULL, &id) == ncclSuccess, "ncclGetUniqueId: %s",
	      ft.last_error(NULL));
	ft_run_ranks(&id, 2, (int[]){ 0, 1 }, 2);
	CHECK(!listening(&id) && bound_fd(&id) < 0,
	      "a one-process communicator left the root listening");
}

/* Rank 0 of an id another process made: fails, blocking or not. */
static void child_root_elsewhere(const ncclUniqueId *id, void *arg)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclComm_t comm = NULL;
	ncclResult_t rc;

	(void)arg;
	CHECK(ft.init(0) == CUDA_SUCCESS, "cuInit");
	ft_use_device(0);
	config.blocking = 0;
	rc = ft.init_config(&comm, 2, *id, 0, &config);
	CHECK(rc == ncclSuccess || rc == ncclInProgress, "init: %d", rc);
	rc = comm ? ft_wait_comms(&comm, 1) : rc;
	CHECK(rc == ncclInvalidUsage, "non-blocking rank 0 elsewhere: %d", rc);
	CHECK(strstr(ft.last_error(comm), "bootstrap root"),
	      "message: %s", ft.last_error(comm));
	if (comm)
		ft.destroy(comm);
	comm = NULL;
	rc = ft.init_rank(&comm, 2, *id, 0);
	CHECK(rc == ncclInvalidUsage, "blocking rank 0 elsewhere: %d", rc);
	if (comm)
		ft.destroy(comm);
}

static void test_root_elsewhere(void)
{
	ncclUniqueId id;
	int fd, st;
	pid_t pid;

	pid = ft_spawn(&fd, child_root_elsewhere, NULL);
	CHECK(pid > 0, "fork");
	if (pid <= 0)
		return;
	CHECK(get_id("lo", &id) == ncclSuccess, "ncclGetUniqueId");
	ft_send_id(fd, &id);
	st = ft_reap(pid);
	CHECK(st == 0, "rank 0 without the listener: exit %d%s", st,
	      st < 0 ? " (hung)" : "");
	CHECK(listening(&id), "this process's root went away");
}

int main(void)
{
	ft_clean_env();
	if (!ft_load()) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0)
			return 1;
		return 77;
	}
	alarm((unsigned int)DEADLINE_S * 10);
	CHECK(ft.init(0) == CUDA_SUCCESS, "cuInit");
	test_layout();
	printf("%s layout\n", ft_failures ? "FAIL" : "ok");
	test_one_process();
	printf("%s one process\n", ft_failures ? "FAIL" : "ok");
	test_processes(NULL, NULL);
	test_processes("lo", NULL);
	test_processes(NULL, "AF_INET6");
	test_root_elsewhere();
	printf("%s rank 0 without the listener\n",
	       ft_failures ? "FAIL" : "ok");
	return ft_failures ? 1 : 0;
}
