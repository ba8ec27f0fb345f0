/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer harnesses: a NUL-terminated copy of the input
 * and an invariant check that aborts (libFuzzer records the input as a
 * crash) with a message naming the broken invariant.
 */
#ifndef SN_FUZZ_UTIL_H
#define SN_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "invariant broken at %s:%d: %s\n", \
			__FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

/* DATA as a C string; an embedded NUL ends it, as it would in C callers. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* True if the error message was filled in (a rejection must say why). */
static inline int fuzz_error_set(const char *msg)
{
	return msg[0] != '\0' && memchr(msg, '\0', 1024) != NULL;
}

#endif
