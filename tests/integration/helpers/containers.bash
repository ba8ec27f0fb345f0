# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared by containers.bats and containers_multinode.bats: a cluster with
# real pyxis + enroot listed before spank-nccl (tests/cluster/containers.sh
# builds them once) and no host NCCL on its nodes, and the offline test
# images KIND.sqsh of sn_container_image: ok (the fake NCCL in its
# ld.so.cache), broken, none and tree (NCCL_ALGO=Tree in its environment).
# An image holds /etc/sn-image naming it, so a task proves it ran inside.

containers_file_setup() {
	local kind
	export SN_PYXIS=1 SN_HIDE_HOST_NCCL=1
	sn_file_setup || return 1
	for kind in ok broken none tree; do
		sn_container_image "$kind" "$SN_CLUSTER_DIR/tmp/$kind.sqsh" ||
			return 1
	done
	# The docs' examples name ./image.sqsh.
	ln -sf ok.sqsh "$SN_CLUSTER_DIR/tmp/image.sqsh"
}

containers_setup() {
	sn_test_setup
	sn_require_warmup
	SN_FAKE_LOG="$SN_CLUSTER_DIR/tmp/fake-cuda-$BATS_TEST_NUMBER.log"
	rm -f "$SN_FAKE_LOG"
	export FAKE_CUDA_LOG=$SN_FAKE_LOG
	# The fake driver from the host (as enroot's nvidia hook would bind
	# it); no NCCL on the node.
	export LD_LIBRARY_PATH
	LD_LIBRARY_PATH=$(sn_fake_dir cuda)
}

# The image each task ran in, one line per task (sorted).
containers_images() {
	sort <<<"$output" | paste -sd' ' -
}

# `run` of an N-task step with N GPUs in ./IMAGE.sqsh, --nccl-warmup=WARMUP,
# whose tasks print the image they run in.
containers_srun() {
	local n=$1 image=$2 warmup=$3
	run --separate-stderr sn_srun -n"$n" --gres=gpu:"$n" \
		--container-image=./"$image".sqsh --nccl-warmup="$warmup" \
		cat /etc/sn-image
}

# The step succeeded, its tasks in the IMAGES ("ok ok": containers_images).
containers_assert_ran_in() {
	sn_assert_status 0
	[ "$(containers_images)" = "$1" ] || sn_fail "tasks ran in: $output"
}

# The step failed before any task ran, with a message matching PATTERN.
containers_assert_no_task() {
	sn_assert_failed
	[ -z "$output" ] || sn_fail "tasks ran: $output"
	sn_assert_msg "$1"
}

# Containers pyxis created on NODE so far (its slurmd log).
pyxis_creates() {
	grep -c 'pyxis: creating container filesystem' "$(sn_slurmd_log "$1")" || true
}

# A 2-task step of ./ok.sqsh whose warmup fails (two GPUs with one PCI
# bus ID): no task runs.  PYXIS_BEFORE: the containers pyxis had created
# on n1 before it.
containers_failed_warmup() {
	export FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0
	# shellcheck disable=SC2034 # the caller's
	PYXIS_BEFORE=$(pyxis_creates n1)
	containers_srun 2 ok check
	containers_assert_no_task 'duplicate PCI bus ID'
}

# Starts, as the job user, a one-task container step of IMAGE whose task
# waits for $SN_CLUSTER_DIR/tmp/go-$BATS_TEST_NUMBER; sets CONTAINER_PID
# to the task's process (enroot gives it no PID namespace: the host's
# number).  containers_release lets it end.
containers_hold() {
	local image=$1 out="$SN_CLUSTER_DIR/tmp/hold-$BATS_TEST_NUMBER"
	GO="$SN_CLUSTER_DIR/tmp/go-$BATS_TEST_NUMBER"
	rm -f "$out" "$GO"
	sn_as_user timeout -k 5 60 srun -n1 --container-image="$image" \
		--container-mounts="$SN_CLUSTER_DIR/tmp" \
		sh -c "echo \$\$ >'$out' && while [ ! -e '$GO' ]; do sleep 0.05; done" \
		</dev/null >/dev/null 2>&1 &
	HOLD_SRUN=$!
	sn__wait_for 300 test -s "$out" || sn_fail "the container step did not start"
	CONTAINER_PID=$(cat "$out")
}

containers_release() {
	touch "$GO"
	sn__wait_for 300 sh -c "! kill -0 $HOLD_SRUN 2>/dev/null" ||
		sn_fail "the container step did not end"
}

# nccl-warmup by hand as the job user, the fake driver from the host.
containers_helper() {
	sn_as_user env FAKE_CUDA_LOG="$FAKE_CUDA_LOG" \
		LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$(sn_helper_path)" "$@"
}

# `run` of containers_helper on the held step (containers_hold) of
# ./IMAGE.sqsh: --container-pid, --container-image and ARGS.
containers_helper_in() {
	local image=./$1.sqsh
	shift
	run --separate-stderr containers_helper --container-pid "$CONTAINER_PID" \
		--container-image "$image" "$@"
}

# The same on a step of its own, held for the run only.
containers_helper_on() {
	containers_hold "./$1.sqsh"
	containers_helper_in "$@"
	containers_release
}
