/* SPDX-License-Identifier: MIT */
/*
 * nccl.h declares ncclGroupStart() and friends with an empty parameter
 * list, which -Wstrict-prototypes rejects; include it through here.
 */
#ifndef WU_NCCL_API_H
#define WU_NCCL_API_H

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#endif
