#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Every way to give the two options, in every context, on the real
# cluster: {srun, sbatch + inner srun, salloc + inner srun, #SBATCH,
# environment variable} x {bare, each mode, mode+verbose, off, malformed}
# for --nccl-warmup and {one, several, none, list, unknown} for
# --nccl-profile, plus the overrides between levels, a mode typed after
# a bare --nccl-warmup (refused: srun would run it) and srun --help.  The bare
# "#SBATCH --nccl-warmup" cell is the issue-11 bug: Slurm hands the inner
# srun the text "(null)" (src/core/config/options.c).
#
# Each table row is one cell:
#   name | context | option | inner | rc | inner rc | message | tasks see | runs
#   context  srun, env (option is VAR=VALUE, inner is srun's own option),
#            sbatch (option on sbatch's command line), directive
#            (#SBATCH line), salloc (option on salloc's command line)
#   inner    the inner srun's own option (job contexts)
#   rc       exit code of srun / sbatch --wait (sn_sbatch_wait: the same
#            code without its 2-8-32 s polling) / salloc
#   inner rc the inner srun's exit code, "-" when there is none
#   message  ERE one spank-nccl line must match; "!" no spank-nccl line
#   tasks see
#            "no" (no task ran), or the SN_TEST_* names the task saw,
#            sorted, comma-separated ("" none; warmup cells: no profiles)
#   runs     B/S/R: warmups run in the batch step, in srun steps, and
#            reused (slurmd log); "-" when no job was created.  The fake
#            libcuda's log must show B+S runs.
# Only spank-nccl's own lines and exit codes are matched, never Slurm's
# wording, so the table holds for every Slurm release.  Cells run four at
# a time (four fake GPUs); every failing cell is reported.

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	M="$SN_CLUSTER_DIR/tmp/matrix-$BATS_TEST_NUMBER"
	rm -rf "$M"
	mkdir -p "$M"
	cat >"$M/task.sh" <<'T'
#!/bin/bash
echo "job=$SLURM_JOB_ID"
echo task-ran
echo "task-sees:$(env | sed -n 's/^SN_TEST_\([A-Z]*\)=.*/\1/p' | sort | paste -sd, -)"
T
	chmod 0755 "$M/task.sh"
	export SN_TIMEOUT=120
}

BATCH_STEP=4294967291

# run_cell NAME CTX OPT INNER GRES: runs one cell, output in $M/NAME.*
run_cell() {
	local name=$1 ctx=$2 opt=$3 inner=$4 gres=$5 out="$M/$1" script rc=0
	export FAKE_CUDA_LOG="$out.fake"
	case $ctx in
	srun)
		sn_srun -n1 $gres ${opt:+"$opt"} ${inner:+"$inner"} "$M/task.sh" ;;
	env)
		(export "$opt"
		 sn_srun -n1 $gres ${inner:+"$inner"} "$M/task.sh") ;;
	sbatch | directive)
		script="$out.sh"
		{
			echo '#!/bin/bash'
			[ "$ctx" = directive ] && echo "#SBATCH $opt"
			echo "srun -n1 ${inner:+"$inner"} $M/task.sh"
			echo 'echo "inner-rc=$?"'
		} >"$script"
		chmod 0755 "$script"
		if [ "$ctx" = sbatch ]; then
			sn_sbatch_wait -o "$out.job" $gres ${opt:+"$opt"} "$script"
		else
			sn_sbatch_wait -o "$out.job" $gres "$script"
		fi ;;
	salloc)
		sn_salloc $gres ${opt:+"$opt"} bash -c \
			"srun -n1 ${inner:+"$inner"} $M/task.sh; echo inner-rc=\$?" ;;
	esac >"$out.out" 2>&1 || rc=$?	# (bats runs us under set -e)
	echo "$rc" >"$out.rc"
}

