#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Docs as tests: every srun/sbatch/salloc/#SBATCH example in README.md,
# docs/*.md, docs/dev/*.md and man/*.[0-9](.in) is extracted (helpers/doc_examples.awk: code
# blocks and inline code) and run on a one-node test cluster with four
# fake GPUs.  A new example is tested without anyone writing a test.
#
# How an example is adapted to the test cluster (the rule docs/dev/testing.md states,
# "Examples in the docs are tested"):
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
#
# The same files' other examples run here too:
#   - nccl-warmup by hand (doc_examples.awk -v kind=helper), on the
#     node as an admin finds it: root, the fake GPUs as the node's driver
#     and NCCL, munged on libmunge's default socket, the host name node1;
#     a path ending in /nccl-warmup is this build's helper.  Expected:
#     exit 0 (or "# exits N") of the example and of every helper it ran,
#     one "warmup ok" line per run (nothing with --quiet), one JSON
#     object per run with --json, status "ok", and the output the docs
#     show ("..." elides; numbers are any numbers).  An exception's
#     reason is checked: "exits N" is run and must exit N, "placeholder"
#     needs an upper-case placeholder or "..." in the example;
#   - plugstack.conf.example (as built), as the cluster's whole plugstack.conf, and
#     every plugstack.conf line the docs show (kind=plugstack): loaded by
#     srun and slurmstepd, a --nccl-warmup step run with it.

load common

SN_DOCS_FILES=(README.md docs/*.md docs/dev/*.md man/*.[0-9] man/*.[0-9].in)
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
	(cd "$SN_SRC_DIR" && awk -v kind="${1:-}" \
		-f "$SN_TESTS_DIR/helpers/doc_examples.awk" "${SN_DOCS_FILES[@]}")
}

# Splits extract's output ($1) into $M/PREFIX<n>.spec and .where files;
# prints the number of examples.
split_examples() {
	local all=$1 prefix=$2 id=0 type where key
	while IFS=$'\t' read -r type where key; do
		if [ "$type" = EX ]; then
			id=$((id + 1))
			: >"$M/$prefix$id.spec"
			echo "$where	$key" >"$M/$prefix$id.where"
			continue
		fi
		[ "$type" = END ] && continue
		printf '%s\t%s\n' "$type" "$where" >>"$M/$prefix$id.spec"
	done <"$all"
	echo "$id"
}

# The reason of exception KEY ("FILE: EXAMPLE"), or nothing.
exception_reason() {
	local key=$1 line
	while IFS= read -r line; do
		case $line in "#"* | "") continue ;; esac
		[ "${line% | *}" = "$key" ] || continue
		echo "${line##* | }"
		return 0
	done <"$EXCEPTIONS"
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
	id=$(split_examples "$M/all" "")
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
	local key keys stale="" f missing=""
	{ extract; extract helper; } |
		awk -F'\t' '$1 == "EX" { split($2, a, ":"); print a[1] ": " $3 }' \
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
	# A file a reason names (the test that runs the example instead)
	# exists: in the source tree, or among the integration tests.
	for f in $(grep -vE '^(#.*|)$' "$EXCEPTIONS" | sed 's/.* | //' |
		grep -oE '[A-Za-z0-9_./-]+\.(sh|bats|awk|c|py)\b' | sort -u); do
		[ -e "$SN_SRC_DIR/$f" ] || [ -e "$SN_TESTS_DIR/$f" ] ||
			missing+="$f "
	done
	[ -z "$missing" ] || sn_fail "reasons name files that do not exist: $missing"
}

@test "docs: the extractor finds what the docs teach (issue 11's bare #SBATCH --nccl-warmup, man page blocks, inline code)" {
	extract >"$M/all"
	grep -qxF $'D\t#SBATCH --nccl-warmup' "$M/all" ||
		sn_fail "README's bare '#SBATCH --nccl-warmup' not extracted"
	grep -qE $'^EX\tman/spank-nccl\\.8\\.in:[0-9]+\t#!/bin/bash' "$M/all" ||
		sn_fail "the man page's batch script not extracted"
	grep -qE $'^EX\tdocs/dev/benchmarks\\.md:[0-9]+\tsrun --gres=gpu:4 --nccl-warmup true$' "$M/all" ||
		sn_fail "inline code not extracted"
	grep -qE $'^O\tspank-nccl: profiles in ' "$M/all" ||
		sn_fail "README's shown output not extracted"
	[ "$(grep -c $'^EX\t' "$M/all")" -ge 30 ] ||
		sn_fail "only $(grep -c $'^EX\t' "$M/all") examples found"
}

# ---------------------------------------------------------------------
# nccl-warmup run by hand.

# The helper as the docs' commands find it: nccl-warmup in PATH, and any
# path ending in /nccl-warmup (LIBEXECDIR) mapped to it.  A wrapper
# records each run's exit status in $M/helper-rc.
helper_bin() {
	mkdir -p "$M/bin"
	cat >"$M/bin/nccl-warmup" <<W
#!/bin/sh
'$(sn_helper_path)' "\$@"
rc=\$?
echo \$rc >>'$M/helper-rc'
exit \$rc
W
	chmod 0755 "$M/bin/nccl-warmup"
}

# An ERE for an output line the docs show: "..." and "…" stand for any
# text, and any number for any number (versions, times, sizes differ per
# machine); the rest is literal.
shown_pattern() {
	printf '%s\n' "$1" | sed -E 's/[][\.*^$+?(){}|]/\\&/g' |
		sed -E 's/\\\.\\\.\\\./.*/g; s/…/.*/g; s/[0-9]+/[0-9]+/g'
}

