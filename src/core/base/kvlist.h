/* SPDX-License-Identifier: MIT */
/*
 * Comma-separated KEY:VALUE lists, the form PyTorch reads from
 * PYTORCH_CUDA_ALLOC_CONF ("expandable_segments:True,max_split_size_mb:128").
 * One place for what a key is, how a list is searched and how an item is
 * replaced: the profile grammar (merge, has), resolve (two merges of one
 * key), env_apply (merging) and rules (has) all use these.
 *
 * Items are split at ',' and at their first ':'; blanks around keys and
 * values are ignored; an item without ':' is no KEY:VALUE and is skipped.
 */
#ifndef SN_KVLIST_H
#define SN_KVLIST_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the KEY of "KEY:VALUE" (the whole string if it has no ':'). */
size_t sn_kv_key_len(const char *kv);
/* True if the items KV_A and KV_B ("KEY:VALUE") have the same KEY. */
bool sn_kv_same_key(const char *kv_a, const char *kv_b);

/*
 * True if LIST holds KEY; its value (trimmed, truncated to LEN - 1 bytes)
 * goes to VALUE unless VALUE is NULL.  The last KEY wins, as in PyTorch,
 * which reads the list left to right.
 */
bool sn_kvlist_find(const char *list, const char *key, char *value, size_t len);
/* The same, for the first KEYLEN bytes of KEY. */
bool sn_kvlist_find_n(const char *list, const char *key, size_t keylen,
		      char *value, size_t len);
/* True if LIST holds KV's KEY with KV's VALUE, compared case-insensitively. */
bool sn_kvlist_has(const char *list, const char *kv);

/*
 * A new list (malloc'd; NULL on out of memory): LIST with KV appended, or,
 * when LIST holds KV's key, with every such item replaced by KV.
 */
char *sn_kvlist_put(const char *list, const char *kv);

#endif
