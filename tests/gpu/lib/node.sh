# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The GPU tests' phase 0, sourced by tests/gpu/run-gpu-tests.sh (whose
# variables and bookkeeping it uses): what the node has, into node.txt.

gpu_count=0
gpu_baseline=
gpu_busids=

describe_node() {
	phase "node"
	if [ "$dryrun" = 1 ]; then
		install_fake_nvidia_smi || die_setup node "fake nvidia-smi"
	fi
	command -v nvidia-smi >/dev/null || die_setup node "nvidia-smi not found"
	gpu_count=$(nvidia-smi -L | grep -c '^GPU ')
	[ "$gpu_count" -ge 1 ] || die_setup node "nvidia-smi -L lists no GPU"
	gpu_baseline=$(python3 "$src/tests/gpu/gpu_state.py" baseline) ||
		die_setup node "cannot read GPU memory with nvidia-smi"
	gpu_busids=$(python3 "$src/tests/gpu/gpu_state.py" busids | paste -sd, -)
	{
		echo "== nvidia-smi -L"; nvidia-smi -L
		echo "== nvidia-smi"; nvidia-smi
		echo "== nvidia-smi topo -m"; timeout 20 nvidia-smi topo -m
		echo "== compute apps"; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
		echo "== os"; cat /etc/os-release; uname -a; nproc; free -g
		echo "== tools"
		for t in gcc make cc nvcc python3 dpkg ldconfig runuser useradd unshare; do
			printf '%-9s %s\n' "$t" "$(command -v "$t" || echo MISSING)"
		done
		gcc --version | head -1
		make --version 2>/dev/null | head -1
		"$cuda/bin/nvcc" --version 2>/dev/null | tail -2
		python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1
		echo "== libraries"; ldconfig -p | grep -E 'libnccl|libcudart|libcuda\.so' || true
		echo "== cgroup"; stat -fc %T /sys/fs/cgroup; cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null
		echo "== environment"; env | grep -E '^(NCCL|TORCH|NVSHMEM|CUDA|LD_)' | sort
	} >"$out/node.txt" 2>&1
	{
		echo "GPUs: $gpu_count [$gpu_busids], used MiB at start: $gpu_baseline"
		echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
	} >"$work/node-brief.txt"
	cat "$work/node-brief.txt"
	cat "$work/node-brief.txt" >&3
}

# Dry run only: a stand-in for nvidia-smi that matches the fake libcuda's
# default four GPUs (tests/fake/fake_cuda.c).
install_fake_nvidia_smi() {
	mkdir -p "$work/fakebin"
	cat >"$work/fakebin/nvidia-smi" <<'EOF'
#!/bin/sh
# Dry-run stand-in (tests/gpu/run-gpu-tests.sh): four idle GPUs.
case "$*" in
*-L*) for i in 0 1 2 3; do echo "GPU $i: Fake GPU (UUID: GPU-fake-$i)"; done ;;
*memory.used*) for i in 0 1 2 3; do echo 0; done ;;
*pci.bus_id*) for i in 1 2 3 4; do echo "00000000:0$i:00.0"; done ;;
*query-compute-apps*) ;;
*driver_version*) echo fake ;;
*) echo "fake nvidia-smi (dry run)" ;;
esac
EOF
	chmod 0755 "$work" "$work/fakebin" "$work/fakebin/nvidia-smi"
	export PATH="$work/fakebin:$PATH"
}