# run_helper_example SPEC [EXPECTED_EXIT]: runs one by-hand example on
# the node as an admin finds it (see the top of this file); problems on
# stdout.  The output is left in SPEC's .stdout and .stderr.
run_helper_example() {
	local spec=$1 want=${2:-} type text cmd="" envs=() shown=() rc=0 line
	local out=${1%.spec} runs bad n text_all
	while IFS=$'\t' read -r type text; do
		case $type in
		V) envs+=("$text") ;;
		H) cmd=$text ;;
		O) shown+=("$text") ;;
		X) [ -n "$want" ] || want=$text ;;
		esac
	done <"$spec"
	want=${want:-0}
	cmd=$(sed -E "s#(^|[[:space:];&|(])/[^[:space:]]*/nccl-warmup([[:space:];&)]|\$)#\\1$M/bin/nccl-warmup\\2#g" <<<"$cmd")
	: >"$M/helper-rc"
	(
		for line in "${envs[@]}"; do export "${line?}"; done
		PATH="$M/bin:$PATH"
		LD_LIBRARY_PATH=$(sn_fake_lib_dir)
		export PATH LD_LIBRARY_PATH
		cd "$M" || exit 125
		# A private /run holds libmunge's default socket: the
		# cluster's munged, as a node's own would answer there.
		sn_timeout unshare --uts --mount --propagation private bash -c '
			hostname node1 &&
			mount -t tmpfs -o mode=0755 tmpfs /run &&
			mkdir /run/munge &&
			ln -s "$1" /run/munge/munge.socket.2 || exit 125
			eval "$2"' sh "$SN_CLUSTER_DIR/munge/munge.socket" "$cmd"
	) >"$out.stdout" 2>"$out.stderr" </dev/null || rc=$?
	[ "$rc" -eq "$want" ] || echo "exit code $rc, expected $want"
	runs=$(wc -l <"$M/helper-rc")
	[ "$runs" -ge 1 ] || echo "nccl-warmup never ran"
	bad=$(grep -vx "$want" "$M/helper-rc" | paste -sd, -)
	[ -z "$bad" ] || echo "nccl-warmup exited $bad, expected $want"
	if [ "$want" -eq 0 ]; then
		if [[ " $cmd " == *" --quiet "* ]]; then
			[ ! -s "$out.stderr" ] ||
				echo "--quiet, yet stderr: $(head -c 300 "$out.stderr")"
		else
			n=$(grep -c '^spank-nccl: warmup ok on ' "$out.stderr")
			[ "$n" -eq "$runs" ] ||
				echo "$n 'warmup ok' lines for $runs runs: $(head -c 300 "$out.stderr")"
			! grep -qv '^spank-nccl: warmup ok on ' "$out.stderr" ||
				echo "unexpected stderr: $(grep -v '^spank-nccl: warmup ok on ' "$out.stderr" | head -n3)"
		fi
	fi
	if [[ " $cmd " == *" --json "* ]]; then
		n=$(grep -c '^{' "$out.stdout")
		[ "$n" -eq "$runs" ] || echo "$n JSON objects on stdout for $runs runs"
		if [ "$want" -eq 0 ]; then
			grep '^{' "$out.stdout" | jq -e -s 'length > 0 and all(.status == "ok")' \
				>/dev/null || echo "JSON not valid, or a status not ok: $(head -c 300 "$out.stdout")"
		fi
	fi
	text_all=$(cat "$out.stdout" "$out.stderr" | tr -s ' \t' '  ')
	for line in "${shown[@]}"; do
		line=$(printf '%s' "$line" | tr -s ' \t' '  ' | sed 's/^ //; s/ $//')
		grep -qxE -- "$(shown_pattern "$line")" <<<"$text_all" ||
			echo "output line the docs show is missing: $line"
	done
}