# check_cell NAME RC INNER_RC MSG SEES RUNS: prints what is wrong.
check_cell() {
	local name=$1 rc=$2 irc=$3 msg=$4 sees=$5 runs=$6 out="$M/$1"
	local text got job b s r loads log
	text=$(cat "$out.out" "$out.job" 2>/dev/null)
	got=$(cat "$out.rc")
	[ "$got" = "$rc" ] || echo "exit code $got, expected $rc"
	got=$(sed -n 's/^inner-rc=//p' <<<"$text")
	[ "${got:--}" = "$irc" ] || echo "inner srun exit code ${got:--}, expected $irc"
	if [ "$msg" = "!" ]; then
		if grep -q 'spank-nccl' <<<"$text"; then
			echo "unexpected spank-nccl output"
		fi
	elif [ "$(sn_count_msgs "$msg" "$text")" -eq 0 ]; then
		echo "no spank-nccl line matching /$msg/"
	fi
	if [ "$sees" = no ]; then
		if grep -q '^task-ran' <<<"$text"; then
			echo "a task ran"
		fi
	elif ! grep -qx "task-sees:$sees" <<<"$text"; then
		echo "tasks saw [$(sed -n 's/^task-sees://p' <<<"$text" | paste -sd'|' -)], expected [$sees]"
	fi
	job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p; s/^job=\([0-9]*\)$/\1/p' \
		<<<"$text" | head -n1)
	loads=0
	[ ! -f "$out.fake" ] || loads=$(grep -c '^lib=cuda ' "$out.fake")
	if [ "$runs" = - ]; then
		[ -z "$job" ] || echo "job $job was created"
		[ "$loads" -eq 0 ] || echo "helper ran $loads times"
		return 0
	fi
	[ -n "$job" ] || { echo "no job id in the output"; return 0; }
	log=$(grep -aE "job $job step [0-9]+ on n1: nccl-warmup " "$(sn_slurmd_log n1)")
	b=$(grep -cE "step $BATCH_STEP on n1: nccl-warmup (passed|failed)" <<<"$log")
	s=$(grep -vE "step $BATCH_STEP " <<<"$log" | grep -cE 'nccl-warmup (passed|failed)')
	r=$(grep -c 'nccl-warmup reused' <<<"$log")
	[ "$b/$s/$r" = "$runs" ] || echo "runs $b/$s/$r (batch/steps/reused), expected $runs"
	[ "$loads" -eq $((b + s)) ] || echo "helper loaded $loads times, slurmd log says $((b + s))"
}

# Runs every row of table $1 (four at a time), then checks each; fails
# with every wrong cell.
run_matrix() {
	local table=$1 gres=$2 line name ctx opt inner rc irc msg sees runs
	local running=0 problems report="" n=0
	while IFS='|' read -r name ctx opt inner rc irc msg sees runs; do
		name=$(echo $name)
		[ -n "$name" ] && [ "${name:0:1}" != "#" ] || continue
		if ((running >= 4)); then
			wait -n || true
			running=$((running - 1))
		fi
		run_cell "$name" "$(echo $ctx)" "$(echo $opt)" "$(echo $inner)" "$gres" &
		running=$((running + 1))
	done <<<"$table"
	wait || true
	while IFS='|' read -r name ctx opt inner rc irc msg sees runs; do
		name=$(echo $name)
		[ -n "$name" ] && [ "${name:0:1}" != "#" ] || continue
		n=$((n + 1))
		problems=$(check_cell "$name" "$(echo $rc)" "$(echo $irc)" \
			"$(echo "$msg" | sed 's/^ *//; s/ *$//')" "$(echo $sees)" \
			"$(echo $runs)")
		[ -z "$problems" ] ||
			report+="cell $name ($(echo $ctx) $(echo $opt) $(echo $inner)):"$'\n'"$(sed 's/^/    /' <<<"$problems")"$'\n'"    output: $(cat "$M/$name.out" "$M/$name.job" 2>/dev/null | head -n 8 | paste -sd'|' -)"$'\n'
	done <<<"$table"
	echo "# $n cells" >&3
	[ -z "$report" ] || sn_fail "wrong cells:"$'\n'"$report"
}

# Quiet success: the helper's summary only with verbose.
OK='!'
UNKNOWN='unknown word "fast"'
VERBOSE='warmup ok on n1'
TRAP='"--nccl-warmup comm" runs the program "comm"; write --nccl-warmup=comm$'

