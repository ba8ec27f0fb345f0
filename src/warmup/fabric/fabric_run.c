/* SPDX-License-Identifier: MIT */
/*
 * nccl-warmup --mode fabric: one NCCL communicator over every GPU of
 * every node of the step, run once on each node.
 *
 *   1. the node-local checks of comm mode (GPUs, PCI bus IDs, NCCL,
 *      contexts);
 *   2. join the step's coordination (fabric_coord.h) on node index 0,
 *      authenticated (fabric_auth.h: MUNGE or the step's key), which
 *      hands out the rank base and the root's ncclGetUniqueId (made
 *      once all joined), or names the node at fault;
 *   3. one ncclCommInitRankConfig per local GPU inside one group with
 *      that id (comm.c): NCCL's own bootstrap, with its random magic,
 *      never NCCL_COMM_ID's constant one on a predictable port;
 *   4. the network NCCL chose, from its own INFO log (a private memfd
 *      named by NCCL_DEBUG_FILE), against --fabric-transport;
 *   5. the verified collectives (and the busbw floor) over it;
 *   6. the verdict through the coordination: the node at fault exits with
 *      its own code, every other node with SN_WARMUP_PEER_FAILED naming it.
 *
 * One deadline (--timeout) covers it all: the coordination's waits end
 * there, NCCL's are polled against it (comm.c), the watchdog ends a call
 * that never returns.  The helper is its own process: what it sets in its
 * environment (NCCL_COMM_ID, NCCL_DEBUG*) never reaches the job.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm.h"
#include "fabric_auth.h"
#include "fabric_coord.h"
#include "failed_call.h"
#include "nccl_loader.h"
#include "phases.h"
#include "base/textbuf.h"
#include "warmup.h"

/* What NCCL's log of one init can take; the transport is near its top. */
#define NCCL_LOG_MAX (1 << 20)

struct fabric_run {
	struct fabric_plan plan;
	struct fabric_auth auth;
	struct fabric_coord coord;
	bool joined;		/* coord is open */
	int log_fd;		/* NCCL_DEBUG_FILE's memfd, or -1 */
	double watched_ms;	/* sn_clock_ms() of the last look at the others */
};

/* Node INDEX's name, from the step's node list. */
static void node_name(const struct wu_run *run, unsigned int index, char *out,
		      size_t len)
{
	struct sn_error e;

	if (index == run->opt.step.node_index)
		snprintf(out, len, "%s", run->opt.node);
	else if (sn_hostlist_nth(run->opt.step.nodelist, index, out, len, &e) < 0)
		snprintf(out, len, "index %u", index);
}

/*
 * The step's verdict OUT, for this node whose own result is OWN_CODE:
 * the node at fault keeps its own code and message; every other node
 * fails with SN_WARMUP_PEER_FAILED, its message naming that node.
 */
static int apply_verdict(struct wu_run *run, const struct fabric_outcome *out,
			 int own_code)
{
	struct wu_fabric *f = &run->fabric;
	char name[SN_HOSTNAME_MAX];

	if (!out->status || out->blame == SN_FABRIC_NO_BLAME)
		return own_code;
	node_name(run, out->blame, name, sizeof(name));
	pthread_mutex_lock(&run->lock);
	f->blamed = true;
	f->blame_index = out->blame;
	snprintf(f->blame_node, sizeof(f->blame_node), "%s", name);
	pthread_mutex_unlock(&run->lock);
	if (out->blame == run->opt.step.node_index)
		return own_code && own_code != SN_WARMUP_PEER_FAILED ?
		       own_code : (int)out->status;
	/*
	 * This node's own failure stays its verdict (a check of its own, its
	 * NCCL error, the transport it saw); stopping or timing out while
	 * another node failed is that node's fault.
	 */
	if (own_code && own_code != SN_WARMUP_PEER_FAILED &&
	    own_code != SN_WARMUP_TIMEOUT)
		return own_code;
	/* No coordination at all is not that node's fault either. */
	return wu_fail(run, out->status == SN_WARMUP_FABRIC_SETUP ?
		       SN_WARMUP_FABRIC_SETUP : SN_WARMUP_PEER_FAILED,
		       "fabric warmup: node %s (index %u of %u) %s", name,
		       out->blame, run->opt.step.nodes, out->text);
}