# Checks the reason of an excepted by-hand example; problems on stdout.
check_helper_exception() {
	local spec=$1 key=$2 reason=$3 code
	if [[ $reason =~ exits\ ([0-9]+) ]]; then
		code=${BASH_REMATCH[1]}
		run_helper_example "$spec" "$code" | sed 's/^/reason "exits '"$code"'" does not hold: /'
	elif [[ $reason == *placeholder* ]]; then
		[[ $key =~ (^|[[:space:]=])[A-Z][A-Z_]{2,}($|[[:space:],]) || $key == *…* || $key == *...* ]] ||
			echo "reason says placeholder, but the example has none (an upper-case word or ...)"
	else
		echo "reason is not checked: say \"exits N\" (it is run and must exit N) or \"placeholder\""
	fi
}

@test "docs: every by-hand nccl-warmup example runs as documented (fake GPUs)" {
	local id i where key reason problems report="" n_run=0 n_except=0
	command -v jq >/dev/null || sn_fail "jq not installed (bash tests/install-deps.sh)"
	helper_bin
	extract helper >"$M/helper-all" || sn_fail "extractor failed"
	id=$(split_examples "$M/helper-all" h)
	[ "$id" -ge 8 ] || sn_fail "only $id by-hand nccl-warmup examples found"
	for ((i = 1; i <= id; i++)); do
		IFS=$'\t' read -r where key <"$M/h$i.where"
		reason=$(exception_reason "${where%%:*}: $key")
		if [ -n "$reason" ]; then
			n_except=$((n_except + 1))
			problems=$(check_helper_exception "$M/h$i.spec" "$key" "$reason")
			[ -z "$problems" ] || report+="$where: $key (exception)"$'\n'"$(sed 's/^/    /' <<<"$problems")"$'\n'
			continue
		fi
		n_run=$((n_run + 1))
		problems=$(run_helper_example "$M/h$i.spec")
		[ -z "$problems" ] || report+="$where: $key"$'\n'"$(sed 's/^/    /' <<<"$problems")"$'\n'"    (not runnable here? list \"${where%%:*}: $key | <reason: exits N, or placeholder>\" in $(basename "$EXCEPTIONS"))"$'\n'
	done
	echo "# $n_run by-hand examples run, $n_except exceptions checked" >&3
	[ -z "$report" ] || sn_fail "by-hand examples that do not work as documented:"$'\n'"$report"
}

