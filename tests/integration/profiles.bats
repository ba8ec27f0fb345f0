#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# --nccl-profile on a one-node cluster: srun and salloc, the env-var form,
# precedence, merging, every refusal, list, rules.  The shipped profile
# file (etc/nccl-profiles.conf) provides nccl-cumem-off,
# expandable-segments and ppo-tree; tests needing conflicts and rules use
# their own file (sn_write_test_profiles).

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { sn_test_setup; }

@test "srun --help lists --nccl-profile and --nccl-warmup" {
	run --separate-stderr sn_timeout srun --help
	sn_assert_status 0
	grep -q -- '--nccl-profile' <<<"$output" ||
		sn_fail "--nccl-profile missing from srun --help"
	grep -q -- '--nccl-warmup' <<<"$output" ||
		sn_fail "--nccl-warmup missing from srun --help"
}

@test "sbatch --help and salloc --help list --nccl-profile" {
	local cmd
	for cmd in sbatch salloc; do
		run --separate-stderr sn_timeout "$cmd" --help
		sn_assert_status 0
		grep -q -- '--nccl-profile' <<<"$output" ||
			sn_fail "--nccl-profile missing from $cmd --help"
	done
}

@test "no option: the plugin changes nothing and says nothing" {
	run --separate-stderr sn_srun env
	sn_assert_status 0
	sn_assert_env_absent NCCL_CUMEM_ENABLE
	sn_assert_env_absent PYTORCH_CUDA_ALLOC_CONF
	sn_assert_no_msgs
}

@test "srun --nccl-profile=nccl-cumem-off: one task gets NCCL_CUMEM_ENABLE=0" {
	run --separate-stderr sn_srun --nccl-profile=nccl-cumem-off env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1
	sn_assert_no_msgs
}

@test "srun -n4 --nccl-profile=nccl-cumem-off: every task gets it" {
	run --separate-stderr sn_srun -n4 --nccl-profile=nccl-cumem-off env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 4
}

@test "two profiles at once: both applied" {
	run --separate-stderr sn_srun -n2 \
		--nccl-profile=nccl-cumem-off,expandable-segments env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 2
	sn_assert_env_all PYTORCH_CUDA_ALLOC_CONF expandable_segments:True 2
	sn_assert_env_all PYTORCH_ALLOC_CONF expandable_segments:True 2
}

@test "env-var form: SPANK_NCCL_PROFILE=nccl-cumem-off srun env" {
	SPANK_NCCL_PROFILE=nccl-cumem-off run --separate-stderr sn_srun -n2 env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 2
}

@test "command line wins over SPANK_NCCL_PROFILE" {
	SPANK_NCCL_PROFILE=ppo-tree run --separate-stderr \
		sn_srun --nccl-profile=nccl-cumem-off env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1
	sn_assert_env_absent NCCL_ALGO
}

@test "user's NCCL_ALGO=Ring wins over ppo-tree, and the user is told" {
	NCCL_ALGO=Ring run --separate-stderr \
		sn_srun -n2 --nccl-profile=ppo-tree env
	sn_assert_status 0
	sn_assert_env_all NCCL_ALGO Ring 2
	sn_assert_msg 'NCCL_ALGO'
	# Told once per step, not once per task.
	[ "$(sn_count_msgs 'NCCL_ALGO')" -eq 1 ] ||
		sn_fail "NCCL_ALGO notice printed $(sn_count_msgs NCCL_ALGO) times"
}

@test "ppo-tree alone sets NCCL_ALGO" {
	run --separate-stderr sn_srun --nccl-profile=ppo-tree env
	sn_assert_status 0
	[ -n "$(sn_env_value NCCL_ALGO "$output")" ] ||
		sn_fail "NCCL_ALGO not set by ppo-tree"
	grep -qi '^NCCL_ALGO=.*tree' <<<"$output" ||
		sn_fail "NCCL_ALGO does not select tree"
}

@test "merge into the user's PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF" {
	PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 \
	PYTORCH_ALLOC_CONF=max_split_size_mb:128 \
		run --separate-stderr \
		sn_srun --nccl-profile=expandable-segments env
	sn_assert_status 0
	sn_assert_env_all PYTORCH_CUDA_ALLOC_CONF \
		max_split_size_mb:128,expandable_segments:True 1
	sn_assert_env_all PYTORCH_ALLOC_CONF \
		max_split_size_mb:128,expandable_segments:True 1
}

