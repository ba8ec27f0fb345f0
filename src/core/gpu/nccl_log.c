/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "gpu/nccl_log.h"

/*
 * NCCL's init logs, once per process, "<host>:<pid>:<tid> [<dev>] NCCL
 * INFO Using network <name>" (src/init.cc, after ncclNetInit picks the
 * first net that initialises: a plugin's, else IB, else Socket).  A net
 * plugin is announced before it, "... NCCL INFO NET/Plugin: Loaded net
 * plugin <name> (v<N>)" (src/plugin/net.cc, N the plugin API version
 * NCCL found, e.g. "AWS Libfabric (v5)", "gIB (v11)").  Each name runs to
 * the end of its line.
 */
static const char using_net[] = "NCCL INFO Using network ";
static const char loaded_net[] = "NCCL INFO NET/Plugin: Loaded net plugin ";
#define PLUGIN "NET/Plugin"

/*
 * The text after the first KEY on a line of LOG (to the end of that line,
 * without trailing CR and spaces) into *TEXT and *N; false if none.
 */
static bool find_after(const char *log, size_t len, const char *key,
		       const char **text, size_t *n)
{
	const size_t k = strlen(key);
	const char *p = log, *end = log + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		size_t line = (size_t)(line_end - p);

		for (size_t i = 0; i + k <= line; i++) {
			const char *t = p + i + k;
			size_t tn = line - i - k;

			if (memcmp(p + i, key, k) != 0)
				continue;
			while (tn && (t[tn - 1] == '\r' || t[tn - 1] == ' '))
				tn--;
			*text = t;
			*n = tn;
			return true;
		}
		p = line_end + 1;
	}
	return false;
}

/* "NAME (vN)" -> the length of NAME, and "vN" in VER; else 0. */
static size_t split_version(const char *s, size_t n, const char **ver,
			    size_t *ver_len)
{
	size_t i, digits = 0;

	if (n < 5 || s[n - 1] != ')')
		return 0;
	for (i = n - 2; i > 0 && s[i] >= '0' && s[i] <= '9'; i--)
		digits++;
	if (!digits || i < 3 || s[i] != 'v' || s[i - 1] != '(' ||
	    s[i - 2] != ' ')
		return 0;
	*ver = s + i;
	*ver_len = digits + 1;
	return i - 2;
}

/*
 * A net plugin: "NET/Plugin NAME (vN)" when its Loaded line is there,
 * else "NET/Plugin NAME"; non-printable bytes become '?'.  A NAME too long
 * for OUT is cut; OUT too short even for "NET/Plugin" is refused.
 */
static int plugin_transport(const char *log, size_t len, const char *name,
			    size_t name_len, char *out, size_t out_len)
{
	const char *loaded, *ver = NULL;
	size_t loaded_len, ver_len = 0, used, room;

	if (out_len < sizeof(PLUGIN))
		return -1;
	if (find_after(log, len, loaded_net, &loaded, &loaded_len) &&
	    split_version(loaded, loaded_len, &ver, &ver_len) != name_len)
		ver = NULL;
	if (ver && memcmp(loaded, name, name_len) != 0)
		ver = NULL;
	memcpy(out, PLUGIN, sizeof(PLUGIN));
	used = sizeof(PLUGIN) - 1;
	/* " NAME" and, if it fits whole, " (vN)". */
	room = out_len - 1 - used;
	if (room < 2)
		return 0;
	out[used++] = ' ';
	room--;
	if (name_len > room)
		name_len = room;
	for (size_t i = 0; i < name_len; i++)
		out[used++] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
	if (ver && out_len - 1 - used >= ver_len + 3) {
		out[used++] = ' ';
		out[used++] = '(';
		memcpy(out + used, ver, ver_len);
		used += ver_len;
		out[used++] = ')';
	}
	out[used] = '\0';
	return 0;
}

int sn_nccl_transport(const char *log, size_t len, char *out, size_t out_len)
{
	const char *name;
	const char *fixed = NULL;
	size_t n;

	if (out_len)
		out[0] = '\0';
	if (!find_after(log, len, using_net, &name, &n) || !n)
		return -1;
	if (n == 2 && memcmp(name, "IB", 2) == 0)
		fixed = "NET/IB";
	else if (n == 6 && memcmp(name, "Socket", 6) == 0)
		fixed = "NET/Socket";
	if (!fixed)
		return plugin_transport(log, len, name, n, out, out_len);
	if (strlen(fixed) >= out_len)
		return -1;
	strcpy(out, fixed);
	return 0;
}