@test "matrix: --nccl-warmup in every context (bare, modes, verbose, off, malformed)" {
	sn_fake_env ok
	run_matrix "
# name       | ctx       | option                    | inner | rc  | irc | message | sees | runs
s-bare       | srun      | --nccl-warmup             |       | 0   | -   | $OK     |      | 0/1/0
s-check      | srun      | --nccl-warmup=check       |       | 0   | -   | $OK     |      | 0/1/0
s-comm       | srun      | --nccl-warmup=comm        |       | 0   | -   | $OK     |      | 0/1/0
s-bw         | srun      | --nccl-warmup=bandwidth   |       | 0   | -   | $OK     |      | 0/1/0
s-fabric     | srun      | --nccl-warmup=fabric      |       | 0   | -   | $OK     |      | 0/1/0
s-fabric-v   | srun      | --nccl-warmup=fabric,verbose,fresh | | 0 | - | $VERBOSE|      | 0/1/0
s-verbose    | srun      | --nccl-warmup=comm,verbose|       | 0   | -   | $VERBOSE|      | 0/1/0
s-off        | srun      | --nccl-warmup=off         |       | 0   | -   | $OK     |      | 0/0/0
s-bad        | srun      | --nccl-warmup=fast        |       | 255 | -   | $UNKNOWN| no   | -
# A word after a space is srun's command (issue 25): a mode there is refused.
s-trap       | srun      | --nccl-warmup             | comm  | 255 | -   | $TRAP   | no   | -
s-trap-list  | srun      | --nccl-warmup             | check,verbose | 255 | - | runs the program \"check,verbose\"; write --nccl-warmup=check,verbose | no | -
s-then-opt   | srun      | --nccl-warmup             | -n1   | 0   | -   | $OK     |      | 0/1/0
e-bare       | env       | SPANK_NCCL_WARMUP=        |       | 0   | -   | $OK     |      | 0/1/0
e-check      | env       | SPANK_NCCL_WARMUP=check   |       | 0   | -   | $OK     |      | 0/1/0
e-comm       | env       | SPANK_NCCL_WARMUP=comm    |       | 0   | -   | $OK     |      | 0/1/0
e-bw         | env       | SPANK_NCCL_WARMUP=bandwidth |     | 0   | -   | $OK     |      | 0/1/0
e-fabric     | env       | SPANK_NCCL_WARMUP=fabric  |       | 0   | -   | $OK     |      | 0/1/0
e-verbose    | env       | SPANK_NCCL_WARMUP=check,verbose | | 0   | -   | $VERBOSE|      | 0/1/0
e-off        | env       | SPANK_NCCL_WARMUP=off     |       | 0   | -   | $OK     |      | 0/0/0
e-bad        | env       | SPANK_NCCL_WARMUP=fast    |       | 1   | -   | SPANK_NCCL_WARMUP=fast: .*$UNKNOWN | no | -
b-bare       | sbatch    | --nccl-warmup             |       | 0   | 0   | $OK     |      | 1/0/1
b-check      | sbatch    | --nccl-warmup=check       |       | 0   | 0   | $OK     |      | 1/0/1
b-comm       | sbatch    | --nccl-warmup=comm        |       | 0   | 0   | $OK     |      | 1/0/1
b-bw         | sbatch    | --nccl-warmup=bandwidth   |       | 0   | 0   | $OK     |      | 1/0/1
# A fabric pass is never reused: the batch step and the inner srun each run it.
b-fabric     | sbatch    | --nccl-warmup=fabric      |       | 0   | 0   | $OK     |      | 1/1/0
b-verbose    | sbatch    | --nccl-warmup=comm,verbose|       | 0   | 0   | reused the comm-mode pass of step batch | | 1/0/1
b-off        | sbatch    | --nccl-warmup=off         |       | 0   | 0   | $OK     |      | 0/0/0
b-bad        | sbatch    | --nccl-warmup=fast        |       | 255 | -   | $UNKNOWN| no   | -
d-bare       | directive | --nccl-warmup             |       | 0   | 0   | $OK     |      | 1/0/1
d-check      | directive | --nccl-warmup=check       |       | 0   | 0   | $OK     |      | 1/0/1
d-comm       | directive | --nccl-warmup=comm        |       | 0   | 0   | $OK     |      | 1/0/1
d-bw         | directive | --nccl-warmup=bandwidth   |       | 0   | 0   | $OK     |      | 1/0/1
d-fabric     | directive | --nccl-warmup=fabric      |       | 0   | 0   | $OK     |      | 1/1/0
d-verbose    | directive | --nccl-warmup=check,verbose |     | 0   | 0   | $VERBOSE|      | 1/0/1
d-off        | directive | --nccl-warmup=off         |       | 0   | 0   | $OK     |      | 0/0/0
d-bad        | directive | --nccl-warmup=fast        |       | 255 | -   | $UNKNOWN| no   | -
a-bare       | salloc    | --nccl-warmup             |       | 0   | 0   | $OK     |      | 0/1/0
a-check      | salloc    | --nccl-warmup=check       |       | 0   | 0   | $OK     |      | 0/1/0
a-comm       | salloc    | --nccl-warmup=comm        |       | 0   | 0   | $OK     |      | 0/1/0
a-bw         | salloc    | --nccl-warmup=bandwidth   |       | 0   | 0   | $OK     |      | 0/1/0
a-fabric     | salloc    | --nccl-warmup=fabric      |       | 0   | 0   | $OK     |      | 0/1/0
a-verbose    | salloc    | --nccl-warmup=comm,verbose|       | 0   | 0   | $VERBOSE|      | 0/1/0
a-off        | salloc    | --nccl-warmup=off         |       | 0   | 0   | $OK     |      | 0/0/0
a-bad        | salloc    | --nccl-warmup=fast        |       | 255 | -   | $UNKNOWN| no   | -
" --gres=gpu:1
}

