/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <time.h>

#include "base/clock.h"

static double read_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double sn_clock_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

double sn_clock_wall_s(void)
{
	return read_ms(CLOCK_REALTIME) / 1e3;
}

void sn_clock_wall_after(int64_t ms, struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	/* One carry or borrow: both parts were in range, and ms % 1000 has
	 * the sign of ms. */
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	} else if (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += 1000000000L;
	}
}

int sn_clock_wall_left_ms(const struct timespec *ts)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_REALTIME, &now);
	ms = (ts->tv_sec - now.tv_sec) * 1000L +
	     (ts->tv_nsec - now.tv_nsec) / 1000000L;
	return ms < 0 ? 0 : (int)ms;
}

struct sn_deadline sn_deadline_after(double start_ms, int64_t ms)
{
	/* Truncation is the floor: the clock is positive (time since boot). */
	return (struct sn_deadline){ .at_ms = (int64_t)start_ms + ms };
}

struct sn_deadline sn_deadline_in(int64_t ms)
{
	return sn_deadline_after(sn_clock_ms(), ms);
}

struct sn_deadline sn_deadline_earlier(struct sn_deadline d, int64_t ms)
{
	return (struct sn_deadline){ .at_ms = d.at_ms - ms };
}

struct sn_deadline sn_deadline_min(struct sn_deadline a, struct sn_deadline b)
{
	return a.at_ms <= b.at_ms ? a : b;
}

int64_t sn_deadline_left_ms(struct sn_deadline d)
{
	double left = (double)d.at_ms - sn_clock_ms();
	int64_t whole;

	if (left <= 0)
		return 0;
	whole = (int64_t)left;
	return whole < left ? whole + 1 : whole;	/* rounded up */
}

bool sn_deadline_expired(struct sn_deadline d)
{
	return sn_deadline_left_ms(d) == 0;
}

int sn_deadline_poll_ms(struct sn_deadline d, int cap_ms)
{
	int64_t left = sn_deadline_left_ms(d);

	if (cap_ms < 0)
		cap_ms = 0;
	return left < cap_ms ? (int)left : cap_ms;
}

void sn_deadline_sleep(struct sn_deadline d)
{
	struct timespec until = {
		.tv_sec = (time_t)(d.at_ms / 1000),
		.tv_nsec = (long)(d.at_ms % 1000) * 1000000,
	};

	/* TIMER_ABSTIME on sn_clock_ms()'s clock: no drift over restarts. */
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
	       EINTR)
		;
}
