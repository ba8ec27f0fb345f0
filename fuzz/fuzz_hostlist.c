/* SPDX-License-Identifier: MIT */
/*
 * Slurm host lists (SLURM_STEP_NODELIST) and fabric port ranges.  Input:
 * the first line is a host list, the second a port range.
 *
 * Invariants: an accepted list expands to 1..SN_HOSTLIST_MAX_HOSTS names
 * of node-name characters only; nth(i) is the i-th name foreach visits;
 * find(nth(i)) is the first index with that name; an accepted port range
 * lies in 1024..65535 and every derived port lies inside it.
 */
#include <ctype.h>
#include <stdbool.h>

#include "fabric/fabric_addr.h"
#include "fuzz_util.h"
#include "fabric/hostlist.h"

#define CHECKED_HOSTS 64	/* nth/find are O(n) each: check a prefix */

struct seen {
	char names[CHECKED_HOSTS][SN_HOSTNAME_MAX];
	size_t n;
};

static int record(const char *host, size_t index, void *arg,
		  struct sn_error *err)
{
	struct seen *s = arg;
	const char *c;

	(void)err;
	FUZZ_CHECK(*host != '\0' && strlen(host) < SN_HOSTNAME_MAX);
	for (c = host; *c; c++)
		FUZZ_CHECK(isalnum((unsigned char)*c) || *c == '-' ||
			   *c == '_' || *c == '.');
	if (index < CHECKED_HOSTS) {
		FUZZ_CHECK(index == s->n);
		strcpy(s->names[s->n++], host);
	}
	return 0;
}

static void check_hostlist(const char *expr)
{
	static struct seen s;
	struct sn_error err;
	size_t count, i, idx;
	char host[SN_HOSTNAME_MAX];

	s.n = 0;
	if (sn_hostlist_foreach(expr, record, &s, &err) != 0)
		return;
	FUZZ_CHECK(sn_hostlist_count(expr, &count, &err) == 0);
	FUZZ_CHECK(count >= 1 && count <= SN_HOSTLIST_MAX_HOSTS);
	FUZZ_CHECK(s.n == (count < CHECKED_HOSTS ? count : CHECKED_HOSTS));
	for (i = 0; i < s.n; i++) {
		FUZZ_CHECK(sn_hostlist_nth(expr, i, host, sizeof(host),
					   &err) == 0);
		FUZZ_CHECK(strcmp(host, s.names[i]) == 0);
		FUZZ_CHECK(sn_hostlist_find(expr, host, &idx, &err) == 0);
		FUZZ_CHECK(idx <= i && strcmp(s.names[idx], host) == 0);
	}
	FUZZ_CHECK(sn_hostlist_nth(expr, count, host, sizeof(host), &err) != 0);
}

static void check_ports(const char *text)
{
	struct sn_port_range r;
	struct sn_error err;
	unsigned int k, p;

	if (sn_port_range_parse(text, &r, &err) != 0)
		return;
	FUZZ_CHECK(r.lo >= 1024 && r.lo <= r.hi && r.hi <= 65535);
	for (k = 0; k < 4; k++) {
		p = sn_fabric_port(&r, (uint32_t)strlen(text) * 2654435761u,
				   k, k);
		FUZZ_CHECK(p >= r.lo && p <= r.hi);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size), *nl = strchr(text, '\n');

	if (nl)
		*nl = '\0';
	check_hostlist(text);
	if (nl)
		check_ports(nl + 1);
	free(text);
	return 0;
}