@test "matrix: --nccl-profile in every context (one, several, none, list, unknown)" {
	local conf
	conf=$(sn_write_test_profiles)
	sn_plugstack_set "profiles=$conf" default_profiles=gamma
	run_matrix "
# name       | ctx       | option                         | inner | rc  | irc | message | sees | runs
s-default    | srun      |                                |       | 0   | -   | $OK | GAMMA | 0/0/0
s-one        | srun      | --nccl-profile=beta            |       | 0   | -   | $OK | BETA,GAMMA,SHARED | 0/0/0
s-several    | srun      | --nccl-profile=alpha,gamma     |       | 0   | -   | $OK | ALPHA,GAMMA,SHARED | 0/0/0
s-none       | srun      | --nccl-profile=none            |       | 0   | -   | $OK |      | 0/0/0
s-list       | srun      | --nccl-profile=list            |       | 0   | -   | profiles in .*test-profiles.conf | no | -
s-unknown    | srun      | --nccl-profile=nosuch          |       | 255 | -   | unknown profile \"nosuch\" | no | -
# Its value is required: after a space it is still the value, no trap.
s-space      | srun      | --nccl-profile                 | beta  | 0   | -   | $OK | BETA,GAMMA,SHARED | 0/0/0
s-list-space | srun      | --nccl-profile                 | list  | 0   | -   | profiles in .*test-profiles.conf | no | -
e-one        | env       | SPANK_NCCL_PROFILE=beta        |       | 0   | -   | $OK | BETA,GAMMA,SHARED | 0/0/0
e-several    | env       | SPANK_NCCL_PROFILE=alpha,gamma |       | 0   | -   | $OK | ALPHA,GAMMA,SHARED | 0/0/0
e-none       | env       | SPANK_NCCL_PROFILE=none        |       | 0   | -   | $OK |      | 0/0/0
e-list       | env       | SPANK_NCCL_PROFILE=list        |       | 0   | -   | profiles in .*test-profiles.conf | no | -
e-unknown    | env       | SPANK_NCCL_PROFILE=nosuch      |       | 1   | -   | SPANK_NCCL_PROFILE: unknown profile \"nosuch\" | no | -
b-one        | sbatch    | --nccl-profile=beta            |       | 0   | 0   | $OK | BETA,GAMMA,SHARED | 0/0/0
b-several    | sbatch    | --nccl-profile=alpha,gamma     |       | 0   | 0   | $OK | ALPHA,GAMMA,SHARED | 0/0/0
b-none       | sbatch    | --nccl-profile=none            |       | 0   | 0   | $OK |      | 0/0/0
b-list       | sbatch    | --nccl-profile=list            |       | 0   | -   | profiles in .*test-profiles.conf | no | -
b-unknown    | sbatch    | --nccl-profile=nosuch          |       | 255 | -   | unknown profile \"nosuch\" | no | -
d-one        | directive | --nccl-profile=beta            |       | 0   | 0   | $OK | BETA,GAMMA,SHARED | 0/0/0
d-several    | directive | --nccl-profile=alpha,gamma     |       | 0   | 0   | $OK | ALPHA,GAMMA,SHARED | 0/0/0
d-none       | directive | --nccl-profile=none            |       | 0   | 0   | $OK |      | 0/0/0
d-list       | directive | --nccl-profile=list            |       | 0   | -   | profiles in .*test-profiles.conf | no | -
d-unknown    | directive | --nccl-profile=nosuch          |       | 255 | -   | unknown profile \"nosuch\" | no | -
a-one        | salloc    | --nccl-profile=beta            |       | 0   | 0   | $OK | BETA,GAMMA,SHARED | 0/0/0
a-several    | salloc    | --nccl-profile=alpha,gamma     |       | 0   | 0   | $OK | ALPHA,GAMMA,SHARED | 0/0/0
a-none       | salloc    | --nccl-profile=none            |       | 0   | 0   | $OK |      | 0/0/0
a-list       | salloc    | --nccl-profile=list            |       | 0   | -   | profiles in .*test-profiles.conf | no | -
a-unknown    | salloc    | --nccl-profile=nosuch          |       | 255 | -   | unknown profile \"nosuch\" | no | -
" ""
}