/* comm.c polls this while NCCL runs: has another node failed? */
static int peer_failed(struct wu_run *run)
{
	struct fabric_run *fr = run->fabric.coord;
	struct fabric_outcome out;

	/* Every 2 ms at most: the root looks at every node's socket. */
	if (!fr || !fr->joined || sn_clock_ms() - fr->watched_ms < 2)
		return 0;
	fr->watched_ms = sn_clock_ms();
	if (!fabric_coord_watch(&fr->coord, &out))
		return 0;
	return apply_verdict(run, &out, SN_WARMUP_PEER_FAILED);
}

/* What the job's NCCL_DEBUG shows: NCCL's levels, 3 for INFO and up. */
static int user_level(const char *level)
{
	static const char *const names[] = { "VERSION", "WARN", "INFO",
					     "ABORT", "TRACE" };

	for (size_t i = 0; level && i < sizeof(names) / sizeof(*names); i++)
		if (strcasecmp(level, names[i]) == 0)
			return i < 2 ? (int)i + 1 : 3;
	return 0;	/* unset or NONE: NCCL logs nothing */
}

/*
 * The job's NCCL_DEBUG_FILE as NCCL names it (src/debug.cc): %h the host
 * name up to its first dot, %p the pid, %% a %, any other % as written.
 */
static void expand_file(const char *pattern, char *out, size_t cap)
{
	struct sn_text t = { out, cap, 0, false };
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	out[0] = '\0';
	for (const char *p = pattern; *p; p++) {
		if (*p != '%' || !p[1])
			sn_text_add(&t, "%c", *p);
		else if (*++p == 'h')
			sn_text_add(&t, "%s", host);
		else if (*p == 'p')
			sn_text_add(&t, "%d", (int)getpid());
		else
			sn_text_add(&t, "%s%c", *p == '%' ? "" : "%", *p);
	}
	if (t.full)
		out[0] = '\0';
}

/*
 * NCCL's INFO log, for the transport it chose, into a memfd of this
 * process: NCCL fopen()s NCCL_DEBUG_FILE ("/proc/self/fd/N" reopens the
 * memfd) at its first log line and writes it line-buffered, so nothing
 * reaches the job's stdout/stderr and nothing is left on disk.  INIT,NET
 * keeps it to the lines that say which network (src/init.cc "Using
 * network", src/plugin/net.cc "NET/Plugin: Loaded net plugin").  NCCL
 * reads NCCL_DEBUG at its first log call, after this.  A job that asked
 * for NCCL's log (NCCL_DEBUG) gets its lines at the end where NCCL would
 * have written them (wu_fabric_tell_log): its NCCL_DEBUG_FILE above
 * VERSION (as NCCL), else stdout; the memfd then also takes its
 * subsystems (else NCCL's default ones).
 */
static void log_to_memfd(struct wu_run *run, struct fabric_run *fr)
{
	const char *file = getenv("NCCL_DEBUG_FILE");
	const char *subsys = getenv("NCCL_DEBUG_SUBSYS");
	int level = user_level(getenv("NCCL_DEBUG"));
	char path[64], subsystems[512] = "INIT,NET";

	fr->log_fd = memfd_create("nccl-warmup-nccl-log", MFD_CLOEXEC);
	if (fr->log_fd < 0)
		return;
	/* "^X": all but X; INIT and NET must stay in. */
	if (level && subsys && *subsys && *subsys != '^')
		snprintf(subsystems, sizeof(subsystems), "%.490s,INIT,NET",
			 subsys);
	else if (level && !(subsys && *subsys))
		snprintf(subsystems, sizeof(subsystems),
			 "INIT,BOOTSTRAP,ENV,NET");
	pthread_mutex_lock(&run->lock);
	run->fabric.tell_level = level;
	run->fabric.log_fd = fr->log_fd;
	run->fabric.tell_file[0] = '\0';
	if (level > 1 && file && *file)
		expand_file(file, run->fabric.tell_file,
			    sizeof(run->fabric.tell_file));
	pthread_mutex_unlock(&run->lock);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fr->log_fd);
	setenv("NCCL_DEBUG_FILE", path, 1);
	setenv("NCCL_DEBUG", "INFO", 1);
	setenv("NCCL_DEBUG_SUBSYS", subsystems, 1);
}

/* What stdout takes: the tail the plugin shows (20 lines) and then some;
 * a file takes it all, read this much at a time. */
#define NCCL_LOG_TELL_MAX (64 * 1024)

/* The lines of LOG (LEN bytes, '\0' after) at LEVEL, onto OUT. */
static void tell_lines(FILE *out, int level, char *log, size_t len)
{
	char *line = log, *end = log + len;

	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = (size_t)((nl ? nl + 1 : end) - line);

		*(nl ? nl : end) = '\0';
		/* At WARN or VERSION NCCL writes no INFO lines. */
		if (level == 3 || strstr(line, "NCCL version") ||
		    (level == 2 && strstr(line, " NCCL WARN ")))
			fprintf(out, "%s\n", line);
		line += n;
	}
}

