# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared by containers.bats and containers_multinode.bats: a cluster with
# real pyxis + enroot listed before spank-nccl (tests/cluster/containers.sh
# builds them once) and no host NCCL on its nodes, and the offline test
# image ok.sqsh (the fake NCCL in its ld.so.cache; sn_container_image).
# An image holds /etc/sn-image naming it, so a task proves it ran inside.

containers_file_setup() {
	local kind
	export SN_PYXIS=1 SN_HIDE_HOST_NCCL=1
	sn_file_setup || return 1
	for kind in ok; do
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
