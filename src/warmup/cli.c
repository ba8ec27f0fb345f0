/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strutil.h"
#include "warmup.h"

/*
 * Names, limits and defaults are the plugin's (core/helper_protocol.h,
 * core/options.h): spank_nccl.so passes plugstack.conf's values through,
 * so both sides must accept exactly the same ones.
 */
void wu_cli_usage(void)
{
	printf("Usage: nccl-warmup [--mode check|comm|bandwidth|fabric] [--timeout SECONDS]\n"
	      "                   [--bytes N[K|M|G]] [--min-busbw GBPS]\n"
	      "                   [--json [--result-fd FD]]\n"
	      "                   [--teardown clean|exit] [--quiet] [--node NAME]\n"
	      "                   [--nccl FILE|DIR] [--nccl-default FILE|DIR]\n"
	      "                   [--job-id ID --step-id ID]\n"
	      "                   [--node-index I --nodes N --nodelist HOSTLIST]\n"
	      "                   [--fabric-ports LO-HI] [--fabric-root ADDR]\n"
	      "                   [--fabric-transport any|no-socket]\n"
	      "                   [--munge-socket PATH] [--fabric-key-fd FD]\n"
	      "                   [--health POLICY] [--health-busy-mib MIB]\n"
	      "                   [--container-pid PID [--container-image NAME]\n"
	      "                    [--container-root-fd FD]]\n"
	      "                   [--health-detail]\n"
	      "       nccl-warmup --limits | --help | --version\n"
	      "\n"
	      "Checks the GPUs this process can see and that NCCL can build a\n"
	      "communicator over them.  Exit status 0 when ready; see nccl-warmup(8).\n"
	      "\n"
	      "  --mode check       enumerate GPUs, check for duplicate PCI bus IDs\n"
	      "  --mode comm        also init one NCCL communicator and verify an\n"
	      "                     all-reduce (default)\n"
	      "  --mode bandwidth   also time an all-reduce of --bytes (1K to 16G,\n"
	      "                     default 64M)\n"
	      "  --mode fabric      comm over every GPU of every node of the step:\n"
	      "                     one communicator, run on each node (needs the\n"
	      "                     step options below); the node at fault is named\n"
	      "  --timeout SECONDS  overall deadline, whole seconds, 1 to %d (default %d)\n"
	      "  --min-busbw GBPS   fail (exit 7) below this bus bandwidth\n"
	      "  --json             print one JSON object on stdout\n"
	      "  --result-fd FD     write that JSON object to the open descriptor\n"
	      "                     FD (3 to 65535) instead of stdout, where NCCL\n"
	      "                     logs when NCCL_DEBUG is set without\n"
	      "                     NCCL_DEBUG_FILE (spank_nccl.so passes a pipe)\n"
	      "  --teardown exit    leave the teardown to process exit (default; faster)\n"
	      "  --teardown clean   destroy the communicators and free memory before\n"
	      "                     exiting\n"
	      "  --quiet            no summary line on success\n"
	      "  --node NAME        node name for messages (default: hostname)\n"
	      "  --nccl FILE|DIR    the NCCL the step named (after one in LD_PRELOAD)\n"
	      "  --nccl-default FILE|DIR\n"
	      "                     the site's NCCL, after LD_LIBRARY_PATH; then the\n"
	      "                     system's libnccl.so.2 (see nccl-warmup(8))\n"
	      "  --job-id ID --step-id ID\n"
	      "                     the Slurm step (SLURM_JOB_ID, SLURM_STEP_ID)\n"
	      "  --node-index I --nodes N --nodelist HOSTLIST\n"
	      "                     this node's index in the step, the step's node\n"
	      "                     count and SLURM_STEP_NODELIST; checked to agree\n"
	      "  --fabric-ports LO-HI\n"
	      "                     TCP ports for coordinating the step's nodes\n"
	      "                     (default 29400-29499)\n"
	      "  --fabric-root ADDR the numeric address where node index 0 listens\n"
	      "                     (default: the first node of --nodelist, resolved)\n"
	      "  --fabric-transport any|no-socket\n"
	      "                     no-socket: NCCL's NET/Socket between the nodes\n"
	      "                     fails the warmup (exit 11; default any)\n"
	      "  --munge-socket PATH\n"
	      "                     munged's socket, which authenticates the step's\n"
	      "                     nodes to each other (default: libmunge's)\n"
	      "  --fabric-key-fd FD the step's key instead of MUNGE (spank_nccl.so\n"
	      "                     derives it as root from slurm.key; docs/security.md)\n"
	      "  --health POLICY    the GPU health checks (NVML): fail, warn or off,\n"
	      "                     and/or CHECK:LEVEL items, e.g. warn,busy:fail\n"
	      "                     (checks: busy row_remap retired_pages ecc\n"
	      "                     persistence compute_mode pcie nvlink clocks)\n"
	      "  --health-busy-mib MIB\n"
	      "                     memory other processes may hold on a GPU before\n"
	      "                     the busy check counts it (default %llu)\n"
	      "  --container-pid PID\n"
	      "                     warm the NCCL of the container process PID\n"
	      "                     runs in (its LD_LIBRARY_PATH, ld.so.conf, library\n"
	      "                     directories, Python's nvidia-nccl-cu* wheel), with\n"
	      "                     its NCCL_* variables, from the host side\n"
	      "  --container-image NAME\n"
	      "                     that container's image, for messages\n"
	      "  --container-root-fd FD\n"
	      "                     an open descriptor of that process's root (its\n"
	      "                     /proc/PID/root, opened by a privileged parent):\n"
	      "                     used instead of /proc/PID/root, and the NCCL_*\n"
	      "                     variables are this program's own, not PID's\n"
	      "  --health-detail    the JSON lists every GPU's NVML readings (default:\n"
	      "                     only GPUs with a finding, so slurmd's log line\n"
	      "                     stays whole)\n"
	      "  --limits           print the limits above and how a supervisor\n"
	      "                     bounds this program, KEY=VALUE lines\n",
	      SN_WARMUP_TIMEOUT_MAX_S, SN_WARMUP_TIMEOUT_DEFAULT_S,
	      (unsigned long long)SN_HEALTH_BUSY_MIB_DEFAULT);
}