void wu_fabric_tell_log(const struct wu_run *run)
{
	int level = run->fabric.tell_level, fd = -1;
	FILE *out = stdout;
	char *log;
	struct stat st;
	off_t off = 0, size;
	ssize_t n;

	if (!level || fstat(run->fabric.log_fd, &st) < 0 || st.st_size <= 0)
		return;
	size = st.st_size;
	/* As the job's NCCL: its file if it opens, else stdout. */
	if (run->fabric.tell_file[0])
		fd = open(run->fabric.tell_file, O_WRONLY | O_CREAT | O_APPEND |
			  O_CLOEXEC | O_NOCTTY, 0644);
	if (fd >= 0 && !(out = fdopen(fd, "a"))) {
		close(fd);
		out = stdout;
	}
	log = malloc(NCCL_LOG_TELL_MAX + 1);
	if (out == stdout && size > NCCL_LOG_TELL_MAX)
		off = size - NCCL_LOG_TELL_MAX;
	while (log && off < size &&
	       (n = pread(run->fabric.log_fd, log, NCCL_LOG_TELL_MAX, off)) > 0) {
		char *from = log, *to = log + n, *nl;

		/* A cut first line is not NCCL's. */
		if (out == stdout && off > 0 && off == size - NCCL_LOG_TELL_MAX)
			from = (nl = memchr(log, '\n', (size_t)n)) ? nl + 1 : to;
		/* A line across reads: the next read starts with it. */
		if (off + n < size && (nl = memrchr(log, '\n', (size_t)n)))
			to = nl + 1;
		off += to - log;
		*to = '\0';
		tell_lines(out, level, from, (size_t)(to - from));
	}
	free(log);
	if (out != stdout)
		fclose(out);
}

/* The network NCCL chose into run->transport ("" if its log says not). */
static void read_transport(struct wu_run *run, struct fabric_run *fr)
{
	char transport[SN_TRANSPORT_MAX];
	char *log;
	ssize_t n;

	if (fr->log_fd < 0)
		return;
	log = malloc(NCCL_LOG_MAX);
	if (!log)
		return;
	n = pread(fr->log_fd, log, NCCL_LOG_MAX, 0);
	if (n > 0 && sn_nccl_transport(log, (size_t)n, transport,
				       sizeof(transport)) == 0) {
		pthread_mutex_lock(&run->lock);
		snprintf(run->transport, sizeof(run->transport), "%s", transport);
		pthread_mutex_unlock(&run->lock);
	}
	free(log);
}

/* --fabric-transport no-socket: sockets between the nodes fail here. */
static int check_transport(struct wu_run *run)
{
	if (!run->opt.refuse_socket || run->opt.step.nodes < 2)
		return SN_WARMUP_OK;
	if (!run->transport[0]) {
		wu_note(run, "NCCL's log did not name its network: fabric_transport=no-socket not checked");
		return SN_WARMUP_OK;
	}
	if (strcmp(run->transport, "NET/Socket") != 0)
		return SN_WARMUP_OK;
	return wu_fail(run, SN_WARMUP_TRANSPORT,
		       "NCCL chose NET/Socket (TCP) between the nodes, which fabric_transport=no-socket refuses: its InfiniBand/RoCE or net plugin did not load or found no device; check NCCL_NET, NCCL_IB_HCA, NCCL_SOCKET_IFNAME and the net plugin (run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)");
}

/* The node-local checks of comm mode; 0 or the node's own exit code. */
static int local_checks(struct wu_run *run, struct wu_cu *cu,
			struct wu_nccl *nccl)
{
	int code = wu_gpus_enumerate(run, cu);

	if (!code)
		code = wu_gpus_check_duplicates(run);
	/* Before the contexts, as in comm mode: a node failing a health
	 * check is the node at fault (13/14), the others peer_failed. */
	if (!code)
		code = wu_health_nccl_load(run, nccl);
	/* One process cannot use several MIG instances in one communicator
	 * (no peer-to-peer); comm mode notes it, the step's cannot. */
	if (!code && run->n_gpus > 1 && sn_busid_any_mig(run->gpus, run->n_gpus))
		code = wu_fail(run, SN_WARMUP_NCCL_ERROR,
			       "%zu MIG instances in one process: NCCL cannot build a communicator over them (no peer-to-peer between MIG instances); give the step one MIG instance per task, or use --nccl-warmup=check",
			       run->n_gpus);
	if (!code)
		code = wu_gpus_create_contexts(run, cu);
	return code;
}