# PyTorch reads both names, the version decides which wins: the tasks get
# the user's value under both, and the one notice says so.
@test "merge keeps the user's expandable_segments:False under either name, for both names" {
	local mine other
	for mine in PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF; do
		other=PYTORCH_ALLOC_CONF
		[ "$mine" = PYTORCH_ALLOC_CONF ] && other=PYTORCH_CUDA_ALLOC_CONF
		export "$mine=expandable_segments:False"
		run --separate-stderr \
			sn_srun --nccl-profile=expandable-segments env
		unset "$mine"
		sn_assert_status 0
		sn_assert_env_all PYTORCH_CUDA_ALLOC_CONF expandable_segments:False 1
		sn_assert_env_all PYTORCH_ALLOC_CONF expandable_segments:False 1
		sn_assert_env_all NCCL_GRAPH_REGISTER 0 1
		[ "$(sn_count_msgs 'keeping yours')" -eq 1 ] ||
			sn_fail "$mine: expected one notice"
		sn_assert_msg "^spank-nccl: $mine in your environment has \"expandable_segments:False\"; profile \"expandable-segments\" wants \"expandable_segments:True\": keeping yours, also as $other \\(the same setting\\)"
	done
	# The user's other keys under one name reach both, with the profile's.
	PYTORCH_ALLOC_CONF=max_split_size_mb:64 run --separate-stderr \
		sn_srun --nccl-profile=expandable-segments env
	sn_assert_status 0
	sn_assert_env_all PYTORCH_CUDA_ALLOC_CONF \
		max_split_size_mb:64,expandable_segments:True 1
	sn_assert_env_all PYTORCH_ALLOC_CONF \
		max_split_size_mb:64,expandable_segments:True 1
	sn_assert_no_msgs
}

@test "refused: unknown profile (srun, sbatch, salloc) lists known ones" {
	local before cmd
	before=$(sn_jobs_snapshot)
	for cmd in srun sbatch salloc; do
		if [ "$cmd" = sbatch ]; then
			run --separate-stderr sn_sbatch --nccl-profile=no-such-profile \
				--wrap true
		else
			run --separate-stderr sn_timeout "$cmd" \
				--nccl-profile=no-such-profile true </dev/null
		fi
		sn_assert_status 255
		sn_assert_msg 'no-such-profile'
		sn_assert_msg 'nccl-cumem-off'
		sn_assert_msg 'expandable-segments'
	done
	sn_assert_no_new_jobs "$before"
}

@test "refused: two conflicting profiles, both named" {
	local before cmd
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	before=$(sn_jobs_snapshot)
	for cmd in srun salloc sbatch; do
		if [ "$cmd" = sbatch ]; then
			run --separate-stderr sn_sbatch --nccl-profile=alpha,beta \
				--wrap true
		else
			run --separate-stderr sn_timeout "$cmd" \
				--nccl-profile=alpha,beta true </dev/null
		fi
		sn_assert_status 255
		sn_assert_msg 'alpha'
		sn_assert_msg 'beta'
		sn_assert_msg 'SN_TEST_SHARED'
	done
	sn_assert_no_new_jobs "$before"
}

@test "non-conflicting test profiles combine" {
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	run --separate-stderr sn_srun --nccl-profile=alpha,gamma env
	sn_assert_status 0
	sn_assert_env_all SN_TEST_ALPHA a1 1
	sn_assert_env_all SN_TEST_GAMMA g1 1
	sn_assert_env_all SN_TEST_SHARED alpha 1
}

@test "refused: malformed values exit 255 with a spank-nccl message" {
	local before value
	before=$(sn_jobs_snapshot)
	for value in '--nccl-profile=a b' '--nccl-profile=' \
		     '--nccl-profile=,' '--nccl-profile=../etc' \
		     '--nccl-warmup=bogus' '--nccl-warmup=comm,loud'; do
		run --separate-stderr sn_srun "$value" true
		[ "$status" -eq 255 ] ||
			sn_fail "srun '$value': exit $status, expected 255"
		sn_assert_msg '.'
		run --separate-stderr sn_sbatch "$value" --wrap true
		[ "$status" -eq 255 ] ||
			sn_fail "sbatch '$value': exit $status, expected 255"
		sn_assert_msg '.'
		run --separate-stderr sn_salloc "$value" true
		[ "$status" -eq 255 ] ||
			sn_fail "salloc '$value': exit $status, expected 255"
		sn_assert_msg '.'
	done
	sn_assert_no_new_jobs "$before"
}

@test "refused: env-var form with an unknown profile exits 1" {
	local before
	before=$(sn_jobs_snapshot)
	SPANK_NCCL_PROFILE=no-such-profile run --separate-stderr sn_srun true
	sn_assert_status 1
	sn_assert_msg 'SPANK_NCCL_PROFILE'
	sn_assert_msg 'no-such-profile'
	SPANK_NCCL_PROFILE=no-such-profile run --separate-stderr \
		sn_sbatch --wrap true
	sn_assert_status 1
	sn_assert_msg 'no-such-profile'
	SPANK_NCCL_WARMUP=bogus run --separate-stderr sn_srun true
	sn_assert_status 1
	sn_assert_msg 'SPANK_NCCL_WARMUP'
	sn_assert_no_new_jobs "$before"
}

