/* SPDX-License-Identifier: MIT */
/*
 * The one clock and the one deadline (src/core/base/clock.c).  Deadlines
 * built from fixed points check the arithmetic; the few that use the
 * running clock wait on the clock itself, never on a bound of how fast
 * this machine is.
 */
#include <limits.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#include "core_testutil.h"

#include "base/clock.h"

static void test_clock_reads(void **state)
{
	double a, b, wall;
	struct timespec t0, t1;

	(void)state;
	a = sn_clock_ms();
	b = sn_clock_ms();
	assert_true(a > 0);
	assert_true(b >= a);
	/*
	 * The wall clock: Unix seconds, between two CLOCK_REALTIME readings
	 * in whole seconds.  Not time(): glibc serves it from the coarse
	 * clock, a tick behind, so a reading just past a second's turn was
	 * once a whole second ahead of the time() after it (CI, 1 in ~250).
	 */
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &t0), 0);
	wall = sn_clock_wall_s();
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &t1), 0);
	assert_true(wall >= (double)t0.tv_sec);
	assert_true(wall < (double)t1.tv_sec + 1);
}

static void test_deadline_arithmetic(void **state)
{
	struct sn_deadline a = { 2000 }, b = { 1500 };

	(void)state;
	/* Whole milliseconds after a reading: its fraction is dropped. */
	assert_int_equal(sn_deadline_after(1000.9, 500).at_ms, 1500);
	assert_int_equal(sn_deadline_after(1000.0, 0).at_ms, 1000);
	assert_int_equal(sn_deadline_earlier(a, 250).at_ms, 1750);
	assert_int_equal(sn_deadline_min(a, b).at_ms, 1500);
	assert_int_equal(sn_deadline_min(b, a).at_ms, 1500);
	assert_int_equal(sn_deadline_min(a, a).at_ms, 2000);
}

static void test_deadline_past(void **state)
{
	struct sn_deadline past[] = {
		sn_deadline_in(0),
		sn_deadline_in(-5),
		{ 1 },
		sn_deadline_earlier(sn_deadline_in(1000), 2000),
	};

	(void)state;
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		assert_true(sn_deadline_expired(past[i]));
		assert_int_equal(sn_deadline_left_ms(past[i]), 0);
		assert_int_equal(sn_deadline_poll_ms(past[i], 20), 0);
		assert_int_equal(sn_deadline_poll_ms(past[i], INT_MAX), 0);
	}
	/* A past deadline: the sleep returns at once. */
	sn_deadline_sleep(past[2]);
}

static void test_deadline_future(void **state)
{
	struct sn_deadline hour = sn_deadline_in(3600 * 1000);
	struct sn_deadline far = { INT64_MAX / 2 };
	int64_t left = sn_deadline_left_ms(hour);

	(void)state;
	assert_false(sn_deadline_expired(hour));
	assert_true(left > 0 && left <= 3600 * 1000);
	/* poll(2) timeouts: the cap, or what is left, always an int. */
	assert_int_equal(sn_deadline_poll_ms(hour, 20), 20);
	assert_int_equal(sn_deadline_poll_ms(hour, 0), 0);
	assert_int_equal(sn_deadline_poll_ms(hour, -1), 0);
	assert_true(sn_deadline_poll_ms(hour, INT_MAX) <= 3600 * 1000);
	assert_true(sn_deadline_poll_ms(hour, INT_MAX) > 0);
	assert_true(sn_deadline_left_ms(far) > INT_MAX);
	assert_int_equal(sn_deadline_poll_ms(far, INT_MAX), INT_MAX);
	/* Earlier by less than is left: still ahead, and first. */
	assert_false(sn_deadline_expired(sn_deadline_earlier(hour, 1000)));
	assert_int_equal(sn_deadline_min(hour, far).at_ms, hour.at_ms);
}

/*
 * The CLOCK_REALTIME deadline of the POSIX timed waits: normalised
 * (a carry into tv_sec, or a borrow from it), between two readings of that clock, and the
 * whole milliseconds left, 0 once past.
 */
static void test_wall_deadline(void **state)
{
	struct timespec before, after, ts;
	int64_t lo, hi, at, left;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &before);
	sn_clock_wall_after(2999, &ts);
	clock_gettime(CLOCK_REALTIME, &after);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	lo = (int64_t)before.tv_sec * 1000000000 + before.tv_nsec;
	hi = (int64_t)after.tv_sec * 1000000000 + after.tv_nsec;
	assert_true(at >= lo + 2999000000LL && at <= hi + 2999000000LL);
	left = sn_clock_wall_left_ms(&ts);
	assert_true(left >= 1 && left <= 2999);

	sn_clock_wall_after(-5000, &ts);
	assert_int_equal(sn_clock_wall_left_ms(&ts), 0);
	/* A borrow from tv_sec (unless now's tv_nsec is past 999 ms): a
	 * past deadline POSIX still accepts. */
	clock_gettime(CLOCK_REALTIME, &before);
	sn_clock_wall_after(-1999, &ts);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	lo = (int64_t)before.tv_sec * 1000000000 + before.tv_nsec;
	assert_true(at >= lo - 1999000000LL && at < lo - 1899000000LL);
	assert_int_equal(sn_clock_wall_left_ms(&ts), 0);
	sn_clock_wall_after(0, &ts);
	assert_int_equal(sn_clock_wall_left_ms(&ts), 0);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* The watchdog's sleep ends at its deadline, not at a signal. */
static void test_deadline_sleep(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval every_ms = { { 0, 1000 }, { 0, 1000 } }, off = { 0 };
	struct sn_deadline d;

	(void)state;
	sigemptyset(&sa.sa_mask);	/* no SA_RESTART: EINTR */
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &every_ms, NULL), 0);
	d = sn_deadline_in(30);
	sn_deadline_sleep(d);
	setitimer(ITIMER_REAL, &off, NULL);
	/*
	 * on_alarm stays installed: a tick already generated can still be
	 * delivered after the timer is off (valgrind delivers signals late),
	 * and with the default action restored it killed the test (exit 142).
	 */
	assert_true(sn_deadline_expired(d));
	assert_int_equal(sn_deadline_left_ms(d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_reads),
		cmocka_unit_test(test_deadline_arithmetic),
		cmocka_unit_test(test_deadline_past),
		cmocka_unit_test(test_deadline_future),
		cmocka_unit_test(test_deadline_sleep),
		cmocka_unit_test(test_wall_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