@test "matrix: overrides between levels (the inner srun's own option wins; the command line beats the variable)" {
	local conf
	conf=$(sn_write_test_profiles)
	sn_plugstack_set "profiles=$conf" default_profiles=gamma
	sn_fake_env ok
	run_matrix "
# name       | ctx       | option                  | inner                      | rc | irc | message | sees | runs
d-w-off      | directive | --nccl-warmup           | --nccl-warmup=off          | 0  | 0   | $OK | GAMMA | 1/0/0
d-off-w      | directive | --nccl-warmup=off       | --nccl-warmup=comm         | 0  | 0   | $OK | GAMMA | 0/1/0
d-w-bad      | directive | --nccl-warmup           | --nccl-warmup=fast         | 0  | 255 | $UNKNOWN | no | 1/0/0
d-w-verbose  | directive | --nccl-warmup           | --nccl-warmup=comm,verbose | 0  | 0   | reused the comm-mode pass of step batch | GAMMA | 1/0/1
d-w-fresh    | directive | --nccl-warmup           | --nccl-warmup=comm,fresh   | 0  | 0   | $OK | GAMMA | 1/1/0
d-chk-bw     | directive | --nccl-warmup=check     | --nccl-warmup=bandwidth    | 0  | 0   | $OK | GAMMA | 1/1/0
b-p-none     | sbatch    | --nccl-profile=beta     | --nccl-profile=none        | 0  | 0   | $OK |       | 0/0/0
d-p-alpha    | directive | --nccl-profile=beta     | --nccl-profile=alpha       | 0  | 0   | $OK | ALPHA,GAMMA,SHARED | 0/0/0
d-p-bad      | directive | --nccl-profile=beta     | --nccl-profile=nosuch      | 0  | 255 | unknown profile \"nosuch\" | no | 0/0/0
a-w-off      | salloc    | --nccl-warmup           | --nccl-warmup=off          | 0  | 0   | $OK | GAMMA | 0/0/0
a-p-none     | salloc    | --nccl-profile=beta     | --nccl-profile=none        | 0  | 0   | $OK |       | 0/0/0
e-w-cli      | env       | SPANK_NCCL_WARMUP=off   | --nccl-warmup=comm         | 0  | -   | $OK | GAMMA | 0/1/0
e-bad-cli    | env       | SPANK_NCCL_WARMUP=fast  | --nccl-warmup=comm         | 0  | -   | $OK | GAMMA | 0/1/0
e-p-cli      | env       | SPANK_NCCL_PROFILE=alpha | --nccl-profile=beta       | 0  | -   | $OK | BETA,GAMMA,SHARED | 0/0/0
" --gres=gpu:1
}