@test "--nccl-profile=list prints profiles and descriptions, runs nothing" {
	local before marker="$SN_CLUSTER_DIR/tmp/list-ran"
	rm -f "$marker"
	before=$(sn_jobs_snapshot)
	run --separate-stderr sn_srun --nccl-profile=list touch "$marker"
	sn_assert_status 0
	local all="$output$stderr"
	grep -q 'nccl-cumem-off' <<<"$all" || sn_fail "nccl-cumem-off not listed"
	grep -q 'expandable-segments' <<<"$all" ||
		sn_fail "expandable-segments not listed"
	grep -q 'ppo-tree' <<<"$all" || sn_fail "ppo-tree not listed"
	[ ! -e "$marker" ] || sn_fail "the command ran"
	# Every variable a profile sets, under its description (issue 31).
	grep -qxF '                           merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True; merge PYTORCH_ALLOC_CONF expandable_segments:True; default NCCL_GRAPH_REGISTER=0' <<<"$output" ||
		sn_fail "expandable-segments' operations not listed"
	grep -q '\*' <<<"$output" && sn_fail "a site default marked, none set"
	# The site's defaults are marked, and the mark explained.
	sn_plugstack_set default_profiles=quiet-logs
	run --separate-stderr sn_srun --nccl-profile=list true
	sn_assert_status 0
	grep -qE '^  quiet-logs \* +NCCL_DEBUG=WARN' <<<"$output" ||
		sn_fail "quiet-logs not marked as a site default"
	[ "$(grep -c '\*' <<<"$output")" -eq 2 ] || sn_fail "expected one mark"
	grep -qxF '  * a site default: applied to every step (default_profiles=) unless --nccl-profile=none' <<<"$output" ||
		sn_fail "the mark is not explained"
	# Descriptions come from the file: use the test file to know them.
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	run --separate-stderr sn_sbatch --nccl-profile=list --wrap "touch $marker"
	sn_assert_status 0
	grep -q 'alpha.*test profile alpha' <<<"$output$stderr" ||
		sn_fail "description of alpha not listed"
	grep -q 'gamma.*test profile gamma' <<<"$output$stderr" ||
		sn_fail "description of gamma not listed"
	run --separate-stderr sn_salloc --nccl-profile=list touch "$marker"
	sn_assert_status 0
	grep -q 'beta' <<<"$output$stderr" || sn_fail "salloc: beta not listed"
	[ ! -e "$marker" ] || sn_fail "the command ran"
	sn_assert_no_new_jobs "$before"
}

@test "salloc --nccl-profile: srun inside the allocation gets the profile" {
	run --separate-stderr sn_salloc -n2 --nccl-profile=nccl-cumem-off \
		timeout 20 srun env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 2
}

@test "salloc running a script: inherited, and a step's own flag overrides" {
	local script
	script=$(sn_batch_script salloc-steps.sh <<'S'
#!/bin/bash
echo "== inherit"
timeout 20 srun env
echo "== override"
timeout 20 srun --nccl-profile=ppo-tree env
S
)
	run --separate-stderr sn_salloc --nccl-profile=nccl-cumem-off "$script"
	sn_assert_status 0
	local inherit override
	inherit=$(sed -n '/^== inherit/,/^== override/p' <<<"$output")
	override=$(sed -n '/^== override/,$p' <<<"$output")
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1 "$inherit"
	[ -n "$(sn_env_value NCCL_ALGO "$override")" ] ||
		sn_fail "override step lacks ppo-tree's NCCL_ALGO"
	sn_assert_env_absent NCCL_CUMEM_ENABLE "$override"
}

@test "a job run as the unprivileged user gets the profile" {
	run --separate-stderr sn_as_user timeout 30 srun -n2 \
		--nccl-profile=nccl-cumem-off env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 2
	sn_assert_env_all USER "$SN_USER" 2
}

@test "srun --export=NONE still gets the profile" {
	run --separate-stderr sn_srun --export=NONE \
		--nccl-profile=nccl-cumem-off /usr/bin/env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1
}

@test "site default_profiles apply to every step; 'none' drops them" {
	sn_plugstack_set default_profiles=nccl-cumem-off
	run --separate-stderr sn_srun env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1
	run --separate-stderr sn_srun --nccl-profile=none env
	sn_assert_status 0
	sn_assert_env_absent NCCL_CUMEM_ENABLE
	run --separate-stderr sn_srun --nccl-profile=ppo-tree env
	sn_assert_status 0
	sn_assert_env_all NCCL_CUMEM_ENABLE 0 1
	[ -n "$(sn_env_value NCCL_ALGO "$output")" ] || sn_fail "no NCCL_ALGO"
}

