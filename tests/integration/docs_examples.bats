#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Docs as tests: every srun/sbatch/salloc/#SBATCH example in README.md,
# docs/*.md and man/*.[0-9] is extracted (helpers/doc_examples.awk: code
# blocks and inline code) and run on a one-node test cluster with four
# fake GPUs.  A new example is tested without anyone writing a test.
#
# How an example is adapted to the test cluster (the rule docs state in
# docs/user-guide.md, "Examples in these docs are tested"):
#   - node counts (-N<n>, --nodes=<n>) become 1, GPU counts
#     (--gres=gpu:<n>) at most 4, the node's count; "N" in a count
#     stands for the node's GPU count;
#   - the program (python train.py, ./train, true ...) is replaced by a
#     stand-in task that prints what it saw; a command without a program
#     gets one, unless it only prints (--nccl-profile=list, --help);
#   - "export" lines of the block apply to the example after them;
#   - a batch script runs as with sbatch --wait (sn_sbatch_wait: the
#     same exit code, without its 2-8-32 s polling), its own program lines as
#     the stand-in, and "srun <stand-in>" when it has no srun;
#   - salloc runs the block's srun lines after it ("srun <stand-in>" if
#     none).
# Expected outcome: exit code 0 (or N for "# exits N"), the job's exit
# code 0:0, every step's tasks ran, no spank-nccl error line, every output
# line the docs show after "$ command" present, and a step that names
# profiles shows them applied (SPANK_NCCL_APPLIED).  An example that
# cannot run here (a placeholder "…", a diagram) is listed with its reason
# in docs_examples.exceptions; one that is neither runnable nor listed
# fails the test, and so does an exception that matches no example.

load common