@test "docs: the by-hand extractor finds the man page's examples (output, script, loop) and inline code" {
	extract helper >"$M/helper-all"
	grep -qE $'^EX\tman/nccl-warmup\\.8:[0-9]+\t/usr/libexec/nccl-warmup$' "$M/helper-all" ||
		sn_fail "nccl-warmup(8)'s first example not extracted"
	grep -qE $'^O\tspank-nccl: warmup ok on ' "$M/helper-all" ||
		sn_fail "its shown output not extracted"
	grep -qE $'^H\tfor .*; do .*nccl-warmup --mode fabric .*& done; wait$' "$M/helper-all" ||
		sn_fail "the fabric loop not extracted"
	grep -qE $'^EX\tdocs/troubleshooting\\.md:[0-9]+\tnccl-warmup --mode ' "$M/helper-all" ||
		sn_fail "inline code not extracted"
	# check_cmd_status runs nccl-warmup as an argument: nhc.bats's.
	! grep -q check_cmd_status "$M/helper-all" || sn_fail "an NHC line taken as by-hand"
}

# ---------------------------------------------------------------------
# plugstack.conf.example and the docs' plugstack.conf lines.

# The cluster's version of plugstack.conf line $1: the installed paths
# it names mapped into the cluster (the plugin; profiles= and
# warmup_helper= to the cluster's copies; fabric_munge_socket= to its
# munged; any other absolute path under $SN_CLUSTER_DIR/root, its
# directory created), and the harness's warmup_helper=, warmup_reuse_dir=
# and fabric_munge_socket= added where the line names none (LIBEXECDIR,
# /run and libmunge's socket differ on the test cluster).
plugstack_line() {
	local words w out=() key val root="$SN_CLUSTER_DIR/root"
	read -ra words <<<"$1"
	out=("${words[0]}" "$(sn_plugin_path)")
	for w in "${words[@]:2}"; do
		key=${w%%=*}
		val=${w#*=}
		case $key:$val in
		profiles:/*) val=$(sn_profiles_path) ;;
		warmup_helper:/*) val=$(sn_helper_path) ;;
		fabric_munge_socket:/*) val=$SN_CLUSTER_DIR/munge/munge.socket ;;
		prom_dir:/*) val=$root$val; mkdir -p "${val//%n/n1}" ;;
		*:/*) val=$root$val; mkdir -p -m 0750 "$(dirname "${val//%n/n1}")" ;;
		esac
		out+=("$key=$val")
	done
	[[ " ${out[*]} " == *" warmup_helper="* ]] ||
		out+=("warmup_helper=$(sn_helper_path)")
	[[ " ${out[*]} " == *" warmup_reuse_dir="* ]] ||
		out+=("warmup_reuse_dir=$SN_CLUSTER_DIR/run/spank-nccl")
	[[ " ${out[*]} " == *" fabric_munge_socket="* ]] ||
		out+=("fabric_munge_socket=$SN_CLUSTER_DIR/munge/munge.socket")
	echo "${out[*]}"
}

# run_with_plugstack CONF_LINE: a --nccl-warmup step (bare: the line's
# warmup_mode=) and a failing one, on the cluster whose plugstack.conf
# the caller wrote from CONF_LINE (the mapped spank_nccl.so line); what
# the line's arguments promise must hold.  Problems on stdout.
run_with_plugstack() {
	local line=$1 out rc=0 job arg mode policy=fail f
	out=$(sn_srun -N1 --gres=gpu:2 --nccl-warmup "$M/task.sh" 2>&1) || rc=$?
	[ "$rc" -eq 0 ] || { echo "srun exit $rc: $out"; return; }
	! grep -qE 'error: ([^ ]+: )?spank-nccl:' <<<"$out" ||
		echo "spank-nccl error: $(grep spank-nccl: <<<"$out" | head -n2)"
	job=$(sed -n 's/^task-ran \([0-9]*\)\..*/\1/p' <<<"$out" | head -n1)
	[ -n "$job" ] || { echo "the task did not run: $out"; return; }
	[ "$(sn_warmup_runs n1 "$job")" -ge 1 ] ||
		echo "no warmup ran for job $job (slurmd log)"
	for arg in $line; do
		case $arg in
		default_profiles=*)
			grep -qE '^applied=.+' <<<"$out" ||
				echo "$arg: no profile applied in the task" ;;
		warmup_mode=*)
			mode=${arg#*=}
			grep -E "job $job step [0-9]+ on n1: nccl-warmup passed" \
				"$(sn_slurmd_log n1)" | grep -q "\"mode\":\"$mode\"" ||
				echo "$arg: the bare --nccl-warmup did not run $mode mode" ;;
		warmup_policy=*) policy=${arg#*=} ;;
		record_file=*)
			f=${arg#*=}
			grep -qs "\"job\":$job," "${f//%n/n1}" ||
				echo "$arg: no record of job $job" ;;
		prom_dir=*)
			f=${arg#*=}
			[ -s "${f//%n/n1}/spank_nccl.prom" ] ||
				echo "$arg: no spank_nccl.prom" ;;
		esac
	done
	# A node whose GPUs fail the warmup: the step fails under "fail".
	rc=0
	out=$(FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 sn_srun -N1 \
		--gres=gpu:2 --nccl-warmup "$M/task.sh" 2>&1) || rc=$?
	if [ "$policy" = fail ]; then
		[ "$rc" -ne 0 ] && ! grep -q '^task-ran' <<<"$out" ||
			echo "warmup_policy=fail: a failed warmup did not stop the step (exit $rc)"
	fi
	grep -q 'duplicate PCI bus ID' <<<"$out" ||
		echo "the failed warmup was not reported: $out"
}