/*
 * --limits: what a supervisor of this program needs (nccl-warmup-prolog
 * reads it instead of keeping its own copies): the --timeout range and
 * default, and the slack and kill grace spank_nccl.so gives past it.
 */
static void print_limits(void)
{
	printf("TIMEOUT_MAX_S=%d\n"
	       "TIMEOUT_DEFAULT_S=%d\n"
	       "SLACK_MS=%d\n"
	       "KILL_GRACE_MS=%d\n",
	       SN_WARMUP_TIMEOUT_MAX_S, SN_WARMUP_TIMEOUT_DEFAULT_S,
	       SN_WARMUP_SLACK_MS, SN_WARMUP_KILL_GRACE_MS);
}

static int parse_node(const char *v, struct wu_options *opt, char *err,
		      size_t len)
{
	size_t n = strlen(v);

	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)v[i]) && !strchr("._-", v[i]))
			n = 0;
	}
	if (n == 0 || n > WU_NODE_MAX) {
		snprintf(err, len,
			 "invalid --node '%.80s': 1-%d characters of A-Z a-z 0-9 . _ -",
			 v, WU_NODE_MAX);
		return -1;
	}
	memcpy(opt->node, v, n + 1);
	return 0;
}

static void default_node(struct wu_options *opt)
{
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
		strcpy(host, "unknown");
	host[WU_NODE_MAX] = '\0';
	snprintf(opt->node, sizeof(opt->node), "%s", host);
}

/* A numeric IPv4 or IPv6 address: NCCL_COMM_ID is built from it. */
static int parse_fabric_root(const char *v, struct wu_options *opt,
			     char *err, size_t len)
{
	unsigned char bin[sizeof(struct in6_addr)];

	if (strlen(v) < sizeof(opt->fabric_root) &&
	    (inet_pton(AF_INET, v, bin) == 1 ||
	     inet_pton(AF_INET6, v, bin) == 1)) {
		snprintf(opt->fabric_root, sizeof(opt->fabric_root), "%s", v);
		return 0;
	}
	snprintf(err, len,
		 "invalid --fabric-root '%.80s': give the numeric IPv4 or IPv6 address of the step's first node (e.g. 10.0.0.1)",
		 v);
	return -1;
}

