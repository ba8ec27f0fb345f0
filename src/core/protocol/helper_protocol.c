/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "protocol/helper_protocol.h"
#include "base/strutil.h"

const struct sn_warmup_exit_info sn_warmup_exits[] = {
	{ SN_WARMUP_OK, "ok", "ok",
	  "the GPUs and NCCL are ready" },
	{ SN_WARMUP_USAGE, "usage", "usage error",
	  "the warmup helper was called with bad arguments: check warmup_* in plugstack.conf and --nccl-warmup" },
	{ SN_WARMUP_NO_GPUS, "no_gpus", "no visible GPU",
	  "the step sees no GPU: request GPUs (--gres=gpu:N or --gpus) or run without --nccl-warmup" },
	{ SN_WARMUP_DUPLICATE_BUSID, "duplicate_busid", "duplicate PCI bus ID",
	  "two GPUs report the same PCI bus ID (a driver or firmware fault): drain the node and report it to your admins" },
	{ SN_WARMUP_CUDA_ERROR, "cuda_error", "CUDA failure",
	  "the node's CUDA driver failed: report the node to your admins (nvidia-smi, dmesg for Xid errors)" },
	{ SN_WARMUP_NCCL_ERROR, "nccl_error", "NCCL failure",
	  "NCCL could not build a communicator on this node: check NVLink and the fabric manager; report the node if it persists" },
	{ SN_WARMUP_WRONG_RESULT, "wrong_result", "wrong all-reduce result",
	  "an all-reduce returned wrong data (silent data corruption): drain the node and report it to your admins" },
	{ SN_WARMUP_LOW_BANDWIDTH, "low_bandwidth", "bus bandwidth below the floor",
	  "GPU-to-GPU bandwidth is below the site floor: check NVLink (nvidia-smi nvlink -s) and other jobs on the GPUs, and report the node" },
	{ SN_WARMUP_TIMEOUT, "timeout", "timeout",
	  "NCCL initialisation did not finish in time: check for stuck GPU processes (nvidia-smi) and NVLink/fabric manager health" },
	{ SN_WARMUP_INTERNAL, "internal", "internal error",
	  "the warmup helper failed internally (out of memory or I/O error): retry, and report it if it persists" },
	{ SN_WARMUP_PEER_FAILED, "peer_failed", "another node of the step failed",
	  "another node of the step failed (named above): resubmit without it (--exclude=NODE) and report that node to your admins" },
	{ SN_WARMUP_TRANSPORT, "transport", "NCCL network transport refused",
	  "NCCL fell back to a network the site forbids (usually TCP): check NCCL_SOCKET_IFNAME, NCCL_IB_HCA, NCCL_NET and the IB ports" },
	{ SN_WARMUP_FABRIC_SETUP, "fabric_setup", "fabric coordination unavailable",
	  "the step's nodes could not coordinate (fabric ports taken, or MUNGE down), not a GPU fault: resubmit; ask your admins if it persists" },
	{ SN_WARMUP_GPU_HEALTH, "gpu_health", "GPU health check failed",
	  "NVML reports a fault of the node's GPU (the check is named above): the node needs its admins (drain it); policy: health=" },
	{ SN_WARMUP_GPU_BUSY, "gpu_busy", "GPU held by another process",
	  "another process (named above, often an earlier job's) holds the GPU's memory: the node's admins must end it (health_busy_mib=)" },
	{ SN_WARMUP_CONTAINER_NCCL, "container_nccl", "container image's NCCL missing or broken",
	  "the image (named above) has no usable NCCL where its tasks look: fix the image or use --nccl-warmup=check; this is the image's fault, not a fault of the node" },
};

const size_t sn_warmup_n_exits =
	sizeof(sn_warmup_exits) / sizeof(sn_warmup_exits[0]);

static const struct sn_warmup_exit_info *exit_info(int exit_code)
{
	if (exit_code < 0 || (size_t)exit_code >= sn_warmup_n_exits)
		return NULL;
	return &sn_warmup_exits[exit_code];
}

const char *sn_warmup_exit_name(int exit_code)
{
	const struct sn_warmup_exit_info *e = exit_info(exit_code);

	return e ? e->name : "unknown exit code";
}

