/* SPDX-License-Identifier: MIT */
/*
 * Exit codes of nccl-warmup(1).  Shared by the helper (which exits with
 * them) and the plugin (which explains them).  Documented in
 * man/nccl-warmup.1; never renumber a released code.
 */
#ifndef SN_WARMUP_CODES_H
#define SN_WARMUP_CODES_H

enum sn_warmup_exit {
	SN_WARMUP_OK = 0,
	SN_WARMUP_USAGE = 1,          /* bad command line */
	SN_WARMUP_NO_GPUS = 2,        /* no visible CUDA device */
	SN_WARMUP_DUPLICATE_BUSID = 3,/* two devices report the same PCI bus ID */
	SN_WARMUP_CUDA_ERROR = 4,     /* CUDA runtime/driver call failed */
	SN_WARMUP_NCCL_ERROR = 5,     /* NCCL init or collective failed */
	SN_WARMUP_WRONG_RESULT = 6,   /* all-reduce returned a wrong value */
	SN_WARMUP_LOW_BANDWIDTH = 7,  /* bus bandwidth below the floor */
	SN_WARMUP_TIMEOUT = 8,        /* helper's own deadline expired */
	SN_WARMUP_INTERNAL = 9,       /* out of memory, I/O error, ... */
};

#endif