/* An absolute path: the helper runs with the job's working directory. */
static int parse_nccl_path(const char *name, const char *v, char *out,
			   size_t out_len, char *err, size_t err_len)
{
	if (v[0] == '/' && strlen(v) < out_len) {
		snprintf(out, out_len, "%s", v);
		return 0;
	}
	snprintf(err, err_len,
		 "invalid --%s '%.80s': give the absolute path of libnccl.so.2 or of its directory",
		 name, v);
	return -1;
}

static int parse_health(const char *v, struct wu_options *o, char *err,
			size_t len)
{
	struct sn_error why;

	if (sn_health_policy_parse(v, &o->health, &why) == 0)
		return 0;
	snprintf(err, len, "invalid --%s: %s", SN_HELPER_OPT_HEALTH, why.msg);
	return -1;
}

/* A whole decimal number V from LO to HI into OUT: digits only. */
static bool parse_bounded(const char *v, unsigned long long lo,
			  unsigned long long hi, unsigned long long *out)
{
	return sn_parse_u64(v, hi, out) == 0 && *out >= lo;
}

static int parse_container_pid(const char *v, struct wu_options *o,
			       char *err, size_t len)
{
	unsigned long long pid;

	if (parse_bounded(v, 1, 4194304, &pid)) {
		o->container_pid = (pid_t)pid;
		return 0;
	}
	snprintf(err, len,
		 "invalid --container-pid '%.40s': give the process ID of a process in the container (e.g. a task's $$)",
		 v);
	return -1;
}

static int parse_container_root_fd(const char *v, struct wu_options *o,
				   char *err, size_t len)
{
	unsigned long long fd;

	if (parse_bounded(v, 3, 65535, &fd)) {
		o->container_root_fd = (int)fd;
		return 0;
	}
	snprintf(err, len,
		 "invalid --%s '%.40s': give an open descriptor number from 3 to 65535 (spank_nccl.so passes it)",
		 SN_HELPER_OPT_CONTAINER_ROOT_FD, v);
	return -1;
}

/* --result-fd: an open descriptor above stdio, where the JSON goes. */
int wu_cli_result_fd(const char *v, char *err, size_t len)
{
	unsigned long long fd;

	if (parse_bounded(v, 3, 65535, &fd) && fcntl((int)fd, F_GETFD) >= 0)
		return (int)fd;
	snprintf(err, len,
		 "invalid --%s '%.40s': give an open descriptor number from 3 to 65535",
		 SN_HELPER_OPT_RESULT_FD, v);
	return -1;
}