SN_DOCS_FILES=(README.md docs/*.md man/*.[0-9])
EXCEPTIONS="$SN_TESTS_DIR/docs_examples.exceptions"

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	M="$SN_CLUSTER_DIR/tmp/docs-$BATS_TEST_NUMBER"
	rm -rf "$M"
	mkdir -p "$M"
	cat >"$M/task.sh" <<'T'
#!/bin/bash
echo "task-ran $SLURM_JOB_ID.$SLURM_STEP_ID"
echo "applied=${SPANK_NCCL_APPLIED:-}"
T
	chmod 0755 "$M/task.sh"
	export SN_TIMEOUT=60
}

extract() {
	(cd "$SN_SRC_DIR" && awk -f "$SN_TESTS_DIR/helpers/doc_examples.awk" \
		"${SN_DOCS_FILES[@]}")
}

# "FILE: KEY" of every exception (comments and blank lines skipped); the
# reason follows the last " | " (an example may contain "|").
exception_keys() {
	sed -n 's/^\([^#].*[^ ]\) | [^ |][^|]*$/\1/p' "$EXCEPTIONS"
}

# scale WORD...: the example's options for the test cluster, one per
# line; stops at the program (printed as PROGRAM:<first word>).
scale() {
	local w n
	while [ $# -gt 0 ]; do
		w=$1
		shift
		case $w in
		-N | --nodes) shift; echo -N1 ;;
		-N[0-9]* | --nodes=*) echo -N1 ;;
		-n | --ntasks)
			n=$1; shift
			[ "$n" = N ] && n=4
			echo "-n$n" ;;
		--gres=gpu:*)
			n=${w#--gres=gpu:}
			[ "$n" = N ] || [ "$n" -gt 4 ] && n=4
			echo "--gres=gpu:$n" ;;
		-c | -p | -t | -J | -w) echo "$w"; echo "$1"; shift ;;
		-*) echo "$w" ;;
		*) echo "PROGRAM:$w"; return ;;
		esac
	done
}

# The scaled command for srun/sbatch/salloc line $1, with the stand-in.
command_for() {
	local line=$1 out=() w prog=""
	read -ra words <<<"$line"
	out=("${words[0]}")
	while IFS= read -r w; do
		case $w in
		PROGRAM:*) prog=${w#PROGRAM:} ;;
		*) out+=("$w") ;;
		esac
	done < <(scale "${words[@]:1}")
	if [ -n "$prog" ] || ! [[ " ${out[*]} " =~ (=list|--help)\  ]]; then
		[ "${words[0]}" = srun ] && out+=("$M/task.sh")
	fi
	printf '%q ' "${out[@]}"
}

# run_example ID: runs the example in $M/ID.spec; problems on stdout.
run_example() {
	local id=$1 spec="$M/$1.spec" type text rc=0 want=0 out="$M/$1"
	local envs=() shown=() directives=() body=() alloc="" single=""
	local script steps line ran
	while IFS=$'\t' read -r type text; do
		case $type in
		V) envs+=("$text") ;;
		D) directives+=("$text") ;;
		A) alloc=$text ;;
		S) if [ ${#directives[@]} -eq 0 ] && [ -z "$alloc" ]; then
			single=$text
		   else
			body+=("$(command_for "$text")")
		   fi ;;
		P) body+=("$M/task.sh") ;;
		O) shown+=("$text") ;;
		X) want=$text ;;
		esac
	done <"$spec"
	script="$out.sh"
	{
		echo '#!/bin/bash'
		echo 'set -e'
		for line in "${directives[@]}"; do
			# shellcheck disable=SC2046
			echo "#SBATCH $(printf '%s ' $(scale ${line#\#SBATCH }))"
		done
		[ ${#body[@]} -gt 0 ] || body=("$(command_for "srun")")
		printf '%s\n' "${body[@]}"
	} >"$script"
	chmod 0755 "$script"
	steps=${#body[@]}
	(
		for line in "${envs[@]}"; do export "${line?}"; done
		if [ -n "$single" ]; then
			eval "sn_timeout $(command_for "$single")" </dev/null
		elif [ -n "$alloc" ]; then
			eval "sn_timeout $(command_for "$alloc") $script" </dev/null
		else
			sn_sbatch_wait -o "$out.job" "$script"
		fi
	) >"$out.out" 2>&1 || rc=$?
	text=$(cat "$out.out" "$out.job" 2>/dev/null)
	[ "$rc" -eq "$want" ] || echo "exit code $rc, expected $want"
	if grep -qE 'error: ([^ ]+: )?spank-nccl:' <<<"$text"; then
		echo "spank-nccl error: $(grep -E 'spank-nccl:' <<<"$text" | head -n3 | paste -sd'|' -)"
	fi
	if [ -n "$single" ]; then
		[[ $single =~ --nccl-profile=(none|list) ]] ||
			! [[ $single =~ --nccl-profile= ]] ||
			grep -qE '^applied=.+' <<<"$text" ||
			echo "no profile applied in the task"
		[[ " $(command_for "$single") " != *task.sh* ]] ||
			grep -q '^task-ran' <<<"$text" || echo "the task did not run"
	else
		ran=$(grep -c '^task-ran' <<<"$text" || true)
		[ "$ran" -ge "$steps" ] || echo "$ran of $steps commands ran a task"
	fi
	for line in "${shown[@]}"; do
		# The profile file's path differs on the test cluster.
		line=$(sed -E 's|/[^ ]*nccl-profiles\.conf|PROFILES|' <<<"$line" | xargs)
		sed -E 's|/[^ ]*nccl-profiles\.conf|PROFILES|' <<<"$text" |
			tr -s ' \t' '  ' | sed 's/^ //; s/ $//' | grep -qxF -- "$line" ||
			echo "output line the docs show is missing: $line"
	done
}

@test "docs: every srun/sbatch/salloc/#SBATCH example runs as documented" {
	local id=0 key where report="" problems n_run=0 n_except=0
	sn_fake_env ok
	extract >"$M/all" || sn_fail "extractor failed"
	while IFS=$'\t' read -r type where key; do
		if [ "$type" = EX ]; then
			id=$((id + 1))
			: >"$M/$id.spec"
			echo "$where	$key" >"$M/$id.where"
			continue
		fi
		[ "$type" = END ] && continue
		printf '%s\t%s\n' "$type" "$where" >>"$M/$id.spec"
	done <"$M/all"
	[ "$id" -gt 0 ] || sn_fail "no examples found"
	for ((i = 1; i <= id; i++)); do
		IFS=$'\t' read -r where key <"$M/$i.where"
		if exception_keys | grep -qxF -- "${where%%:*}: $key"; then
			n_except=$((n_except + 1))
			continue
		fi
		n_run=$((n_run + 1))
		problems=$(run_example "$i")
		[ -z "$problems" ] || report+="$where: $key"$'\n'"$(sed 's/^/    /' <<<"$problems")"$'\n'"    (not runnable here? list \"${where%%:*}: $key | <reason>\" in $(basename "$EXCEPTIONS"))"$'\n'
	done
	echo "# $n_run examples run, $n_except listed as exceptions" >&3
	[ -z "$report" ] || sn_fail "examples that do not work as documented:"$'\n'"$report"
}

@test "docs: every exception names an existing example and gives a reason" {
	local key keys stale=""
	extract | awk -F'\t' '$1 == "EX" { split($2, a, ":"); print a[1] ": " $3 }' \
		>"$M/keys"
	keys=$(exception_keys)
	[ -n "$keys" ] || sn_fail "no exceptions parsed from $EXCEPTIONS"
	while IFS= read -r key; do
		grep -qxF -- "$key" "$M/keys" || stale+="$key"$'\n'
	done <<<"$keys"
	[ -z "$stale" ] || sn_fail "exceptions for examples that no longer exist:"$'\n'"$stale"
	# Every non-comment line has the "FILE: EXAMPLE | reason" form.
	! grep -vE '^(#.*|)$' "$EXCEPTIONS" | grep -vqE '^.+ \| [^ |][^|]{9,}$' ||
		sn_fail "malformed lines: $(grep -vE '^(#.*|)$' "$EXCEPTIONS" | grep -vE '^.+ \| [^ |][^|]{9,}$')"
}

@test "docs: the extractor finds what the docs teach (issue 11's bare #SBATCH --nccl-warmup, man page blocks, inline code)" {
	extract >"$M/all"
	grep -qxF $'D\t#SBATCH --nccl-warmup' "$M/all" ||
		sn_fail "README's bare '#SBATCH --nccl-warmup' not extracted"
	grep -qE $'^EX\tman/spank-nccl\\.8:[0-9]+\t#!/bin/bash' "$M/all" ||
		sn_fail "the man page's batch script not extracted"
	grep -qE $'^EX\tdocs/benchmarks\\.md:[0-9]+\tsrun --gres=gpu:4 --nccl-warmup true$' "$M/all" ||
		sn_fail "inline code not extracted"
	grep -qE $'^O\tspank-nccl: profiles in ' "$M/all" ||
		sn_fail "README's shown output not extracted"
	[ "$(grep -c $'^EX\t' "$M/all")" -ge 30 ] ||
		sn_fail "only $(grep -c $'^EX\t' "$M/all") examples found"
}
