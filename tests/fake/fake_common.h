/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fake libcudart.so.13 and libnccl.so.2 (test doubles for
 * GPU-less machines).  They keep process-wide state, as the real libraries
 * do; that is the one place in the tree where that is allowed.
 */
#ifndef FAKE_COMMON_H
#define FAKE_COMMON_H

#include <stdbool.h>

#define FAKE_HIDDEN __attribute__((visibility("hidden")))

/* True if env var NAME is a comma list containing WORD. */
FAKE_HIDDEN bool fake_env_has(const char *name, const char *word);
/* True if env var NAME is a comma list containing this host's name
 * (gethostname): per-node faults in a multi-node test cluster. */
FAKE_HIDDEN bool fake_host_listed(const char *name);
/* Item I of comma list LIST into OUT (LEN bytes); false if absent. */
FAKE_HIDDEN bool fake_list_item(const char *list, int i, char *out,
				 size_t len);
/* Env var NAME as a non-negative number, else DEF. */
FAKE_HIDDEN double fake_env_num(const char *name, double def);
/* Appends "lib=LIB pid=... uid=r/e/s gid=r/e/s" to the file in LOGVAR. */
FAKE_HIDDEN void fake_log_process(const char *logvar, const char *lib);
FAKE_HIDDEN double fake_now(void);
FAKE_HIDDEN void fake_sleep(double seconds);
/* Blocks forever, the way a wedged driver call does. */
FAKE_HIDDEN __attribute__((noreturn)) void fake_hang(void);

/* Private entry points of the fake libcudart used by the fake libnccl. */
struct CUstream_st;
void fake_cuda_stream_enqueue(struct CUstream_st *stream, double seconds);
void fake_cuda_stream_hang(struct CUstream_st *stream);

#endif
