/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "warmup.h"

/*
 * The polling loops give up this long before the hard deadline (at most
 * a quarter of the timeout), so that ncclCommAbort and the report still
 * fit in; the watchdog fires at the hard deadline if they do not.
 */
#define WU_SOFT_MARGIN_MS 250

void wu_run_init(struct wu_run *run)
{
	memset(run, 0, sizeof(*run));
	pthread_mutex_init(&run->lock, NULL);
	atomic_init(&run->reporting, 0);
	run->t_start_ms = sn_clock_ms();
	run->phase = WU_PHASE_CUDA_INIT;
	run->doing = "starting";
	run->failed_op = -1;
}

void wu_phase_begin(struct wu_run *run, enum wu_phase phase,
		    const char *doing)
{
	double now = sn_clock_ms();

	pthread_mutex_lock(&run->lock);
	run->phase = phase;
	run->phase_started_ms = now;
	run->doing = doing;
	pthread_mutex_unlock(&run->lock);
}

void wu_doing(struct wu_run *run, const char *doing)
{
	pthread_mutex_lock(&run->lock);
	run->doing = doing;
	pthread_mutex_unlock(&run->lock);
}

void wu_phase_end(struct wu_run *run)
{
	double now = sn_clock_ms();

	pthread_mutex_lock(&run->lock);
	run->phase_ms[run->phase] = now - run->phase_started_ms;
	run->phase_done[run->phase] = true;
	pthread_mutex_unlock(&run->lock);
}

void wu_note(struct wu_run *run, const char *fmt, ...)
{
	va_list ap;

	size_t o;

	pthread_mutex_lock(&run->lock);
	/* Notes add up: "1 GPU: ...; 1 GPU WARNING: ...". */
	o = strlen(run->note);
	if (o && o + 2 < sizeof(run->note))
		o += (size_t)snprintf(run->note + o, sizeof(run->note) - o,
				      "; ");
	va_start(ap, fmt);
	if (o < sizeof(run->note))
		vsnprintf(run->note + o, sizeof(run->note) - o, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&run->lock);
}

int wu_fail(struct wu_run *run, int code, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&run->lock);
	va_start(ap, fmt);
	vsnprintf(run->message, sizeof(run->message), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&run->lock);
	return code;
}

bool wu_past_soft_deadline(const struct wu_run *run)
{
	int64_t margin = (int64_t)run->opt.timeout_s * 1000 / 4;

	if (margin > WU_SOFT_MARGIN_MS)
		margin = WU_SOFT_MARGIN_MS;
	return sn_deadline_expired(sn_deadline_earlier(run->deadline, margin));
}