/* The plan of this node's coordination, from the step options. */
static int make_plan(struct wu_run *run, struct fabric_plan *p)
{
	const struct wu_step *st = &run->opt.step;
	size_t size = (size_t)st->ports.hi - st->ports.lo + 1;
	char first[SN_HOSTNAME_MAX];
	struct sn_error e;

	memset(p, 0, sizeof(*p));
	p->jobid = st->job_id;
	p->stepid = st->step_id;
	p->index = st->node_index;
	p->nodes = st->nodes;
	p->gpus = (uint32_t)run->n_gpus;
	snprintf(p->node, sizeof(p->node), "%s", run->opt.node);
	p->nodelist = st->nodelist;
	p->ports = st->ports;
	/* Candidates for the coordinator, then the NCCL port after it. */
	p->attempts = size < FABRIC_ATTEMPTS_DEFAULT ? (unsigned int)size :
		      FABRIC_ATTEMPTS_DEFAULT;
	p->check_peer_addr = true;
	if (run->opt.fabric_root[0])
		snprintf(p->root_addr, sizeof(p->root_addr), "%s",
			 run->opt.fabric_root);
	else if (sn_hostlist_nth(st->nodelist, 0, first, sizeof(first), &e) < 0 ||
		 fabric_resolve(first, false, p->root_addr, sizeof(p->root_addr),
				&e) < 0)
		return wu_fail(run, SN_WARMUP_INTERNAL,
			       "fabric warmup: %s", e.msg);
	/*
	 * A member connects from the address its own name in the node list
	 * resolves to, the one the root checks; none found: the kernel's.
	 */
	if (st->node_index != 0 &&
	    sn_hostlist_nth(st->nodelist, st->node_index, first, sizeof(first),
			    &e) == 0 &&
	    fabric_resolve(first, fabric_is_loopback(p->root_addr),
			   p->self_addr, sizeof(p->self_addr), &e) < 0)
		p->self_addr[0] = '\0';
	return SN_WARMUP_OK;
}

/*
 * The root's NCCL unique id into OUT (fabric_plan's make_id), made once
 * every node has joined: ncclGetUniqueId opens NCCL's bootstrap root
 * (src/bootstrap.cc, bootstrapCreateRoot) on an ephemeral port that
 * /proc/net/tcp shows to every local user, and NCCL's root stalls on a
 * connection that never sends a byte (docs/security.md).  Made now, it
 * listens only while the members connect, not through the join's wait
 * for the slowest node.  0, or the exit code with TEXT.
 */
static int make_nccl_id(void *ctx, unsigned char *out, char *text,
			size_t len)
{
	struct wu_run *run = ctx;
	ncclUniqueId id;
	ncclResult_t rc;
	int code;

	wu_doing(run, "ncclGetUniqueId");
	rc = run->nc->get_unique_id(&id);
	if (rc != ncclSuccess) {
		code = wu_nccl_fail(run, rc, NULL, "ncclGetUniqueId");
		pthread_mutex_lock(&run->lock);
		snprintf(text, len, "%s", run->message);
		pthread_mutex_unlock(&run->lock);
		return code;
	}
	memcpy(out, id.internal, SN_FABRIC_NCCL_ID_BYTES);
	pthread_mutex_lock(&run->lock);
	memcpy(run->fabric.nccl_id, id.internal, sizeof(run->fabric.nccl_id));
	run->fabric.has_nccl_id = true;
	pthread_mutex_unlock(&run->lock);
	return SN_WARMUP_OK;
}