@test "docs: plugstack.conf.example is the cluster's plugstack.conf; a warmup step runs with it" {
	local conf="$SN_CLUSTER_DIR/etc/plugstack.conf" ex="$SN_BUILD_DIR/plugstack.conf.example"
	local line lines problems report=""
	sn_fake_env ok
	lines=$(grep -E '^(required|optional)[[:space:]]+[^[:space:]]*/spank_nccl\.so' "$ex") ||
		sn_fail "no spank_nccl.so line in $ex"
	# The whole file, comments and all, each plugin line mapped.
	while IFS= read -r line; do
		if [[ $line =~ ^(required|optional)[[:space:]]+[^[:space:]]*/spank_nccl\.so ]]; then
			plugstack_line "$line"
		else
			printf '%s\n' "$line"
		fi
	done <"$ex" >"$conf.tmp"
	mv -f "$conf.tmp" "$conf"
	echo "# plugstack.conf.example's plugin line(s), mapped: $(grep -E '^(required|optional)' "$conf" | cut -c1-150)..." >&3
	while IFS= read -r line; do
		problems=$(run_with_plugstack "$(plugstack_line "$line")")
		[ -z "$problems" ] || report+="$line"$'\n'"$(sed 's/^/    /' <<<"$problems")"$'\n'
	done <<<"$lines"
	[ -z "$report" ] || sn_fail "plugstack.conf.example:"$'\n'"$report"
}

@test "docs: every plugstack.conf line in the docs loads and runs a warmup step" {
	local conf="$SN_CLUSTER_DIR/etc/plugstack.conf" id i where key type line
	local problems report="" mapped
	sn_fake_env ok
	extract plugstack >"$M/plugstack-all" || sn_fail "extractor failed"
	id=$(split_examples "$M/plugstack-all" p)
	[ "$id" -ge 2 ] || sn_fail "only $id plugstack.conf lines found in the docs"
	for ((i = 1; i <= id; i++)); do
		IFS=$'\t' read -r where key <"$M/p$i.where"
		IFS=$'\t' read -r type line <"$M/p$i.spec"
		mapped=$(plugstack_line "$line")
		printf '%s\n' "$mapped" >"$conf"
		problems=$(run_with_plugstack "$mapped")
		[ -z "$problems" ] || report+="$where: $line"$'\n'"$(sed 's/^/    /' <<<"$problems")"$'\n'
	done
	echo "# $id plugstack.conf lines run" >&3
	[ -z "$report" ] || sn_fail "plugstack.conf lines that do not work as documented:"$'\n'"$report"
}