@test "broken profile file: refused with file:line" {
	local bad="$SN_CLUSTER_DIR/etc/broken-profiles.conf" before
	printf '[profile ok]\nset A=1\nthis line is not valid\n' >"$bad"
	chmod 0644 "$bad"
	sn_plugstack_set "profiles=$bad"
	before=$(sn_jobs_snapshot)
	run --separate-stderr sn_srun --nccl-profile=ok true
	[ "$status" -ne 0 ] || sn_fail "srun accepted a broken profile file"
	sn_assert_msg "broken-profiles\.conf:3"
	sn_assert_no_new_jobs "$before"
}

# A typo in the site's file must not stop every step: with
# default_profiles= set, a step that asked for no profile runs without
# them, and its user is told once whose file is broken and who to tell;
# one that asked for a profile is refused, told the same.
@test "broken site profile file with default_profiles: steps that asked for none run, warned once; an explicit profile is refused" {
	local bad="$SN_CLUSTER_DIR/etc/typo-profiles.conf" out id warn n
	# The shipped file with its first "set" mistyped "sett".
	n=$(grep -n -m1 '^set ' "$(sn_profiles_path)" | cut -d: -f1)
	sed "${n}s/^set /sett /" "$(sn_profiles_path)" >"$bad"
	chmod 0644 "$bad"
	sn_plugstack_set "profiles=$bad" default_profiles=nccl-cumem-off
	warn="spank-nccl: warning: site default profiles not applied: broken site file $bad:$n: unknown directive \"sett\""
	run --separate-stderr sn_srun -n2 env
	sn_assert_status 0
	sn_assert_env_absent NCCL_CUMEM_ENABLE
	[[ $stderr == "$warn"*"; tell your admins" ]] ||
		sn_fail "warning: $stderr"
	[ "$(sn_count_msgs 'site default profiles not applied' "$stderr")" -eq 1 ] ||
		sn_fail "not one warning: $stderr"
	# sbatch: warned at submission, the job runs.
	out=$(sn_sbatch --parsable -o "$SN_CLUSTER_DIR/tmp/typo-%j.out" \
		--wrap "env" 2>&1) || sn_fail "sbatch failed: $out"
	[[ $out == "$warn"* ]] || sn_fail "sbatch: $out"
	id=${out##*$'\n'}
	id=${id%%;*}
	sn_wait_job "$id" || sn_fail "job $id did not end"
	[ "$(sn_job_exit_code "$id")" = 0:0 ] ||
		sn_fail "job $id: $(sn_job_exit_code "$id")"
	run --separate-stderr sn_srun --nccl-profile=nccl-cumem-off true
	[ "$status" -ne 0 ] || sn_fail "srun ran an explicit profile from a broken file"
	[[ $stderr == *"spank-nccl: --nccl-profile: broken site file $bad:$n: unknown directive \"sett\""*"; tell your admins"* ]] ||
		sn_fail "error: $stderr"
}

@test "missing profile file: refused, naming the file" {
	local before
	sn_plugstack_set "profiles=$SN_CLUSTER_DIR/etc/does-not-exist.conf"
	before=$(sn_jobs_snapshot)
	run --separate-stderr sn_srun --nccl-profile=nccl-cumem-off true
	[ "$status" -ne 0 ] || sn_fail "srun accepted a missing profile file"
	sn_assert_msg 'does-not-exist\.conf'
	sn_assert_no_new_jobs "$before"
}

@test "warning rule: printed once at step start (-n1 and -n4)" {
	local n
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	for n in 1 4; do
		NCCL_DEBUG=INFO run --separate-stderr \
			sn_srun -n"$n" --nccl-profile=alpha env
		sn_assert_status 0
		sn_assert_env_all NCCL_DEBUG INFO "$n"
		sn_assert_env_all SN_TEST_ALPHA a1 "$n"
		[ "$(sn_count_msgs 'NCCL_DEBUG=INFO')" -eq 1 ] ||
			sn_fail "-n$n: warning printed $(sn_count_msgs 'NCCL_DEBUG=INFO') times"
	done
}

@test "error rule: refused at submit time, nothing queued" {
	local before
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	before=$(sn_jobs_snapshot)
	SN_TEST_FORBID=1 run --separate-stderr sn_srun --nccl-profile=gamma true
	sn_assert_status 255
	sn_assert_msg 'forbidden-combination|cannot be combined'
	sn_assert_no_new_jobs "$before"
	# Without the forbidden variable the same request runs.
	run --separate-stderr sn_srun --nccl-profile=gamma true
	sn_assert_status 0
}