# Issue 25: "--nccl-warmup comm f1 f2" used to run coreutils' comm after a
# default warmup, "--nccl-warmup check hostname" to fail in execve().
# srun, sbatch and salloc refuse a word the option takes as its value
# right after a bare --nccl-warmup, before anything is queued; a program
# named by its path, a script called comm.sh and a bare #SBATCH line run.
@test "trap: a mode after a bare --nccl-warmup is refused by srun, sbatch and salloc, nothing queued" {
	local before d=$SN_CLUSTER_DIR/tmp/trap-$BATS_TEST_NUMBER
	rm -rf "$d"
	mkdir -p "$d"
	cd "$d"
	printf '#!/bin/bash\necho %s-ran\n' check >check
	printf '#!/bin/bash\necho %s-ran\n' comm.sh >comm.sh
	chmod 0755 check comm.sh
	before=$(sn_jobs_snapshot)

	run --separate-stderr sn_srun -n1 --nccl-warmup comm f1 f2
	sn_assert_status 255
	sn_assert_msg '"--nccl-warmup comm" runs the program "comm"; write --nccl-warmup=comm$'
	sn_assert_msg "to run a program named comm with the site's default warmup, give its path: --nccl-warmup /[^ ]*/comm$"
	# Exactly those two lines (as docs/user-guide.md shows them): not
	# Slurm's "Invalid --nccl-warmup argument: (null)" after them.
	[ "$(wc -l <<<"$stderr")" -eq 2 ] || sn_fail "not the two lines"
	run --separate-stderr sn_srun -n1 --nccl-warmup check hostname
	sn_assert_status 255
	sn_assert_msg '"--nccl-warmup check" runs the program "check"; write --nccl-warmup=check$'
	sn_assert_msg 'give its path: --nccl-warmup \./check$'
	# getopt_long takes an abbreviation of the option too.
	run --separate-stderr sn_srun -n1 --nccl-warm fabric,fresh hostname
	sn_assert_status 255
	sn_assert_msg 'write --nccl-warmup=fabric,fresh$'
	run --separate-stderr sn_srun -N1 -n1 --nccl-warmup nccl=/opt/nccl/lib hostname
	sn_assert_status 255
	sn_assert_msg 'write --nccl-warmup=nccl=/opt/nccl/lib$'

	# sbatch: the script's name.  sbatch opens the script before it runs
	# the plugin's callbacks, so the word must name a file to get this
	# far; without one sbatch stops by itself ("Unable to open file").
	run --separate-stderr sn_sbatch -N1 --nccl-warmup check
	sn_assert_status 255
	sn_assert_msg '"--nccl-warmup check" runs the program "check"; write --nccl-warmup=check$'
	run --separate-stderr sn_sbatch --nccl-warmup fabric
	sn_assert_failed
	run --separate-stderr sn_salloc -N1 --nccl-warmup bandwidth hostname
	sn_assert_status 255
	sn_assert_msg '"--nccl-warmup bandwidth" runs the program "bandwidth"; write --nccl-warmup=bandwidth$'
	! grep -q 'Invalid --nccl-warmup argument' <<<"$stderr" ||
		sn_fail "Slurm's (null) line"
	sn_assert_no_new_jobs "$before"
}