/* Join; on GO, the ranks and NCCL's id.  0, or the exit code. */
static int join(struct wu_run *run, struct fabric_run *fr, int local)
{
	struct wu_fabric *f = &run->fabric;
	struct fabric_outcome out;
	struct fabric_go go;
	struct sn_error e = { .msg = "" }, ignored;
	int r;

	if (fabric_auth_open(&fr->auth, run->opt.munge_socket,
			     run->opt.fabric_key_fd, &e) < 0)
		return wu_fail(run, SN_WARMUP_FABRIC_SETUP, "fabric warmup: %s",
			       e.msg);
	fr->plan.auth = &fr->auth;
	if (fr->plan.index == 0) {
		fr->plan.make_id = make_nccl_id;
		fr->plan.make_id_ctx = run;
	}
	wu_doing(run, "fabric warmup: joining the step's nodes");
	r = fabric_coord_join(&fr->coord, &fr->plan, (uint32_t)local,
			      local ? run->message : "", NULL, run->deadline,
			      &go, &out, &e);
	fr->joined = true;
	pthread_mutex_lock(&run->lock);
	f->refused = fr->coord.strangers.refused;
	if (!fr->coord.port ||
	    sn_fabric_endpoint(f->coordinator, sizeof(f->coordinator),
			       fr->plan.root_addr, fr->coord.port, &ignored) < 0)
		f->coordinator[0] = '\0';
	pthread_mutex_unlock(&run->lock);
	/* A GO cannot undo this node's own failure. */
	if (r == 0 && local)
		return local;
	if (r != 0) {
		if (local)
			return apply_verdict(run, &out, local);
		if (r < 0 && out.blame == fr->plan.index)
			return wu_fail(run, (int)out.status, "fabric warmup: %s",
				       e.msg);
		return apply_verdict(run, &out, SN_WARMUP_PEER_FAILED);
	}
	pthread_mutex_lock(&run->lock);
	f->nranks = (int)go.nranks;
	f->rank_base = (int)go.rank_base;
	memcpy(f->nccl_id, go.nccl_id, sizeof(f->nccl_id));
	f->has_nccl_id = true;
	if (sn_nccl_id_endpoint(f->nccl_id, sizeof(f->nccl_id), f->comm_id,
				sizeof(f->comm_id)) < 0)
		f->comm_id[0] = '\0';
	pthread_mutex_unlock(&run->lock);
	return SN_WARMUP_OK;
}

/* After the init, whatever its CODE: the network NCCL chose, checked. */
static int transport(struct wu_run *run, int code, void *fr)
{
	read_transport(run, fr);
	return code ? code : check_transport(run);
}

/* Init, transport, collectives, floor: this node's own result. */
static int run_nccl(struct wu_run *run, struct fabric_run *fr,
		    struct wu_comm *comm)
{
	return wu_run_nccl(run, comm, run->opt.min_busbw_gbps > 0, transport,
			   fr);
}

int wu_fabric_run(struct wu_run *run, struct wu_cu *cu)
{
	struct fabric_run fr = { .log_fd = -1 };
	struct fabric_outcome out;
	struct wu_comm comm;
	struct wu_nccl nccl;
	struct sn_error e = { .msg = "" };
	int code, local;

	pthread_mutex_lock(&run->lock);
	run->fabric.active = true;
	run->fabric.coord = &fr;
	pthread_mutex_unlock(&run->lock);
	/* setenv() before any other thread: NVML's call getenv(), and a
	 * concurrent setenv may move the environment under them (a fabric
	 * member died of SIGSEGV so, once in CI). */
	log_to_memfd(run, &fr);
	local = local_checks(run, cu, &nccl);
	/* One node: comm over its GPUs, nothing to coordinate. */
	if (run->opt.step.nodes == 1) {
		if (local)
			return local;
		pthread_mutex_lock(&run->lock);
		run->fabric.nranks = (int)run->n_gpus;
		pthread_mutex_unlock(&run->lock);
		wu_comm_local_only();
		code = run_nccl(run, &fr, &comm);
		return wu_comm_end(run, &comm, code);
	}
	code = make_plan(run, &fr.plan);
	if (code)
		return code;
	code = join(run, &fr, local);
	if (code) {
		fabric_coord_close(&fr.coord);
		fabric_auth_close(&fr.auth);
		return code;
	}
	run->fabric.peer_failed = peer_failed;
	code = run_nccl(run, &fr, &comm);
	run->fabric.peer_failed = NULL;
	/*
	 * The verdict before the teardown: a node that failed reports it
	 * while the others may still wait in NCCL for it, and they stop at
	 * once (fabric_coord_watch) instead of at the deadline.
	 */
	wu_doing(run, "fabric warmup: the step's verdict");
	if (fabric_coord_finish(&fr.coord, (uint32_t)code,
				run->busbw_measured ? run->busbw_gbps : 0,
				code ? run->message : "",
				run->deadline, &out, &e) < 0) {
		if (!code)
			code = wu_fail(run, SN_WARMUP_TIMEOUT,
				       "fabric warmup: %s", e.msg);
	} else {
		code = apply_verdict(run, &out, code);
	}
	pthread_mutex_lock(&run->lock);
	run->fabric.refused = fr.coord.strangers.refused;
	pthread_mutex_unlock(&run->lock);
	fabric_coord_close(&fr.coord);
	fabric_auth_close(&fr.auth);
	fr.joined = false;
	return wu_comm_end(run, &comm, code);
}
