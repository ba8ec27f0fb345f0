# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The RAS phase (issue 35 item 5), sourced by tests/gpu/run-gpu-tests.sh:
# three PyTorch jobs on the one node, as the issue measured them -- A (the
# job user, 2 ranks, rank 1 skips the second all-reduce), B (a second
# user, 1 rank), C (the job user again, 1 rank) -- with real NCCL (the
# venv's, 2.28.7+ for RAS's JSON):
#   ras-shared-before  ras=nccl (NCCL's own port 28028): what the issue
#                      measured -- B's NCCL cannot bind, and B's user
#                      reads A's job on 28028
#   ras-shared-after   ras=step: no bind warning; each job's RAS answers
#                      for that job (spank-nccl-status as its user); the
#                      other user is refused
#   ras-status-names   spank-nccl-status names A's stuck rank by task,
#                      node and GPU (text and --json)
#   ras-timelimit      A ends by its time limit (srun -t 1): its record
#                      carries RAS's verdict (hang), the job's fault
# Needs 4 GPUs (A, B, C side by side); N/A below.

ras_user2=sncuser2
ras_dir=
ras_jobs_pids=()
ras_job_a=
ras_after_started=
# The node as spank-nccl names it: the host name slurmstepd has (not
# SLURMD_NODENAME, which a job can set: step_warmup.c), here not n1.
ras_node=$(hostname)

# ras_job NAME USER TASKS GRES SKIP [SRUN_ARGS...]: ras_hang.py in the
# background as USER; output in $ras_dir/NAME.{out,err}.
ras_job() {
	local name=$1 user=$2 tasks=$3 gres=$4 skip=$5
	shift 5
	(cd "$ras_dir" &&
	 exec timeout -k 5 300 runuser -u "$user" -- env PATH="$PATH" \
		SLURM_CONF="$SLURM_CONF" HOME="$ras_dir/home-$user" \
		NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
		NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=WARN PYTHONUNBUFFERED=1 \
		${skip:+RAS_SKIP_RANK=$skip} \
		srun --immediate=30 -N1 -J "ras-$name" -n "$tasks" \
		--gres=gpu:"$gres" "$@" python3 "$ras_dir/ras_hang.py" \
		>"$ras_dir/$name.out" 2>"$ras_dir/$name.err" </dev/null) 3>&- &
	ras_jobs_pids+=($!)
}

ras_ready() { [ "$(grep -c '^ready' "$ras_dir/$1.out" 2>/dev/null)" -eq "$2" ]; }

# ras_wait_ready NAME TASKS: every task past its first all-reduce.
ras_wait_ready() {
	sn__wait_for 900 ras_ready "$1" "$2" && return 0
	echo "  job $1 not ready:"
	sed 's/^/  | /' "$ras_dir/$1.out" "$ras_dir/$1.err" | tail -n 30
	return 1
}

ras_jobid() { squeue -h -n "ras-$1" -o %i; }

ras_end_all() {
	local p
	# Every job of this cluster is the phase's.
	# shellcheck disable=SC2046
	scancel $(squeue -h -o %i) 2>/dev/null
	for p in "${ras_jobs_pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	ras_jobs_pids=()
	sn__wait_for 300 sh -c '[ -z "$(squeue -h -o %i)" ]'
}

# ras_raw_pids USER PORT: the pids RAS on 127.0.0.1:PORT reports, asked
# as USER with RAS's own protocol (nothing of spank-nccl in between).
ras_raw_pids() {
	runuser -u "$1" -- timeout 20 python3 - "$2" <<'EOF'
import re, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
f = s.makefile("rb")
s.sendall(b"CLIENT PROTOCOL 2\nSET FORMAT json\n")
f.readline(); f.readline()
s.sendall(b"VERBOSE STATUS\n")
text = f.read().decode(errors="replace")
print(" ".join(sorted(set(re.findall(r'"pid"\s*:\s*([0-9]+)', text)))))
EOF
}

ras_pids_of() { awk '/^ready/ { print $3 }' "$ras_dir/$1.out" | sort | xargs; }
ras_addr_of() { awk '/^ready/ { print $4; exit }' "$ras_dir/$1.out"; }

