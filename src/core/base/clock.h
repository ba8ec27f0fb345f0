/* SPDX-License-Identifier: MIT */
#ifndef SN_CLOCK_H
#define SN_CLOCK_H

/*
 * Monotonic milliseconds (CLOCK_MONOTONIC): deadlines and durations are
 * immune to wall-clock changes.  The one clock of the plugin and helper.
 */
double sn_clock_ms(void);

#endif
