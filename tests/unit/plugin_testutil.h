/* SPDX-License-Identifier: MIT */
/*
 * The fixture and step runners shared by the plugin's hook tests
 * (plugin_testutil.c): CMocka setup/teardown, and the plugin driven
 * through the mock SPANK layer.
 */
#ifndef SN_PLUGIN_TESTUTIL_H
#define SN_PLUGIN_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "mock_spank.h"
#include "plugin.h"

struct fixture {
	char dir[64];
	char profiles[128];
	char helper[128];
	char arg_profiles[160];
	char arg_helper[160];
	char arg_reuse[160];
	struct sn_plugin p;
};

/* A failure is told in three lines: what, why, what to do (sn_fault_tell). */
#define FAILURE_LINES 3

#define assert_contains(hay, needle) assert_non_null(strstr((hay), (needle)))
#define assert_not_contains(hay, needle) assert_null(strstr((hay), (needle)))

void write_file(const char *path, const char *text, mode_t mode);
/* CMocka fixture: a temporary directory with the test profile file. */
int setup(void **state);
int teardown(void **state);
/* sn_plugin_init in CTX with the fixture's arguments and EXTRA_ARG. */
int init_with(struct fixture *fx, spank_context_t ctx,
	      char *const *env, const char *extra_arg);
const char *job_env(const char *name);

/* The fixture's helper: a shell script running BODY. */
void write_helper(struct fixture *fx, const char *body);
/* A one-node step with --nccl-warmup=VALUE; task_init's result. */
int run_warmup_step(struct fixture *fx, char *const *env,
		    const char *value, const char *extra_arg);
/* Lines in the helper's run log: how many times it ran. */
int helper_runs(struct fixture *fx);
/* A step of NNODES nodes on node NODE_ID: run_warmup_step's fabric form. */
int run_fabric_step(struct fixture *fx, char *const *env,
		    const char *value, const char *extra_arg,
		    uint32_t step_id, uint32_t node_id, uint32_t nnodes);
/* The helper's last command line, one space after each argument. */
void read_args(struct fixture *fx, char *args, size_t len);
/* Runs a passing step 7 (run_fabric_step); its helper's argv in ARGS. */
void fabric_args(struct fixture *fx, char *const *env,
		 const char *value, const char *extra_arg,
		 uint32_t node_id, uint32_t nnodes, char *args, size_t len);

#endif
