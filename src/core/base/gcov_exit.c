/* SPDX-License-Identifier: MIT */
/*
 * Coverage builds only (./configure --enable-coverage; base/Makefile.inc
 * compiles this file under COVERAGE alone).  gcov writes a process's
 * counters at exit(), never at _exit(), and nccl-warmup ends in _exit()
 * (its verdict must not wait on CUDA/NCCL atexit handlers), as do the
 * plugin's helper supervisor and a helper child that fails before exec:
 * their counts would be lost.  This _exit() comes from libsn_core's archive
 * ahead of libc's, is local to spank_nccl.so (hidden, and its version
 * script), and writes the counters first (docs/dev/coverage.md).
 */
#ifdef SN_COVERAGE
#include <sys/syscall.h>
#include <unistd.h>

void __gcov_dump(void);

/* Not counted itself: its last lines run after the counters are out. */
/* GCOVR_EXCL_START */
__attribute__((visibility("hidden"), noreturn)) void _exit(int status)
{
	__gcov_dump();
	for (;;)
		syscall(SYS_exit_group, status);
}
/* GCOVR_EXCL_STOP */
#else
/* Not a coverage build (a tree compiled file by file, bench/helper-ab.sh,
 * fuzz/run.sh): libc's _exit(). */
typedef int sn_gcov_exit_unused;
#endif
