/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "config/node_path.h"
#include "base/textbuf.h"

bool sn_record_path_valid(const char *pattern)
{
	for (const char *p = strchr(pattern, '%'); p; p = strchr(p + 2, '%'))
		if (p[1] != 'n' && p[1] != '%')
			return false;
	return true;
}

int sn_record_path(char *dst, size_t cap, const char *pattern,
		   const char *node)
{
	struct sn_text t = { dst, cap, 0, false };

	if (!sn_record_path_valid(pattern) || !node[0] || strchr(node, '/') ||
	    strcmp(node, ".") == 0 || strcmp(node, "..") == 0)
		return -1;
	for (const char *p = pattern; *p; p++) {
		if (*p != '%') {
			sn_text_add(&t, "%c", *p);
			continue;
		}
		p++;
		sn_text_add(&t, "%s", *p == 'n' ? node : "%");
	}
	return t.full ? -1 : 0;
}