/* One option's value; -1 with ERR set when it is not valid. */
static int parse_value(int opt_char, const char *v, struct wu_options *o,
		       char *err, size_t len)
{
	int rc = 0;

	switch (opt_char) {
	case 'm':
		o->mode = sn_warmup_mode_from_name(v);
		if (o->mode == SN_WARMUP_MODE_UNSET ||
		    o->mode == SN_WARMUP_MODE_OFF) {
			snprintf(err, len,
				 "invalid --mode '%.80s': use check, comm, bandwidth or fabric",
				 v);
			return -1;
		}
		return 0;
	case 't':
		rc = sn_parse_timeout_s(v, &o->timeout_s);
		if (rc < 0)
			snprintf(err, len,
				 "invalid --timeout '%.80s': give whole seconds from 1 to %d",
				 v, SN_WARMUP_TIMEOUT_MAX_S);
		return rc;
	case 'b':
		rc = sn_parse_bytes(v, &o->bytes);
		if (rc < 0)
			snprintf(err, len,
				 "invalid --bytes '%.80s': give N, NK, NM or NG (binary units), from 1K to 16G",
				 v);
		return rc;
	case 'f':
		rc = sn_parse_busbw(v, &o->min_busbw_gbps);
		if (rc < 0)
			snprintf(err, len,
				 "invalid --min-busbw '%.80s': give GB/s from 0 to %.0f, e.g. 100 or 37.5",
				 v, SN_WARMUP_BUSBW_MAX);
		return rc;
	case 'd':
		rc = sn_parse_teardown(v, &o->teardown_exit);
		if (rc < 0)
			snprintf(err, len,
				 "invalid --teardown '%.40s': give clean or exit", v);
		return rc;
	case 'n':
		return parse_node(v, o, err, len);
	case 'R':
		return parse_fabric_root(v, o, err, len);
	case 'T':
		rc = sn_parse_fabric_transport(v, &o->refuse_socket);
		if (rc < 0)
			snprintf(err, len,
				 "invalid --%s '%.40s': give any or no-socket",
				 SN_HELPER_OPT_FABRIC_TRANSPORT, v);
		return rc;
	case 'M':
		if (v[0] != '/' || strlen(v) >= sizeof(o->munge_socket)) {
			snprintf(err, len,
				 "invalid --%s '%.80s': give the absolute path of munged's socket",
				 SN_HELPER_OPT_MUNGE_SOCKET, v);
			return -1;
		}
		snprintf(o->munge_socket, sizeof(o->munge_socket), "%s", v);
		return 0;
	case 'H':
		return parse_health(v, o, err, len);
	case 'B':
		rc = sn_health_parse_busy_mib(v, &o->health.busy_mib);
		if (rc < 0)
			snprintf(err, len,
				 "invalid --%s '%.40s': give whole MiB from 0 to %llu",
				 SN_HELPER_OPT_HEALTH_BUSY_MIB, v,
				 SN_HEALTH_BUSY_MIB_MAX);
		return rc;
	case 'p':
		return parse_container_pid(v, o, err, len);
	case 'r':
		return parse_container_root_fd(v, o, err, len);
	case 'K':
		o->fabric_key_fd = wu_cli_result_fd(v, err, len);
		if (o->fabric_key_fd < 0)
			snprintf(err, len,
				 "invalid --%s '%.40s': give an open descriptor number from 3 to 65535",
				 SN_HELPER_OPT_FABRIC_KEY_FD, v);
		return o->fabric_key_fd < 0 ? -1 : 0;
	case 'o':
		o->result_fd = wu_cli_result_fd(v, err, len);
		return o->result_fd < 0 ? -1 : 0;
	case 'i':
		if (!v[0] || strlen(v) >= sizeof(o->container_image)) {
			snprintf(err, len,
				 "invalid --container-image '%.80s': give the image's name (at most %zu characters)",
				 v, sizeof(o->container_image) - 1);
			return -1;
		}
		snprintf(o->container_image, sizeof(o->container_image), "%s",
			 v);
		return 0;
	case 'N':
		return parse_nccl_path(SN_HELPER_OPT_NCCL, v, o->nccl_user,
				       sizeof(o->nccl_user), err, len);
	case 'D':
		return parse_nccl_path(SN_HELPER_OPT_NCCL_DEFAULT, v,
				       o->nccl_admin, sizeof(o->nccl_admin),
				       err, len);
	}
	return wu_step_parse_value(opt_char, v, &o->step, err, len);
}

static const struct option long_opts[] = {
	{ SN_HELPER_OPT_MODE, required_argument, NULL, 'm' },
	{ SN_HELPER_OPT_TIMEOUT, required_argument, NULL, 't' },
	{ SN_HELPER_OPT_BYTES, required_argument, NULL, 'b' },
	{ SN_HELPER_OPT_MIN_BUSBW, required_argument, NULL, 'f' },
	{ SN_HELPER_OPT_TEARDOWN, required_argument, NULL, 'd' },
	{ SN_HELPER_OPT_NODE, required_argument, NULL, 'n' },
	{ SN_HELPER_OPT_NCCL, required_argument, NULL, 'N' },
	{ SN_HELPER_OPT_NCCL_DEFAULT, required_argument, NULL, 'D' },
	{ SN_HELPER_OPT_JOB_ID, required_argument, NULL, 'J' },
	{ SN_HELPER_OPT_STEP_ID, required_argument, NULL, 'S' },
	{ SN_HELPER_OPT_NODE_INDEX, required_argument, NULL, 'I' },
	{ SN_HELPER_OPT_NODES, required_argument, NULL, 'C' },
	{ SN_HELPER_OPT_NODELIST, required_argument, NULL, 'L' },
	{ SN_HELPER_OPT_FABRIC_PORTS, required_argument, NULL, 'P' },
	{ "fabric-root", required_argument, NULL, 'R' },
	{ SN_HELPER_OPT_FABRIC_TRANSPORT, required_argument, NULL, 'T' },
	{ SN_HELPER_OPT_MUNGE_SOCKET, required_argument, NULL, 'M' },
	{ SN_HELPER_OPT_FABRIC_KEY_FD, required_argument, NULL, 'K' },
	{ SN_HELPER_OPT_HEALTH, required_argument, NULL, 'H' },
	{ SN_HELPER_OPT_HEALTH_BUSY_MIB, required_argument, NULL, 'B' },
	{ SN_HELPER_OPT_CONTAINER_PID, required_argument, NULL, 'p' },
	{ SN_HELPER_OPT_CONTAINER_IMAGE, required_argument, NULL, 'i' },
	{ SN_HELPER_OPT_CONTAINER_ROOT_FD, required_argument, NULL, 'r' },
	{ "health-detail", no_argument, NULL, 'E' },
	{ SN_HELPER_OPT_JSON, no_argument, NULL, 'j' },
	{ SN_HELPER_OPT_RESULT_FD, required_argument, NULL, 'o' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "limits", no_argument, NULL, 'l' },
	{ NULL, 0, NULL, 0 },
};

