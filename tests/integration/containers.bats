#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Real pyxis 0.24.0 + enroot 4.1.2 (built from ../shared/third_party by
# tests/cluster/containers.sh, pyxis listed before spank-nccl) on a
# one-node cluster whose node has no NCCL of its own:
# `srun --container-image=./IMG.sqsh --nccl-warmup`: pyxis starts the
# container, then the node's first task has the image's own NCCL warmed
# (nccl-warmup --container-pid, src/plugin/step_container.c), once per
# node, and a failed warmup keeps every task from starting; listed before
# pyxis, spank-nccl says so and warms the host's; a later step of the
# job with the same image reuses the pass.  Offline squashfs images
# (mksquashfs).

load common
load helpers/containers

setup_file() { containers_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { containers_setup; }

@test "container: plain srun --container-image runs inside the image" {
	run --separate-stderr sn_srun -n2 --container-image=./ok.sqsh \
		cat /etc/sn-image
	containers_assert_ran_in "ok ok"
}

# The NCCL named in a verbose summary: the image's, found as its tasks
# would (ok.sqsh: its ld.so.cache), and the image.
SN_IMAGE_NCCL='NCCL [0-9.]+ from /usr/lib/x86_64-linux-gnu/libnccl.so.2 \(container image ./ok.sqsh\)'

@test "container: --nccl-warmup=check names the image's NCCL, tasks run in the image" {
	containers_srun 2 ok check,verbose
	containers_assert_ran_in "ok ok"
	sn_assert_msg "warmup ok on n1: 2 GPUs .*$SN_IMAGE_NCCL, check mode"
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the warmup did not run once"
}

# Two tasks (pyxis starts the container in the first one's task_init,
# the other waits): the image's NCCL is warmed once, by the first task to
# reach spank-nccl, and its summary is said once.
@test "container: --nccl-warmup warms the image's NCCL once per node, tasks run in the image" {
	containers_srun 2 ok comm,verbose
	containers_assert_ran_in "ok ok"
	sn_assert_msg "warmup ok on n1: 2 GPUs .*$SN_IMAGE_NCCL, comm mode"
	[ "$(grep -c 'spank-nccl: warmup ok' <<<"$stderr")" -eq 1 ] ||
		sn_fail "not one summary: $stderr"
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the warmup did not run once"
	# slurmd's log has the run with the helper's JSON, as for any step.
	grep -q "nccl-warmup passed in [0-9]* ms: .*container image ./ok.sqsh" \
		"$(sn_slurmd_log n1)" || sn_fail "no result line in slurmd's log"
}

# NCCL_DEBUG=INFO (no NCCL_DEBUG_FILE): NCCL logs on the helper's stdout,
# the result comes on its own pipe all the same; the log's last lines
# reach the user through the container gate, once.  The job's LD_PRELOAD
# (tests/fake/junk_preload.c, mounted into the container at its path)
# prints a fake JSON result and junk in the helper and in the tasks.
@test "container: NCCL_DEBUG=INFO and a preload's junk do not hide the result; its log is shown once" {
	local junk own job
	junk=$(sn_fake_dir junk)
	sn_require_file "$junk/libjunk.so" "junk preload not built (make check)"
	run --separate-stderr sn_srun -n2 --gres=gpu:2 --container-image=./ok.sqsh \
		--container-mounts="$junk" --nccl-warmup=comm,verbose \
		--export="ALL,LD_PRELOAD=$junk/libjunk.so,NCCL_DEBUG=INFO,NCCL_DEBUG_SUBSYS=ALL" \
		sh -c 'cat /etc/sn-image; test -r "$LD_PRELOAD" && echo junk-visible'
	sn_assert_status 0
	# The tasks ran in the image, the preload loaded there too.
	[ "$(grep -cx ok <<<"$output")" -eq 2 ] || sn_fail "tasks ran in: $output"
	[ "$(grep -c 'junk-preload: unterminated .*junk-visible$' <<<"$output")" -eq 2 ] ||
		sn_fail "the preload is not in the container: $output"
	# One message of the plugin's own, the helper's whole summary; NCCL's
	# log once, under its header; the preload's JSON is neither.
	own=$(grep -E "$SN_MSG_RE" <<<"$stderr" |
		grep -vE "spank-nccl: (\| |NCCL's log of|junk-preload)" || true)
	[ "$(wc -l <<<"$own")" -eq 1 ] || sn_fail "not one summary: $own"
	grep -qE "warmup ok on n1: 2 GPUs .*$SN_IMAGE_NCCL, comm mode" <<<"$own" ||
		sn_fail "summary: $own"
	[ "$(sn_count_msgs "NCCL's log of the warmup on node n1 \(NCCL_DEBUG=INFO, its stdout\)")" -eq 1 ] ||
		sn_fail "not one log header"
	sn_assert_msg 'spank-nccl: \| .* NCCL INFO '
	job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
	grep -q "job $job step 0 on n1: nccl-warmup passed in [0-9]* ms: {\"version\":1,.*container image ./ok.sqsh" \
		"$(sn_slurmd_log n1)" || sn_fail "no result in slurmd's log"
}

# Issue 30: an image name the user chose reaches slurmd's log only
# escaped (a link to ok.sqsh whose name holds a newline and a line in the
# plugin's format).  pyxis 0.24 logs the enroot command it runs raw: a
# line after one of pyxis's is pyxis's, not the plugin's.
@test "container: a newline in --container-image forges no line in slurmd's log" {
	local name=$'ok\nspank-nccl: FORGEDIMG node n2 is broken.sqsh' job bad
	ln -sfn ok.sqsh "$SN_CLUSTER_DIR/tmp/$name"
	run --separate-stderr sn_srun -n1 --gres=gpu:1 --container-image="./$name" \
		--nccl-warmup=comm,verbose cat /etc/sn-image
	containers_assert_ran_in ok
	sn_assert_msg 'warmup ok on n1: .*\(container image ./ok\?spank-nccl: FORGEDIMG node n2 is broken.sqsh\)'
	job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
	grep -aq "^\[[^]]*\] \[$job\.0\] spank-nccl: .*(container image ./ok?spank-nccl: FORGEDIMG" \
		"$(sn_slurmd_log n1)" || sn_fail "the image's name is not in slurmd's log, escaped"
	bad=$(awk -v j="[$job.0]" '/FORGEDIMG/ && index($0, "] " j " ") == 0 &&
		index(prev, "] " j " pyxis: ") == 0 { print } { prev = $0 }' \
		"$(sn_slurmd_log n1)")
	[ -z "$bad" ] || sn_fail "a forged line in slurmd's log: $bad"
}

# Reuse (docs/design.md, "Warmup reuse"): the key of a container step
# names its image and holds the image's NCCL_* (the helper's
# environment), so a later step of the job with the same image, GPUs and
# settings skips the helper; another image, or other NCCL_*, warms again.
@test "container: a later step of the job with the same image reuses its pass; another image or NCCL_* warms again" {
	local script img=$SN_CLUSTER_DIR/tmp
	script=$(sn_batch_script containers-reuse.sh <<S
#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH -n2
srun -n2 --container-image=$img/ok.sqsh --nccl-warmup=comm cat /etc/sn-image
srun -n2 --container-image=$img/ok.sqsh --nccl-warmup=check,verbose cat /etc/sn-image
srun -n2 --container-image=$img/none.sqsh --nccl-warmup=check cat /etc/sn-image
NCCL_PROTO=Simple srun -n2 --container-image=$img/ok.sqsh --nccl-warmup=comm cat /etc/sn-image
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	[ "$(grep -cx 'ok' <<<"$SN_JOB_OUT")" -eq 6 ] &&
		[ "$(grep -cx 'none' <<<"$SN_JOB_OUT")" -eq 2 ] ||
		sn_fail "tasks: $SN_JOB_OUT"
	[ "$(sn_fake_loads)" -eq 3 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 3"
	[ "$(grep -cE "job $SN_JOB_ID step [0-9]+ on n1: nccl-warmup reused" \
		"$(sn_slurmd_log n1)")" -eq 1 ] || sn_fail "not one reuse in slurmd's log"
	sn_assert_msg "warmup ok on n1: reused the comm-mode pass of step 0 of this job .*container image $img/ok.sqsh" \
		"$SN_JOB_OUT"
}

@test "container: the image's NCCL_* environment is applied" {
	containers_srun 2 tree comm
	containers_assert_no_task 'warmup failed on node n1 .*broadcast'
}

@test "container: a broken NCCL in the image fails the step before any task, naming the image" {
	local rec="$SN_CLUSTER_DIR/tmp/container-records-$BATS_TEST_NUMBER"
	rm -rf "$rec"
	mkdir -p "$rec"
	sn_plugstack_set "record_file=$rec/%n.jsonl"
	containers_srun 2 broken comm
	containers_assert_no_task "warmup failed on node n1 .*cannot load the NCCL named by the container image ./broken.sqsh"
	sn_assert_msg "this is the image's fault, not a fault of the node"
	[ "$(grep -c 'spank-nccl: warmup failed' <<<"$stderr")" -eq 1 ] ||
		sn_fail "not one message for the node: $stderr"
	# Exit 15: the job's fault (its image), never the node's.
	grep -q '"class":"container_nccl".*"exit_code":15' "$rec/n1.jsonl" ||
		sn_fail "record: $(cat "$rec/n1.jsonl")"
	[ "$(jq -r .fault "$rec/n1.jsonl")" = job ] ||
		sn_fail "fault: $(cat "$rec/n1.jsonl")"
}

@test "container: no NCCL in the image: check passes and says so, comm fails naming the image" {
	containers_srun 1 none check,verbose
	containers_assert_ran_in none
	sn_assert_msg 'warmup ok on n1: .*check mode, no NCCL in the container image ./none.sqsh'
	containers_srun 1 none comm
	containers_assert_no_task 'no NCCL in the container image ./none.sqsh: looked in'
}

# pyxis listed first runs its task_init (create + start the container)
# before spank-nccl's task_init fails the step: the container starts, no
# task does.
@test "container: a failed warmup starts no task" {
	containers_failed_warmup
	echo "# containers pyxis created for the failed step: $(($(pyxis_creates n1) - PYXIS_BEFORE))" >&3
}

# Listed the other way round, spank-nccl's task_init fails the task
# before pyxis's runs: no container is created for a failed warmup.
@test "container: spank-nccl listed before pyxis, a failed warmup creates no container" {
	SN_PYXIS_ORDER=after sn_plugstack_reset
	grep -q 'spank_pyxis.so' <(tail -n1 "$SN_CLUSTER_DIR/etc/plugstack.conf") ||
		sn_fail "pyxis not listed last: $(cat "$SN_CLUSTER_DIR/etc/plugstack.conf")"
	containers_failed_warmup
	[ "$(pyxis_creates n1)" -eq "$PYXIS_BEFORE" ] ||
		sn_fail "pyxis created a container for the failed step"
	# And a good step still runs in the image in this order, the host's
	# NCCL warmed instead of the image's, which is said with the fix.
	unset FAKE_CUDA_BUSIDS
	containers_srun 2 ok check,verbose
	containers_assert_ran_in "ok ok"
	sn_assert_msg 'on node n1 the container of image ./ok.sqsh did not exist yet when spank-nccl.s task_init ran: spank-nccl is listed before pyxis in plugstack.conf.*list pyxis first'
	sn_assert_msg 'warmup ok on n1: 2 GPUs .*check mode, no NCCL on the node'
	[ "$(grep -c 'listed before pyxis' <<<"$stderr")" -eq 1 ] ||
		sn_fail "not one warning for the node: $stderr"
}

@test "container: as the unprivileged job user" {
	run --separate-stderr sn_as_user env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		FAKE_CUDA_LOG="$FAKE_CUDA_LOG" timeout -k 5 60 srun -n1 \
		--gres=gpu:1 --container-image=./ok.sqsh \
		--nccl-warmup=check,verbose sh -c 'cat /etc/sn-image; id -u'
	sn_assert_status 0
	[ "$(sed -n 1p <<<"$output")" = ok ] || sn_fail "not in the image"
	[ "$(sed -n 2p <<<"$output")" = "$(id -u "$SN_USER")" ] ||
		sn_fail "task uid: $output"
	sn_assert_msg 'warmup ok on n1: 1 GPU '
	# The helper (the job user's) ran on the task's root handed over by
	# the agent, while that task stayed not dumpable: the fake driver,
	# loaded by the helper during the wait, could not open the task's
	# /proc/PID/environ (tests/fake/fake_common.c).
	grep -q '^lib=cuda .* container=[0-9]* environ=refused$' "$SN_FAKE_LOG" ||
		sn_fail "the task was readable by the job user during the warmup: $(cat "$SN_FAKE_LOG")"
}

# The docs' container examples (docs_examples.exceptions names them: the
# docs_examples cluster has no pyxis): each srun line of a code block with
# --container-image, runnable as shown but for the program, which becomes
# a task printing the image it ran in.
@test "container: the docs' container examples run" {
	local line n=0 cmd
	while IFS=$'\t' read -r type line; do
		[ "$type" = S ] || continue
		[[ $line == srun\ *--container-image=* ]] || continue
		[[ $line == *…* ]] && continue
		n=$((n + 1))
		cmd=${line% python train.py}
		[ "$cmd" != "$line" ] || sn_fail "example not ending in 'python train.py': $line"
		echo "# $line" >&3
		run --separate-stderr eval "sn_srun ${cmd#srun } cat /etc/sn-image"
		sn_assert_status 0
		[ "$(sort -u <<<"$output")" = ok ] || sn_fail "$line: tasks ran in: $output"
		grep -q 'error: .*spank-nccl:' <<<"$stderr" && sn_fail "$line: spank-nccl error"
	done < <(cd "$SN_SRC_DIR" && awk -f "$SN_TESTS_DIR/helpers/doc_examples.awk" \
		README.md docs/*.md man/*.[0-9] man/*.[0-9].in)
	[ "$n" -ge 1 ] || sn_fail "no container example found in the docs"
}

@test "container NCCL by hand: --container-pid warms the image's NCCL and names it" {
	containers_helper_on ok --json
	sn_assert_status 0
	grep -q 'NCCL [0-9.]* from /usr/lib/x86_64-linux-gnu/libnccl.so.2 (container image ./ok.sqsh), comm mode' <<<"$stderr" ||
		sn_fail "summary does not name the image's NCCL"
	[ "$(jq -r .nccl_source <<<"$output")" = container ] || sn_fail "source"
	[ "$(jq -r .nccl_path <<<"$output")" = /usr/lib/x86_64-linux-gnu/libnccl.so.2 ] ||
		sn_fail "path"
}

@test "container NCCL by hand: the image's NCCL_* settings are used" {
	containers_helper_on tree --json
	[ "$status" -eq 5 ] || sn_fail "status $status, expected 5"
	[ "$(jq -r .failed_op <<<"$output")" = broadcast ] ||
		sn_fail "NCCL_ALGO=Tree of the image not applied"
}

@test "container NCCL by hand: a broken NCCL in the image fails, naming the image" {
	containers_helper_on broken
	[ "$status" -eq 15 ] || sn_fail "status $status, expected 15 (container_nccl)"
	grep -q 'cannot load the NCCL named by the container image ./broken.sqsh: /proc/[0-9]*/root/usr/lib/x86_64-linux-gnu/libnccl.so.2' <<<"$stderr" ||
		sn_fail "message does not name the image and its library"
}

@test "container NCCL by hand: no NCCL in the image fails comm, passes check" {
	containers_hold ./none.sqsh
	containers_helper_in none --mode comm
	[ "$status" -eq 15 ] || { containers_release; sn_fail "comm: status $status, expected 15"; }
	grep -q 'no NCCL in the container image ./none.sqsh: looked in its LD_LIBRARY_PATH' <<<"$stderr" ||
		{ containers_release; sn_fail "comm: message"; }
	containers_helper_in none --mode check
	containers_release
	sn_assert_status 0
	grep -q 'check mode, no NCCL in the container image ./none.sqsh' <<<"$stderr" ||
		sn_fail "check: no note"
}
