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