# As the job's user, the step's RAS through the plugin's command.
ras_status() {
	local user=$1
	shift
	(cd "$ras_dir" && runuser -u "$user" -- env PATH="$PATH" \
		SLURM_CONF="$SLURM_CONF" timeout -k 5 60 \
		"$SN_BUILD_DIR/src/report/spank-nccl-status" "$@")
}

ras_start_three() {
	ras_job A "$SN_USER" 2 2 1 "$@"
	ras_job B "$ras_user2" 1 1 ""
	ras_job C "$SN_USER" 1 1 ""
	ras_wait_ready A 2 && ras_wait_ready B 1 && ras_wait_ready C 1
}

# ras_cross: a user's question on 28028 answered with the other user's
# processes (PIDS_UA: asked by the job user, PIDS_UB: by the second).
ras_cross() {
	local p
	for p in $1; do
		[[ " $(ras_pids_of B) " == *" $p "* ]] && return 0
	done
	for p in $2; do
		[[ " $(ras_pids_of A) $(ras_pids_of C) " == *" $p "* ]] && return 0
	done
	return 1
}

t_ras_before() {
	local pa pb
	plugstack ras=nccl
	if ! ras_start_three; then
		t_problems+=("the three jobs did not start (run.log)")
		ras_end_all
		return
	fi
	pa=$(ras_raw_pids "$SN_USER" 28028)
	pb=$(ras_raw_pids "$ras_user2" 28028)
	say "  ras=nccl: $SN_USER's A $(ras_pids_of A), C $(ras_pids_of C); $ras_user2's B $(ras_pids_of B); 127.0.0.1:28028 answers $SN_USER with $pa, $ras_user2 with $pb"
	# NCCL logs to stdout.
	grep -h 'NCCL WARN' "$ras_dir"/[ABC].out | sort | uniq -c | sed 's/^/  /' | head
	want "ras=nccl: a job's NCCL cannot bind RAS's port (the defect, as measured)" \
		grep -q "bind failed" "$ras_dir/A.out" "$ras_dir/B.out" "$ras_dir/C.out"
	want "ras=nccl: one user reads the other's job on 28028 (the defect)" \
		ras_cross "$pa" "$pb"
	ras_end_all
}