enum wu_cli_result wu_cli_parse(int argc, char **argv,
				struct wu_options *opt, char *err,
				size_t err_len)
{
	int c;

	memset(opt, 0, sizeof(*opt));
	opt->result_fd = -1;
	opt->fabric_key_fd = -1;
	default_node(opt);
	opt->mode = SN_WARMUP_MODE_COMM;
	opt->timeout_s = SN_WARMUP_TIMEOUT_DEFAULT_S;
	opt->bytes = SN_WARMUP_BYTES_DEFAULT;
	opt->teardown_exit = SN_WARMUP_TEARDOWN_EXIT_DEFAULT;
	wu_step_defaults(&opt->step);
	sn_health_policy_defaults(&opt->health);
	err[0] = '\0';

	/* Our own messages (opterr = 0), in the usage-error line. */
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			wu_cli_usage();
			return WU_CLI_EXIT_OK;
		case 'V':
			printf("nccl-warmup (spank-nccl) %s\n", WU_VERSION);
			return WU_CLI_EXIT_OK;
		case 'l':
			print_limits();
			return WU_CLI_EXIT_OK;
		case 'j':
			opt->json = true;
			break;
		case 'E':
			opt->health_detail = true;
			break;
		case 'q':
			opt->quiet = true;
			break;
		case ':':
			snprintf(err, err_len, "%.40s needs a value",
				 argv[optind - 1]);
			return WU_CLI_USAGE;
		case '?':
			snprintf(err, err_len,
				 "unknown argument '%.80s' (see nccl-warmup --help)",
				 argv[optind - 1]);
			return WU_CLI_USAGE;
		default:
			if (parse_value(c, optarg, opt, err, err_len) < 0)
				return WU_CLI_USAGE;
		}
	}
	if (optind < argc) {
		snprintf(err, err_len,
			 "unknown argument '%.80s' (see nccl-warmup --help)",
			 argv[optind]);
		return WU_CLI_USAGE;
	}
	if (wu_step_check(&opt->step, err, err_len) < 0)
		return WU_CLI_USAGE;
	if (opt->container_image[0] && !opt->container_pid) {
		snprintf(err, err_len,
			 "--container-image names the image of --container-pid: give both");
		return WU_CLI_USAGE;
	}
	if (opt->result_fd >= 0 && !opt->json) {
		snprintf(err, err_len, "--%s is where --json writes: give both",
			 SN_HELPER_OPT_RESULT_FD);
		return WU_CLI_USAGE;
	}
	if (opt->container_root_fd && !opt->container_pid) {
		snprintf(err, err_len,
			 "--%s is the root of --container-pid: give both",
			 SN_HELPER_OPT_CONTAINER_ROOT_FD);
		return WU_CLI_USAGE;
	}
	/* Every node must agree on the step: spank_nccl.so passes it all. */
	if (opt->mode == SN_WARMUP_MODE_FABRIC &&
	    (!opt->step.has_job || !opt->step.has_nodes)) {
		snprintf(err, err_len,
			 "--mode fabric needs the step: --job-id, --step-id, --node-index, --nodes and --nodelist (spank_nccl.so passes them)");
		return WU_CLI_USAGE;
	}
	return WU_CLI_RUN;
}
