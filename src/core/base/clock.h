/* SPDX-License-Identifier: MIT */
/*
 * The one clock and the one deadline of the plugin, the helper and the
 * fabric coordination (clock.c is src/'s only clock_gettime caller).
 *
 * The clock is CLOCK_MONOTONIC: immune to wall-clock changes, and the
 * same clock in a forked child, so a deadline taken before fork() holds
 * after it.  It reads milliseconds as a double because durations need
 * the fraction: a small collective takes a fraction of a millisecond, the
 * helper reports its timings to 0.1 ms, and the bus bandwidth is timed
 * over a few such operations.
 *
 * A deadline is a point on that clock in whole milliseconds, passed by
 * value.  What travels between programs stays a duration in seconds (the
 * helper's --timeout, plugstack.conf's warmup_timeout=); each program
 * turns it into one struct sn_deadline and waits on that.
 */
#ifndef SN_CLOCK_H
#define SN_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Monotonic milliseconds, with the sub-millisecond fraction. */
double sn_clock_ms(void);

/* Wall-clock seconds since the epoch: the time stamp of a record. */
double sn_clock_wall_s(void);

/*
 * For the waits whose deadline POSIX gives on CLOCK_REALTIME
 * (pthread_mutex_timedlock, pthread_timedjoin_np): *TS set MS from now
 * on that clock, and the whole milliseconds left until TS (0 once past).
 */
struct timespec;
void sn_clock_wall_after(int64_t ms, struct timespec *ts);
int sn_clock_wall_left_ms(const struct timespec *ts);

struct sn_deadline {
	int64_t at_ms;		/* on sn_clock_ms()'s clock */
};

/* MS after START_MS, a reading of sn_clock_ms(). */
struct sn_deadline sn_deadline_after(double start_ms, int64_t ms);
/* MS from now (0 or less: already expired). */
struct sn_deadline sn_deadline_in(int64_t ms);
/* MS before D: a margin inside it. */
struct sn_deadline sn_deadline_earlier(struct sn_deadline d, int64_t ms);
/* The first of A and B. */
struct sn_deadline sn_deadline_min(struct sn_deadline a, struct sn_deadline b);
bool sn_deadline_expired(struct sn_deadline d);
/* Milliseconds until D, rounded up: 0 exactly when D has expired. */
int64_t sn_deadline_left_ms(struct sn_deadline d);
/*
 * A timeout for poll(2) and its kin: the milliseconds left, at most
 * CAP_MS (a waiter that looks around now and then; INT_MAX for none).
 */
int sn_deadline_poll_ms(struct sn_deadline d, int cap_ms);
/* Sleeps until D has expired (a watchdog); signals do not end it early. */
void sn_deadline_sleep(struct sn_deadline d);

#endif
