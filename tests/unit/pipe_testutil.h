/* SPDX-License-Identifier: MIT */
/*
 * pipe_drain(): what a pipe held once its write end closed (up to
 * LEN - 1 bytes, NUL-terminated); FD closed.  The step key's tests read
 * the key's line with it, as the helper would.
 */
#ifndef SN_PIPE_TESTUTIL_H
#define SN_PIPE_TESTUTIL_H

#include <stddef.h>
#include <unistd.h>

static inline void pipe_drain(int fd, char *out, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n < len - 1 && (r = read(fd, out + n, len - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fd);
}

#endif
