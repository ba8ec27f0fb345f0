/* SPDX-License-Identifier: MIT */
/*
 * The hard deadline.  A CUDA or NCCL call can block without returning
 * (driver init on a sick GPU, a stuck blocking init): the polling loops
 * cannot see that, so this thread reports the timeout and ends the process
 * at run->deadline whatever the main thread is doing.
 */
#include <stdio.h>
#include <string.h>

#include "warmup.h"

static void *watchdog(void *arg)
{
	struct wu_run *run = arg;
	const char *doing;

	sn_deadline_sleep(run->deadline);
	pthread_mutex_lock(&run->lock);
	doing = run->doing;
	/*
	 * A polling loop that gave up at the soft deadline already said what
	 * did not finish; the cleanup after it (ncclCommAbort) is what then
	 * blocked.  Keep the cause first, as the user's fix depends on it.
	 */
	if (run->message[0]) {
		size_t len = strlen(run->message);

		snprintf(run->message + len, sizeof(run->message) - len,
			 "; then blocked in %s until the %u s deadline", doing,
			 run->opt.timeout_s);
		pthread_mutex_unlock(&run->lock);
	} else {
		pthread_mutex_unlock(&run->lock);
		wu_fail(run, SN_WARMUP_TIMEOUT,
			"timed out after %u s, blocked in %s",
			run->opt.timeout_s, doing);
	}
	wu_report_and_exit(run, SN_WARMUP_TIMEOUT);
}

int wu_watchdog_start(struct wu_run *run)
{
	pthread_attr_t attr;
	pthread_t thread;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thread, &attr, watchdog, run);
	pthread_attr_destroy(&attr);
	return rc;
}
