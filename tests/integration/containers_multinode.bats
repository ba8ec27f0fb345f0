#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Real pyxis + enroot on the 3-node cluster (network namespaces), no host
# NCCL on any node: `srun -N3 --container-image=./ok.sqsh --nccl-warmup`
# warms the image's NCCL once on every node, and every node's tasks run
# inside the image; a fabric step joins the three nodes under MUNGE, or
# without munged (SN_AUTH=slurm: release-suite.sh runs this file so too)
# under the step key.  See containers.bats and helpers/containers.bash.

SN_NODES=3
load common
load helpers/containers

setup_file() { containers_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { containers_setup; }

# Two tasks per node: the image's NCCL is warmed once on each node.
@test "container, 3 nodes: --nccl-warmup warms the image's NCCL once per node, tasks in the image" {
	run --separate-stderr sn_srun -N3 --ntasks-per-node=2 --gres=gpu:2 \
		--container-image=./ok.sqsh --nccl-warmup=comm,verbose \
		sh -c 'echo "$SLURMD_NODENAME $(cat /etc/sn-image)"'
	sn_assert_status 0
	[ "$(containers_images)" = "n1 ok n1 ok n2 ok n2 ok n3 ok n3 ok" ] ||
		sn_fail "tasks ran in: $output"
	[ "$(sn_count_msgs 'warmup ok on n[123]: 2 GPUs .*NCCL [0-9.]+ from /usr/lib/x86_64-linux-gnu/libnccl.so.2 \(container image ./ok.sqsh\), comm mode')" -eq 3 ] ||
		sn_fail "not one warmup of the image's NCCL per node"
	[ "$(grep -c 'spank-nccl: warmup ok' <<<"$stderr")" -eq 3 ] ||
		sn_fail "not one summary per node: $stderr"
}

@test "container, 3 nodes: a failed warmup on one node starts no task anywhere" {
	export FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0
	run --separate-stderr sn_srun -N3 --ntasks-per-node=1 --gres=gpu:2 \
		--container-image=./ok.sqsh --nccl-warmup=check \
		cat /etc/sn-image
	sn_assert_failed
	[ -z "$output" ] || sn_fail "tasks ran: $output"
	sn_assert_msg 'duplicate PCI bus ID'
}

@test "container, 3 nodes: --nccl-warmup=fabric joins the image's NCCL over the step's nodes" {
	run --separate-stderr sn_srun -N3 --ntasks-per-node=1 --gres=gpu:2 \
		--container-image=./ok.sqsh --nccl-warmup=fabric,verbose \
		cat /etc/sn-image
	sn_assert_status 0
	[ "$output" = "$(printf 'ok\nok\nok')" ] || sn_fail "tasks ran in: $output"
	[ "$(sn_count_msgs 'warmup ok on n[123]: 2 GPUs .*\(container image ./ok.sqsh\), fabric mode.*ranks [0-9]-[0-9] of 6 over 3 nodes')" -eq 3 ] ||
		sn_fail "not one fabric warmup of the image's NCCL per node"
}
