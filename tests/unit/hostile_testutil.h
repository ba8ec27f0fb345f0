/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the hostile-input tests (test_hostile_file.c,
 * test_hostile_text.c, test_hostile_input.c): nothing-kept checks, the
 * words a message must hold, and a temporary directory for files.
 */
#ifndef SN_HOSTILE_TESTUTIL_H
#define SN_HOSTILE_TESTUTIL_H

#include "core_testutil.h"

#include <stdbool.h>
#include <sys/types.h>

/* True if every byte of the N-byte object at P is zero. */
bool all_zero(const void *p, size_t n);
/* Fails unless MSG holds every word of the NULL-terminated WORDS. */
void assert_all_contained(const char *msg, const char *const *words);

/* CMocka group setup/teardown: a 0755 temporary directory. */
int make_tmpdir(void **state);
int remove_tmpdir(void **state);
/* The temporary directory, and NAME inside it. */
const char *tmp_dir(void);
void tmp_path(char *buf, size_t len, const char *name);
/* Writes TEXT to PATH and gives it MODE. */
void write_file(const char *path, const char *text, mode_t mode);

#endif