@test "trap: programs named by a path, other words and a bare #SBATCH line still run" {
	local d=$SN_CLUSTER_DIR/tmp/trap-$BATS_TEST_NUMBER script
	rm -rf "$d"
	mkdir -p "$d"
	cd "$d"
	printf '#!/bin/bash\necho %s-ran\n' check >check
	printf '#!/bin/bash\necho %s-ran\n' comm.sh >comm.sh
	chmod 0755 check comm.sh
	printf 'a\nb\n' >f1
	printf 'b\nc\n' >f2

	run --separate-stderr sn_srun -n1 --nccl-warmup ./check
	sn_assert_status 0
	[ "$output" = check-ran ] || sn_fail "./check did not run"
	sn_assert_no_msgs
	run --separate-stderr sn_srun -n1 --nccl-warmup "$(command -v comm)" -12 f1 f2
	sn_assert_status 0
	[ "$output" = b ] || sn_fail "comm did not run"
	# Another option in between: the user ended the option.
	run --separate-stderr sn_srun --nccl-warmup -n1 comm -12 f1 f2
	sn_assert_status 0
	[ "$output" = b ] || sn_fail "comm did not run"
	run --separate-stderr sn_salloc -N1 --nccl-warmup ./check
	sn_assert_status 0
	grep -qx check-ran <<<"$output" || sn_fail "salloc's ./check did not run"

	sn_sbatch_run --nccl-warmup comm.sh ||
		sn_fail "sbatch --nccl-warmup comm.sh: not submitted"
	[ "$SN_JOB_EXIT" = 0:0 ] || sn_fail "job exit $SN_JOB_EXIT"
	grep -qx comm.sh-ran <<<"$SN_JOB_OUT" || sn_fail "comm.sh did not run: $SN_JOB_OUT"
	script=$(sn_batch_script trap-directive.sh <<'S'
#!/bin/bash
#SBATCH --nccl-warmup
srun -n1 hostname >/dev/null && echo inner-ok
S
)
	sn_sbatch_run "$script" || sn_fail "#SBATCH --nccl-warmup: not submitted"
	[ "$SN_JOB_EXIT" = 0:0 ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	grep -qx inner-ok <<<"$SN_JOB_OUT" || sn_fail "inner srun failed: $SN_JOB_OUT"
	! grep -q 'spank-nccl:' <<<"$SN_JOB_OUT" || sn_fail "spank-nccl spoke: $SN_JOB_OUT"
}

# The help comes from the parser's word table and names the site's
# defaults from plugstack.conf (issue 25: it said "comm (default)" and
# left out fresh).
@test "help: srun, sbatch and salloc --help list every word and this site's defaults" {
	local conf cmd text
	conf=$(sn_write_test_profiles)
	sn_plugstack_set "profiles=$conf" default_profiles=gamma warmup_mode=check
	for cmd in srun sbatch salloc; do
		run sn_timeout "$cmd" --help
		sn_assert_status 0
		# Slurm wraps the text to the terminal: one line of words.
		text=$(tr -s ' \n' '  ' <<<"$output")
		for want in "--nccl-warmup=MODE[,verbose][,fresh][,nccl=PATH]" \
			"Without a value: check, this site's default." \
			"off (" "check (" "comm (" "bandwidth (" "fabric (" \
			",verbose (" ",fresh (" ",nccl=PATH (" \
			"follows '=' only" "Env: SPANK_NCCL_WARMUP" \
			"site's default profiles (gamma)" "list (" "none (" \
			"Env: SPANK_NCCL_PROFILE"; do
			grep -qF -- "$want" <<<"$text" ||
				sn_fail "$cmd --help lacks \"$want\""
		done
		! grep -qF "comm (default)" <<<"$text" ||
			sn_fail "$cmd --help still says comm (default)"
	done
	sn_plugstack_set "profiles=$conf"
	run sn_timeout srun --help
	text=$(tr -s ' \n' '  ' <<<"$output")
	grep -qF "Without a value: comm, this site's default." <<<"$text" ||
		sn_fail "srun --help does not name comm as the default"
	grep -qF "site's default profiles (none)" <<<"$text" ||
		sn_fail "srun --help does not say there are no default profiles"
}
