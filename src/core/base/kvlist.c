/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/kvlist.h"
#include "base/strutil.h"

/* Large enough for any allocator or NCCL setting a rule would look at. */
#define KV_VALUE_MAX 8192

size_t sn_kv_key_len(const char *kv)
{
	return strcspn(kv, ":");
}

bool sn_kv_same_key(const char *kv_a, const char *kv_b)
{
	size_t n = sn_kv_key_len(kv_a);

	return n == sn_kv_key_len(kv_b) && strncmp(kv_a, kv_b, n) == 0;
}

/* Trims blanks from the span START of LEN bytes. */
static void trim_span(const char **start, size_t *len)
{
	while (*len && (**start == ' ' || **start == '\t')) {
		(*start)++;
		(*len)--;
	}
	while (*len && ((*start)[*len - 1] == ' ' || (*start)[*len - 1] == '\t'))
		(*len)--;
}

/*
 * One item of a list: [ITEM, ITEM + LEN); its trimmed key and value.
 * Returns false for an item without ':'.
 */
static bool item_split(const char *item, size_t len, const char **key,
		       size_t *keylen, const char **value, size_t *valuelen)
{
	const char *colon = memchr(item, ':', len);

	if (!colon)
		return false;
	*key = item;
	*keylen = (size_t)(colon - item);
	*value = colon + 1;
	*valuelen = len - *keylen - 1;
	trim_span(key, keylen);
	trim_span(value, valuelen);
	return true;
}

static size_t item_len(const char *item)
{
	return strcspn(item, ",");
}

bool sn_kvlist_find_n(const char *list, const char *key, size_t keylen,
		      char *value, size_t len)
{
	bool found = false;
	const char *item = list;

	while (item && *item) {
		size_t n = item_len(item);
		const char *k, *v;
		size_t kn, vn;

		if (item_split(item, n, &k, &kn, &v, &vn) && kn == keylen &&
		    strncmp(k, key, kn) == 0) {
			found = true;
			if (value && len) {
				if (vn >= len)
					vn = len - 1;
				memcpy(value, v, vn);
				value[vn] = '\0';
			}
		}
		item = item[n] ? item + n + 1 : NULL;
	}
	return found;
}

bool sn_kvlist_find(const char *list, const char *key, char *value, size_t len)
{
	return sn_kvlist_find_n(list, key, strlen(key), value, len);
}

bool sn_kvlist_has(const char *list, const char *kv)
{
	const char *colon = strchr(kv, ':');
	char found[KV_VALUE_MAX];

	return colon &&
	       sn_kvlist_find_n(list, kv, (size_t)(colon - kv), found,
				sizeof(found)) &&
	       sn_streq_nocase(found, colon + 1);
}

/* LIST with every item whose key is KV's key replaced by KV. */
static char *replace_all(const char *list, const char *kv)
{
	size_t klen = sn_kv_key_len(kv), kvlen = strlen(kv);
	size_t cap = strlen(list) + 1, used = 0;
	const char *item = list;
	char *out;

	/* Each replaced item grows by at most strlen(kv). */
	for (const char *c = list; *c; c++)
		cap += *c == ',' ? kvlen : 0;
	cap += kvlen;
	out = malloc(cap);
	if (!out)
		return NULL;
	while (item) {
		size_t n = item_len(item);
		const char *k, *v;
		size_t kn, vn;

		if (used)
			out[used++] = ',';
		if (item_split(item, n, &k, &kn, &v, &vn) && kn == klen &&
		    strncmp(k, kv, klen) == 0) {
			memcpy(out + used, kv, kvlen);
			used += kvlen;
		} else {
			memcpy(out + used, item, n);
			used += n;
		}
		item = item[n] ? item + n + 1 : NULL;
	}
	out[used] = '\0';
	return out;
}

char *sn_kvlist_put(const char *list, const char *kv)
{
	size_t n = strlen(list);
	bool comma;
	char *out;

	if (sn_kvlist_find_n(list, kv, sn_kv_key_len(kv), NULL, 0))
		return replace_all(list, kv);
	/* An empty list gets no leading ',', nor one ending in ',' another. */
	comma = n && list[n - 1] != ',';
	out = malloc(n + comma + strlen(kv) + 1);
	if (out)
		sprintf(out, "%s%s%s", list, comma ? "," : "", kv);
	return out;
}
