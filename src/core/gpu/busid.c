/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu/busid.h"
#include "base/strutil.h"

/*
 * Reads exactly MIN..MAX hex digits from *P, advancing it.  Returns -1 if
 * fewer than MIN or more than MAX digits follow.
 */
static int read_hex(const char **p, size_t min, size_t max, unsigned int *out)
{
	unsigned long value = 0;
	size_t n = 0;

	int digit;

	while ((digit = sn_hex_digit((*p)[n], true)) >= 0) {
		if (n == max)
			return -1;
		value = value * 16 + (unsigned long)digit;
		n++;
	}
	if (n < min)
		return -1;
	*p += n;
	*out = (unsigned int)value;
	return 0;
}

int sn_busid_parse(const char *text, struct sn_pci_busid *out)
{
	struct sn_pci_busid id;
	const char *p = text;

	if (!text || !out)
		return -1;
	/* cudaDeviceGetPCIBusId prints "%04x:%02x:%02x.%x"; domains above
	 * 0xffff (some ARM and VM platforms) print with up to 8 digits. */
	if (read_hex(&p, 4, 8, &id.domain) || *p++ != ':' ||
	    read_hex(&p, 2, 2, &id.bus) || *p++ != ':' ||
	    read_hex(&p, 2, 2, &id.device) || *p++ != '.' ||
	    read_hex(&p, 1, 1, &id.function) || *p != '\0')
		return -1;
	if (id.device > 0x1f || id.function > 7)
		return -1;
	*out = id;
	return 0;
}

bool sn_busid_equal(const struct sn_pci_busid *a, const struct sn_pci_busid *b)
{
	return a->domain == b->domain && a->bus == b->bus &&
	       a->device == b->device && a->function == b->function;
}

bool sn_gpu_same_busid(const struct sn_gpu_identity *x,
		       const struct sn_gpu_identity *y)
{
	struct sn_pci_busid a, b;

	if (sn_busid_parse(x->busid, &a) == 0 &&
	    sn_busid_parse(y->busid, &b) == 0)
		return sn_busid_equal(&a, &b);
	return strcasecmp(x->busid, y->busid) == 0;
}

bool sn_busid_find_duplicate(const struct sn_gpu_identity *gpus, size_t n,
			     size_t *a, size_t *b)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			if (!sn_gpu_same_busid(&gpus[i], &gpus[j]))
				continue;
			/* Instances of one MIG-partitioned GPU share its bus
			 * ID by design; anything else sharing one is a fault. */
			if (gpus[i].mig && gpus[j].mig)
				continue;
			if (a)
				*a = i;
			if (b)
				*b = j;
			return true;
		}
	}
	return false;
}

bool sn_busid_any_mig(const struct sn_gpu_identity *gpus, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (gpus[i].mig)
			return true;
	return false;
}

int sn_uuid_format(const unsigned char bytes[16], bool mig, char *out,
		   size_t len)
{
	static const char hex[] = "0123456789abcdef";
	/* 4+32+4+1: "GPU-" then 8-4-4-4-12 hex digits, as nvidia-smi -L. */
	size_t need = 4 + 32 + 4 + 1;
	size_t o = 0;

	if (!out || len < need)
		return -1;
	memcpy(out, mig ? "MIG-" : "GPU-", 4);
	o = 4;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[bytes[i] >> 4];
		out[o++] = hex[bytes[i] & 0xf];
	}
	out[o] = '\0';
	return 0;
}
