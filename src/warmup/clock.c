/* SPDX-License-Identifier: MIT */
#include <time.h>

#include "warmup.h"

/* Monotonic seconds: immune to clock changes during the run. */
double wu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
