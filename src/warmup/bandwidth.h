/* SPDX-License-Identifier: MIT */
/* Step 4: time an all-reduce of --bytes and compare busbw to the floor. */
#ifndef WU_BANDWIDTH_H
#define WU_BANDWIDTH_H

#include "comm.h"

int wu_bandwidth(struct wu_run *run, struct wu_comm *c);

#endif
