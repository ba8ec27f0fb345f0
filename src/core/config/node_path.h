/* SPDX-License-Identifier: MIT */
/*
 * Per-node paths of plugstack keys such as record_file=: "%n" is the
 * node name and "%%" a percent sign, as in slurm.conf's SlurmdLogFile=,
 * so one setting gives each node its own file on a shared file system.
 */
#ifndef SN_NODE_PATH_H
#define SN_NODE_PATH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * PATTERN with "%n" replaced by NODE and "%%" by "%".  -1 if the
 * result does not fit or NODE could leave the directory.
 */
int sn_record_path(char *dst, size_t cap, const char *pattern,
		   const char *node);
/* Whether PATTERN uses only %n and %%; a config check. */
bool sn_record_path_valid(const char *pattern);

#endif