const char *sn_warmup_exit_status(int exit_code)
{
	const struct sn_warmup_exit_info *e = exit_info(exit_code);

	/* An unknown code is the helper's fault, whatever it meant. */
	return e ? e->status : sn_warmup_exits[SN_WARMUP_INTERNAL].status;
}

const char *sn_warmup_exit_hint(int exit_code)
{
	const struct sn_warmup_exit_info *e = exit_info(exit_code);

	return e ? e->hint : "the warmup helper exited with an unexpected code: check that nccl-warmup matches the plugin version";
}

int sn_parse_timeout_s(const char *value, unsigned int *out)
{
	unsigned long long v;

	if (sn_parse_u64(value, SN_WARMUP_TIMEOUT_MAX_S, &v) < 0 || v < 1)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

int sn_parse_bytes(const char *value, unsigned long long *out)
{
	size_t n = strlen(value);
	unsigned long long v;
	unsigned int shift = 0;
	const char *end;

	if (n > 0) {
		switch (value[n - 1]) {
		case 'K': case 'k': shift = 10; n--; break;
		case 'M': case 'm': shift = 20; n--; break;
		case 'G': case 'g': shift = 30; n--; break;
		}
	}
	/* Bounded before the shift, which then cannot overflow. */
	if (sn_parse_u64_prefix(value, SN_WARMUP_BYTES_MAX >> shift, &v,
				&end) < 0 || end != value + n)
		return -1;
	v <<= shift;
	if (v < SN_WARMUP_BYTES_MIN)
		return -1;
	*out = v;
	return 0;
}

int sn_parse_busbw(const char *value, double *out)
{
	const char *p;
	int dots = 0, digits = 0;
	double v;

	/* Plain decimal only: strtod() also takes "inf", "nan" and hex. */
	for (p = value; *p; p++) {
		if (*p == '.')
			dots++;
		else if (*p >= '0' && *p <= '9')
			digits++;
		else
			break;
	}
	v = (*p || dots > 1 || digits == 0) ? -1.0 : strtod(value, NULL);
	if (!(v >= 0.0 && v <= SN_WARMUP_BUSBW_MAX))
		return -1;
	*out = v;
	return 0;
}

int sn_parse_teardown(const char *value, bool *teardown_exit)
{
	if (sn_streq_nocase(value, "exit"))
		*teardown_exit = true;
	else if (sn_streq_nocase(value, "clean"))
		*teardown_exit = false;
	else
		return -1;
	return 0;
}

const char *sn_teardown_name(bool teardown_exit)
{
	return teardown_exit ? "exit" : "clean";
}

int sn_parse_fabric_transport(const char *value, bool *refuse_socket)
{
	if (sn_streq_nocase(value, "any"))
		*refuse_socket = false;
	else if (sn_streq_nocase(value, "no-socket"))
		*refuse_socket = true;
	else
		return -1;
	return 0;
}

const char *sn_transport_policy_name(bool refuse_socket)
{
	return refuse_socket ? "no-socket" : "any";
}

static int parse_port(const char *s, const char **end, unsigned int *port)
{
	unsigned long long v;

	if (sn_parse_u64_prefix(s, 65535, &v, end) < 0 || v < 1024)
		return -1;
	*port = (unsigned int)v;
	return 0;
}

int sn_port_range_parse(const char *s, struct sn_port_range *range,
			struct sn_error *err)
{
	const char *end;
	struct sn_port_range r;

	if (!s || parse_port(s, &end, &r.lo) < 0)
		goto bad;
	r.hi = r.lo;
	if (*end == '-' && parse_port(end + 1, &end, &r.hi) < 0)
		goto bad;
	if (*end != '\0')
		goto bad;
	if (r.hi < r.lo) {
		sn_error_set(err, "port range \"%.32s\" runs backwards: write LO-HI",
			     s);
		return -1;
	}
	*range = r;
	return 0;
bad:
	sn_error_set(err, "port range \"%.32s\" is not PORT or LO-HI with ports 1024-65535",
		     s ? s : "");
	return -1;
}
