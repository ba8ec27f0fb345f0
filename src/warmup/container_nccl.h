/* SPDX-License-Identifier: MIT */
/* The NCCL of a running container (container_nccl.c, --container-pid). */
#ifndef WU_CONTAINER_NCCL_H
#define WU_CONTAINER_NCCL_H

#include "warmup.h"

/*
 * Takes the container's NCCL_* variables into this process and finds its
 * libnccl.so.2 (FILE: a /proc/PID/root/... path).  OK with FILE "" when
 * there is none in check mode; otherwise a failure naming the image.
 */
int wu_container_find_nccl(struct wu_run *run, char *file, size_t len);
/* --container-image, or "(unnamed)". */
const char *wu_container_image(const struct wu_run *run);
/* Strips the /proc/PID/root prefix off PATH, in place. */
void wu_container_path(const struct wu_run *run, char *path);

#endif
