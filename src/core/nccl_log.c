/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "nccl_log.h"

/*
 * NCCL's init logs, once per process, "<host>:<pid>:<tid> [<dev>] NCCL
 * INFO Using network <name>" (src/init.cc, after ncclNetInit picks the
 * first net that initialises: a plugin's, else IB, else Socket).  The
 * name runs to the end of the line.
 */
static const char using_net[] = "NCCL INFO Using network ";

static const char *name_to_transport(const char *name, size_t n)
{
	if (n == 2 && memcmp(name, "IB", 2) == 0)
		return "NET/IB";
	if (n == 6 && memcmp(name, "Socket", 6) == 0)
		return "NET/Socket";
	return "NET/Plugin";
}

int sn_nccl_transport(const char *log, size_t len, char *out, size_t out_len)
{
	const size_t k = sizeof(using_net) - 1;
	const char *p = log, *end = log + len;

	if (out_len)
		out[0] = '\0';
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		size_t n = (size_t)(line_end - p);

		for (size_t i = 0; i + k <= n; i++) {
			const char *name = p + i + k;
			size_t name_len = n - i - k;

			if (memcmp(p + i, using_net, k) != 0)
				continue;
			while (name_len && (name[name_len - 1] == '\r' ||
					    name[name_len - 1] == ' '))
				name_len--;
			if (!name_len)
				break;
			if (strlen(name_to_transport(name, name_len)) >= out_len)
				return -1;
			strcpy(out, name_to_transport(name, name_len));
			return 0;
		}
		p = line_end + 1;
	}
	return -1;
}
