#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# --nccl-profile through sbatch: #SBATCH directives, the batch step, the
# steps inside, refusals of directives, and batch jobs of an unprivileged
# user.

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { sn_test_setup; }

@test "#SBATCH --nccl-profile: batch env, inherited by srun, overridden by srun's own" {
	local script batch inherit override
	script=$(sn_batch_script directive.sh <<'S'
#!/bin/bash
#SBATCH --nccl-profile=nccl-cumem-off
#SBATCH -n2
echo "== batch"
env
echo "== inherit"
srun -n2 env
echo "== override"
srun -n1 --nccl-profile=ppo-tree env
echo "== end"
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	batch=$(sed -n '/^== batch/,/^== inherit/p' <<<"$SN_JOB_OUT")
	inherit=$(sed -n '/^== inherit/,/^== override/p' <<<"$SN_JOB_OUT")
	override=$(sed -n '/^== override/,/^== end/p' <<<"$SN_JOB_OUT")
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1 "$batch"
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 2 "$inherit"
	[ -n "$(sn_env_value NCCL_ALGO "$override")" ] ||
		sn_fail "override step lacks ppo-tree's NCCL_ALGO: $override"
	sn_assert_env_absent NCCL_CUMEM_ENABLE "$override"
}

@test "sbatch --nccl-profile on the command line reaches the batch step" {
	local script
	script=$(sn_batch_script cmdline.sh <<'S'
#!/bin/bash
echo "== batch"
env
echo "== step"
srun env
S
)
	sn_sbatch_run --nccl-profile=expandable-segments "$script" ||
		sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT"
	# Once in the batch env, once in the step.
	sn_assert_env_all PYTORCH_CUDA_ALLOC_CONF expandable_segments:True 2 \
		"$SN_JOB_OUT"
}

@test "SPANK_NCCL_PROFILE in sbatch's environment reaches the job" {
	local script
	script=$(sn_batch_script envform.sh <<'S'
#!/bin/bash
srun env
S
)
	SPANK_NCCL_PROFILE=nccl-cumem-off sn_sbatch_run "$script" ||
		sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT"
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1 "$SN_JOB_OUT"
}

@test "#SBATCH with an unknown profile: sbatch exits 255, nothing queued" {
	local script before
	script=$(sn_batch_script bad-directive.sh <<'S'
#!/bin/bash
#SBATCH --nccl-profile=no-such-profile
env
S
)
	before=$(sn_jobs_snapshot)
	run --separate-stderr sn_sbatch "$script"
	sn_assert_status 255
	sn_assert_msg 'no-such-profile'
	sn_assert_no_new_jobs "$before"
}

@test "#SBATCH with a malformed --nccl-warmup: sbatch exits 255, nothing queued" {
	local script before
	script=$(sn_batch_script bad-warmup.sh <<'S'
#!/bin/bash
#SBATCH --nccl-warmup=sometimes
env
S
)
	before=$(sn_jobs_snapshot)
	run --separate-stderr sn_sbatch "$script"
	sn_assert_status 255
	sn_assert_msg 'sometimes|nccl-warmup'
	sn_assert_no_new_jobs "$before"
}

@test "a batch job of the unprivileged user gets the profile in every step" {
	local script out id
	script=$(sn_batch_script user.sh <<'S'
#!/bin/bash
#SBATCH --nccl-profile=nccl-cumem-off
id -un
env
srun env
S
)
	out=$(cd "$SN_CLUSTER_DIR/tmp" && sn_as_user timeout 30 sbatch \
		--parsable -o "$SN_CLUSTER_DIR/tmp/user-%j.out" "$script") ||
		sn_fail "sbatch as $SN_USER failed"
	id=${out%%;*}
	sn_wait_job "$id" || sn_fail "job $id did not finish"
	out=$(cat "$SN_CLUSTER_DIR/tmp/user-$id.out")
	[ "$(sn_job_exit_code "$id")" = "0:0" ] || sn_fail "job failed: $out"
	grep -qx "$SN_USER" <<<"$out" || sn_fail "not run as $SN_USER: $out"
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 2 "$out"
}

@test "warning rule in a batch job: once per step" {
	local script
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	script=$(sn_batch_script warn.sh <<'S'
#!/bin/bash
#SBATCH --nccl-profile=alpha
#SBATCH -n2
export NCCL_DEBUG=INFO
srun -n2 true
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT"
	[ "$(sn_count_msgs 'NCCL_DEBUG=INFO' "$SN_JOB_OUT")" -eq 1 ] ||
		sn_fail "warning count wrong in: $SN_JOB_OUT"
}
