/* SPDX-License-Identifier: MIT */
/*
 * PCI bus IDs as returned by cudaDeviceGetPCIBusId ("0009:01:00.0") and the
 * duplicate check over a node's GPUs.  The full domain:bus:device.function
 * is compared: GH200 GPUs differ only in the domain and must pass.
 */
#ifndef SN_BUSID_H
#define SN_BUSID_H

#include <stdbool.h>
#include <stddef.h>

struct sn_pci_busid {
	unsigned int domain;	/* up to 0xffffffff (cudaDeviceGetPCIBusId prints 4-8 hex) */
	unsigned int bus;	/* 0..0xff */
	unsigned int device;	/* 0..0x1f */
	unsigned int function;	/* 0..7 */
};

struct sn_gpu_identity {
	int index;		/* CUDA device ordinal */
	char busid[32];		/* as reported */
	char uuid[64];		/* "GPU-..." or "MIG-..." */
	bool mig;		/* a MIG compute instance */
};

/* Accepts "DDDD:BB:DD.F" and "DDDDDDDD:BB:DD.F" (any hex case). 0 / -1. */
int sn_busid_parse(const char *text, struct sn_pci_busid *out);
bool sn_busid_equal(const struct sn_pci_busid *a, const struct sn_pci_busid *b);

/* Same full bus ID (parsed; as case-insensitive text if unparseable). */
bool sn_gpu_same_busid(const struct sn_gpu_identity *x,
		       const struct sn_gpu_identity *y);

/*
 * Finds the first pair of GPUs with the same full bus ID that is a fault.
 * MIG instances of one parent legitimately share the bus ID and are not
 * reported.  Returns true and sets *A < *B (indices into GPUS) on a
 * duplicate.  Unparseable IDs are compared as strings.
 */
bool sn_busid_find_duplicate(const struct sn_gpu_identity *gpus, size_t n,
			     size_t *a, size_t *b);

/* True if any of the N GPUs is a MIG compute instance. */
bool sn_busid_any_mig(const struct sn_gpu_identity *gpus, size_t n);

/*
 * Formats a 16-byte CUDA UUID as nvidia-smi prints it:
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" ("MIG-..." when MIG).
 * OUT needs at least 41 bytes; returns 0, or -1 if it is too small.
 */
int sn_uuid_format(const unsigned char bytes[16], bool mig, char *out,
		   size_t len);

#endif