t_ras_after() {
	local b c
	rm -rf "$ras_dir/rec"
	mkdir -p "$ras_dir/rec"
	plugstack ras=step "record_file=$ras_dir/rec/%n.jsonl"
	if ! ras_start_three -t 1; then
		t_problems+=("the three jobs did not start (run.log)")
		ras_end_all
		return
	fi
	ras_after_started=$EPOCHREALTIME
	say "  ras=step: A on $(ras_addr_of A), B on $(ras_addr_of B), C on $(ras_addr_of C)"
	want "no job's NCCL warns of a bind failure" \
		sh -c "! grep -i 'bind failed\\|already in use' '$ras_dir'/[ABC].out '$ras_dir'/[ABC].err"
	want "three RAS addresses" \
		test "$(printf '%s\n' "$(ras_addr_of A)" "$(ras_addr_of B)" "$(ras_addr_of C)" | sort -u | grep -c :)" -eq 3
	b=$(ras_status "$ras_user2" --json "$(ras_jobid B)" >"$ras_dir/B.status"; tr ',' '\n' <"$ras_dir/B.status" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p' | sort -u | xargs)
	c=$(ras_status "$SN_USER" --json "$(ras_jobid C)" >"$ras_dir/C.status"; tr ',' '\n' <"$ras_dir/C.status" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p' | sort -u | xargs)
	say "  B's RAS (asked by $ras_user2) names pids $b (B's task: $(ras_pids_of B)); C's (asked by $SN_USER) $c (C's: $(ras_pids_of C))"
	want "B's own RAS answers for B, asked by its user" test "$b" = "$(ras_pids_of B)"
	want "C's own RAS answers for C (same user as A)" test "$c" = "$(ras_pids_of C)"
	ras_status "$ras_user2" "$(ras_jobid A)" >"$ras_dir/A-by-ub.out" 2>&1
	sed 's/^/  ub> /' "$ras_dir/A-by-ub.out"
	want "$ras_user2 is refused A's status" \
		sh -c "! grep -q 'verdict' '$ras_dir/A-by-ub.out'"
}

t_ras_names() {
	local job
	job=$(ras_jobid A)
	[ -n "$job" ] || { t_problems+=("job A is not running"); return; }
	# RAS needs a moment after the skip to see the counts apart.
	sn__wait_for 300 sh -c "'$SN_BUILD_DIR/src/report/spank-nccl-status' $job 2>&1 | grep -q 'has launched AllReduce'"
	ras_status "$SN_USER" "$job" >"$ras_dir/A.status" 2>&1
	sed 's/^/  ua> /' "$ras_dir/A.status"
	want "the verdict names rank 1 as task 1 on $ras_node and its GPU, behind in AllReduce" \
		grep -Eq "rank 1 \\(task 1 on $ras_node, GPU [0-9]\\) has launched AllReduce [0-9]+ while" "$ras_dir/A.status"
	ras_status "$SN_USER" --json "$job" >"$ras_dir/A.json" 2>&1
	want "--json: rank 1 is task 1 on $ras_node" grep -q "\"rank\":1,[^}]*\"task\":1,\"node\":\"$ras_node\"" "$ras_dir/A.json"
}

t_ras_timelimit() {
	local job=$ras_job_a left
	# srun -t 1: slurmctld ends the job 60 to 90 s after it started
	# (it checks time limits every 30 s), KillWait=2 later the tasks die.
	left=$(awk -v a="$ras_after_started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", 150 - (b - a) }')
	sn__wait_for $((left * 10)) sh -c "[ -z \"\$(squeue -h -j $job -o %i 2>/dev/null)\" ]" ||
		t_problems+=("job A still running 150 s after its start (time limit 1 min)")
	sn__wait_for 100 grep -q "\"job\":$job,.*\"hang\":" "$ras_dir/rec/$ras_node.jsonl"
	grep "\"job\":$job," "$ras_dir/rec/$ras_node.jsonl" | sed 's/^/  rec> /' | cut -c1-400
	want "A's record carries RAS's verdict naming rank 1 (task 1 on $ras_node)" \
		grep -Eq "\"job\":$job,.*\"hang\":\"rank 1 \\(task 1 on $ras_node, GPU [0-9]\\) has launched AllReduce" "$ras_dir/rec/$ras_node.jsonl"
	want "the record: the job's fault, by a signal" \
		grep -Eq "\"job\":$job,.*\"fault\":\"job\".*\"signal\":[1-9]" "$ras_dir/rec/$ras_node.jsonl"
	grep -h 'time limit\|TIME LIMIT\|CANCELLED' "$ras_dir/A.err" | sed 's/^/  A> /' | head -3
	want "A ended by its time limit" grep -q 'DUE TO TIME LIMIT' "$ras_dir/A.err"
}

run_ras() {
	[ "${SN_GPU_RAS:-1}" = 1 ] || return 0
	phase "RAS on a shared node (three PyTorch jobs, two users)"
	if [ "$gpu_count" -lt 4 ] || ! find_venv_nccl; then
		record N/A ras "needs 4 GPUs and PyTorch's NCCL (the node: $gpu_count GPUs, venv NCCL ${venv_nccl_version:-none})"
		return
	fi
	getent passwd "$ras_user2" >/dev/null || useradd -m -s /bin/bash "$ras_user2"
	ras_dir=$SN_CLUSTER_DIR/tmp/ras
	rm -rf "$ras_dir"
	mkdir -p "$ras_dir/home-$SN_USER" "$ras_dir/home-$ras_user2"
	chown "$SN_USER" "$ras_dir/home-$SN_USER"
	chown "$ras_user2" "$ras_dir/home-$ras_user2"
	install -m 0644 "$src/tests/gpu/ras_hang.py" "$ras_dir/"
	chmod 0777 "$ras_dir"
	run_test ras-shared-before t_ras_before 120
	run_test ras-shared-after t_ras_after 120
	ras_job_a=$(ras_jobid A)
	run_test ras-status-names t_ras_names 40
	run_test ras-timelimit t_ras_timelimit 160
	ras_end_all
	sn_plugstack_reset
}
