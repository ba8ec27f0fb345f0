#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# spank-nccl on a real GPU node under real Slurm, in one go, as root, from
# the repository root (docs/gpu-testing.md):
#
#   1. unpack Debian's Slurm 22.05 + munge debs from .carry/debs into
#      /opt/sl (not into /): the node has no package registry
#   2. build spank-nccl from .carry/spank-nccl-*.tar.xz (the node has no
#      autoconf) against /usr/local/cuda and the node's NCCL
#   3. start munged + slurmctld + slurmd, gres on the real /dev/nvidia*,
#      spank_nccl.so in plugstack.conf (tests/cluster/cluster.sh does the
#      generic parts)
#   4. the checks below, each under a timeout; last line "N passed, N failed"
#   5. bench/warmup-bench.sh, then bench/warmup-reuse.sh (SN_GPU_BENCH=0
#      leaves both out; SN_REUSE_BENCH_RUNS rounds of the latter, default 1)
#
# Everything goes to $OUT/run.log; the console gets the results only.
# $OUT also receives summary.txt, build.log, slurmd.log, slurmctld.log,
# bench.txt and node.txt (the device call brings back 8 files at most).
#
# Environment:
#   OUT                 results folder (default /tmp/sn-gpu-out)
#   SN_CARRY            carried files (default ./.carry: tests/gpu/fetch-debs.sh)
#   SN_GPU_BUDGET_S     own deadline in seconds (default 540): whatever is
#                       left undone when it passes is counted as failed
#   SN_GPU_BENCH=0      no benchmark
#   SN_GPU_FABRIC=0     no fabric phase (tests/gpu/fabric-gpu.sh: the host as
#                       two network-namespace nodes of one GPU each, then
#                       srun -N2 --nccl-warmup=fabric; needs 2 GPUs and the
#                       carried iproute2)
#   SN_GPU_FABRIC_BENCH=0|1  bench/fabric-latency.sh in that phase (default:
#                       SN_GPU_BENCH)
#   SN_GPU_DRYRUN=1     rehearsal on a GPU-less Debian machine with Slurm
#                       installed: runs in a private mount namespace (bind
#                       mounts instead of symlinks in /usr), fake CUDA/NCCL
#                       libraries (tests/fake) and a fake nvidia-smi; most
#                       GPU checks then fail, the shell logic is exercised
#
# NVLink multicast stays off in every environment this creates: a program
# using it can put the host's shared GPUs out of service.
set -uo pipefail

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
	NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
carry=${SN_CARRY:-$src/.carry}
dryrun=${SN_GPU_DRYRUN:-0}
budget_s=${SN_GPU_BUDGET_S:-540}
out=${OUT:-/tmp/sn-gpu-out}
work=${SN_GPU_WORK:-/tmp/sn-gpu}
sl_root=${SN_SL_ROOT:-/opt/sl}
cuda=${SN_CUDA:-/usr/local/cuda}
arch_dir=x86_64-linux-gnu

if [ "$dryrun" = 1 ] && [ -z "${SN_GPU_IN_NS:-}" ]; then
	# Private mounts: the bind mounts over /usr vanish with the namespace.
	exec unshare -m --propagation private \
		env SN_GPU_IN_NS=1 bash "${BASH_SOURCE[0]}" "$@"
fi

mkdir -p "$out"
exec 3>&1 >"$out/run.log" 2>&1
t_begin=$EPOCHREALTIME

# ---------------------------------------------------------------------
# Output and bookkeeping

say() {
	echo "$*"
	echo "$*" >&3
}

elapsed() {
	awk -v a="$t_begin" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

seconds_left() {
	awk -v a="$t_begin" -v b="$EPOCHREALTIME" -v t="$budget_s" \
		'BEGIN { printf "%d", t - (b - a) }'
}

phase() {
	say "==== [$(elapsed) s] $*"
}

passed=0
failed=0
results=()

record() {
	local verdict=$1 name=$2 why=${3:-}
	if [ "$verdict" = PASS ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	results+=("$verdict $name${why:+: $why}")
	say "$verdict $name${why:+: $why}"
}

die_setup() {
	record FAIL "$1" "$2"
	finish
	exit 1
}

# A test body calls want/want_not; the first unmet expectation is the
# test's reason, all are logged.
t_problems=()
want() {
	local what=$1
	shift
	if ! "$@"; then
		t_problems+=("$what")
		echo "  unmet: $what"
	fi
}

# run_test NAME FUNCTION: one counted check, skipped as FAILED (never
# silently) when the budget cannot cover its worst case.
run_test() {
	local name=$1 fn=$2 need=${3:-30}
	if [ "$(seconds_left)" -lt "$need" ]; then
		record FAIL "$name" "not run: only $(seconds_left) s of the ${budget_s} s budget left"
		return
	fi
	echo
	echo "---- test $name ($(elapsed) s)"
	t_problems=()
	"$fn"
	if [ ${#t_problems[@]} -eq 0 ]; then
		record PASS "$name"
	else
		record FAIL "$name" "$(printf '%s; ' "${t_problems[@]}" | sed 's/; $//')"
	fi
}

finished=0
finish() {
	[ "$finished" = 1 ] && return
	finished=1
	trap - EXIT TERM INT
	if [ -n "${SN_CLUSTER_DIR:-}" ] && declare -F sn_cluster_stop >/dev/null; then
		# The fabric phase saved the single-node cluster's logs already.
		if [ "$SN_CLUSTER_DIR" != "$fabric_dir" ]; then
			cp -f "$(sn_slurmd_log n1)" "$out/slurmd.log" 2>/dev/null
			cp -f "$(sn_slurmctld_log)" "$out/slurmctld.log" 2>/dev/null
		fi
		# Bounded inside: squeue/scancel under timeout, kills after 5 s.
		sn_cluster_stop >/dev/null 2>&1 3>&-
		[ "$SN_CLUSTER_DIR" = "$fabric_dir" ] ||
			cp -f "$(sn_slurmd_log n1)" "$out/slurmd.log" 2>/dev/null
	fi
	{
		echo "spank-nccl GPU tests on $(hostname) ($(date -u +%FT%TZ)), $(elapsed) s"
		[ -f "$work/node-brief.txt" ] && cat "$work/node-brief.txt"
		printf '%s\n' "${results[@]}"
		echo "$passed passed, $failed failed"
	} >"$out/summary.txt"
	say ""
	say "$passed passed, $failed failed"
}
trap 'finish' EXIT
trap 'record FAIL run "interrupted (outer timeout?) before the end: the checks not listed did not run"; exit 143' TERM INT

# ---------------------------------------------------------------------
# 0. The node

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

# ---------------------------------------------------------------------
# 1. Slurm from Debian's debs, unpacked

# Points a system path at the unpacked file: a symlink on the GPU node
# (which has no Slurm), a bind mount in the dry run's private namespace.
sys_link() {
	local target=$1 path=$2
	if [ "$dryrun" = 1 ]; then
		[ -e "$path" ] || { echo "dry run: $path missing"; return 1; }
		mount --bind "$target" "$path"
		return
	fi
	if [ -e "$path" ] && [ ! -L "$path" ]; then
		echo "$path exists and is not a symlink: a Slurm is installed on this node; not replacing it"
		return 1
	fi
	mkdir -p "$(dirname "$path")"
	ln -sfn "$target" "$path"
}

# Libraries the unpacked binaries need that the system lacks go into
# one directory known to ld.so, so no LD_LIBRARY_PATH is needed (it
# would reach the jobs through srun).  Sonames the system has stay the
# system's.
register_missing_libs() {
	local dir=$sl_root/syslib f name added=0 have
	have=$(ldconfig -p | awk 'NR > 1 { print $1 }')
	mkdir -p "$dir"
	for f in "$sl_root/usr/lib/$arch_dir"/lib*.so.* "$sl_root/lib/$arch_dir"/lib*.so.*; do
		[ -e "$f" ] || continue
		name=$(basename "$f")
		[[ $name =~ \.so\.[0-9]+$ ]] || continue
		if ! grep -qxF "$name" <<<"$have"; then
			ln -sfn "$f" "$dir/$name"
			echo "library from the debs: $name"
			added=1
		fi
	done
	[ "$added" = 1 ] || return 0
	if [ "$dryrun" = 1 ]; then
		echo "dry run: libraries missing on this machine; install Slurm here"
		return 1
	fi
	echo "$dir" >/etc/ld.so.conf.d/zz-spank-nccl-gpu-test.conf
	ldconfig
}

check_ldd() {
	local f bad=0 missing
	for f in "$@"; do
		missing=$(ldd "$f" 2>&1 | grep 'not found')
		if [ -n "$missing" ]; then
			echo "$f: $missing"
			bad=1
		fi
	done
	return $bad
}

setup_slurm() {
	local debs n plugdir
	phase "unpack Slurm"
	debs=("$carry"/debs/*.deb)
	[ -e "${debs[0]}" ] || die_setup slurm-unpack "no debs in $carry/debs: run tests/gpu/fetch-debs.sh and carry .carry"
	command -v dpkg >/dev/null || die_setup slurm-unpack "dpkg not found"
	rm -rf "$sl_root"
	mkdir -p "$sl_root"
	for n in "${debs[@]}"; do
		dpkg -x "$n" "$sl_root" || die_setup slurm-unpack "dpkg -x $n failed"
	done
	for n in slurmd slurmctld slurmstepd; do
		ln -sfn "$n-wlm" "$sl_root/usr/sbin/$n"
	done
	plugdir=$sl_root/usr/lib/$arch_dir/slurm-wlm
	# Debian's binaries have RUNPATH /usr/lib/<arch>/slurm-wlm, and slurmd
	# execs /usr/sbin/slurmstepd.
	sys_link "$plugdir" "/usr/lib/$arch_dir/slurm-wlm" ||
		die_setup slurm-unpack "cannot point /usr/lib/$arch_dir/slurm-wlm at $plugdir"
	sys_link "$sl_root/usr/sbin/slurmstepd-wlm" /usr/sbin/slurmstepd ||
		die_setup slurm-unpack "cannot point /usr/sbin/slurmstepd at the unpacked one"
	register_missing_libs || die_setup slurm-unpack "cannot register the debs' libraries"
	# $sl_root/bin: the carried iproute2's ip (fabric phase).
	export PATH="$sl_root/usr/sbin:$sl_root/usr/bin:$sl_root/bin:$PATH"
	hash -r
	check_ldd "$sl_root"/usr/bin/{srun,sbatch,sinfo,squeue,scontrol,scancel,munge,unmunge} \
		"$sl_root"/usr/sbin/{slurmd-wlm,slurmctld-wlm,slurmstepd-wlm,munged,mungekey} \
		"$plugdir"/{auth_munge,cred_munge,select_cons_tres,gres_gpu,proctrack_linuxproc,task_none,sched_backfill,cgroup_v2,cgroup_v1}.so ||
		die_setup slurm-unpack "unresolved libraries (above)"
	echo "plugins with unresolved libraries (unused here):"
	check_ldd "$plugdir"/*.so | sed 's/^/  /'
	# (No client command before SLURM_CONF is set: it would query DNS.)
	say "Slurm $(dpkg-deb -f "$carry"/debs/slurm-client_*.deb Version) unpacked in $sl_root ($(elapsed) s)"
	record PASS slurm-unpack
}

# ---------------------------------------------------------------------
# 2. Build from the carried tarball

nccl_prefix=
nccl_lib_version=

find_nccl() {
	local h lib pyinc
	lib=$(ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ { print $NF; exit }')
	if [ "$dryrun" = 1 ] && [ -e "$cuda/include/nccl.h" ]; then
		nccl_prefix=$cuda
		return 0
	fi
	[ -n "$lib" ] || { echo "libnccl.so.2 is not in the ld.so cache"; return 1; }
	lib=$(readlink -f "$lib")
	nccl_lib_version=$(basename "$lib" | sed -n 's/^libnccl\.so\.\([0-9.]*\)$/\1/p')
	pyinc=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)
	for h in /usr/include/nccl.h "$cuda/include/nccl.h" "$carry/nccl.h" "${pyinc:-/nonexistent}/nccl.h"; do
		[ -f "$h" ] && break
	done
	[ -f "$h" ] || { echo "no nccl.h anywhere (carry .carry/nccl.h)"; return 1; }
	nccl_prefix=$work/nccl
	rm -rf "$nccl_prefix"
	mkdir -p "$nccl_prefix/include" "$nccl_prefix/lib"
	cp "$h" "$nccl_prefix/include/nccl.h"
	ln -s "$lib" "$nccl_prefix/lib/libnccl.so"
	echo "NCCL: library $lib (version ${nccl_lib_version:-unknown}), header $h ($(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{printf "%s%s", s, $3; s="."}' "$h"))"
}

# The helper needs only the driver: hide every CUDA runtime from the
# loader (ld.so.cache and LD_LIBRARY_PATH), as on a node where PyTorch
# from pip brings its own.  An NCCL that lived beside the hidden runtime
# is put back, alone, as the node's system NCCL.
sys_nccl=
hide_cuda_runtime() {
	local lib dir conf nccl pass
	[ "$dryrun" = 1 ] && return 0
	echo "LD_LIBRARY_PATH was: ${LD_LIBRARY_PATH:-unset}"
	unset LD_LIBRARY_PATH
	nccl=$(ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ { print $NF; exit }')
	# Several files may list (other spellings of) the same directory:
	# hide what ld.so.cache shows until no libcudart is left.
	for pass in 1 2 3 4 5; do
		ldconfig -p | grep -q 'libcudart\.so' || break
		for lib in $(ldconfig -p | awk '$1 ~ /^libcudart\.so/ { print $NF }'); do
			dir=$(dirname "$(readlink -f "$lib")")
			for conf in /etc/ld.so.conf.d/*.conf /etc/ld.so.conf; do
				[ -f "$conf" ] || continue
				grep -qxF "$(dirname "$lib")" "$conf" ||
					grep -qxF "$dir" "$conf" || continue
				echo "pass $pass: hiding $(dirname "$lib") from $conf (holds $(basename "$lib"))"
				grep -vxF -e "$(dirname "$lib")" -e "$dir" "$conf" >"$conf.sn-tmp" || :
				mv -f "$conf.sn-tmp" "$conf"
			done
		done
		ldconfig
	done
	if [ -n "$nccl" ] && ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
		mkdir -p /opt/sn-system-nccl
		ln -sfn "$(readlink -f "$nccl")" /opt/sn-system-nccl/libnccl.so.2
		echo /opt/sn-system-nccl >/etc/ld.so.conf.d/zz-sn-system-nccl.conf
		ldconfig
		echo "system NCCL $nccl re-registered alone in /opt/sn-system-nccl"
	fi
	sys_nccl=$(ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ { print $NF; exit }')
	if ldconfig -p | grep -q 'libcudart\.so'; then
		ldconfig -p | grep libcudart
		return 1
	fi
	echo "no libcudart in the loader path; system NCCL: ${sys_nccl:-none}"
}

# No make on the node: the same objects with plain gcc.
build_with_gcc() {
	local s=$work/src b=$work/build
	local flags=(-std=gnu11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror
		-Wno-unused-parameter -Wno-format-truncation -fPIC
		$(find "$s/src/core" "$s/src/warmup" -mindepth 1 -type d -printf '-I%p ') \
		-I"$s/src/warmup" -I"$b" '-DSYSCONFDIR="/usr/local/etc"'
		'-DLIBEXECDIR="/usr/local/libexec"')
	mkdir -p "$b/src/plugin/.libs" "$b/src/warmup"
	gcc "${flags[@]}" -I"$sl_root/usr/include" -shared \
		-o "$b/src/plugin/.libs/spank_nccl.so" \
		-Wl,--version-script="$s/src/plugin/spank_nccl.map" \
		"$s"/src/core/*/*.c "$s"/src/plugin/*.c &&
	gcc "${flags[@]}" '-DWU_VERSION="gcc-build"' -I"$cuda/include" \
		-I"$nccl_prefix/include" -I"$sl_root/usr/include" \
		-o "$b/src/warmup/nccl-warmup" \
		"$s"/src/core/*/*.c "$s"/src/warmup/*.c "$s"/src/warmup/fabric/*.c \
		-L"$sl_root/usr/lib/x86_64-linux-gnu" -lmunge -lpthread -ldl
}

# configure_and_make CONFIGURE_ARGS...: into build.log.
configure_and_make() {
	(
		cd "$work/build" &&
		"$work/src/configure" --with-cuda="$cuda" \
			--with-nccl="$nccl_prefix" --with-munge="$sl_root/usr" "$@" &&
		if command -v make >/dev/null; then
			make -j16
		else
			echo "no make on this node: building with plain gcc"
			build_with_gcc
		fi
	) >"$out/build.log" 2>&1
}

build_project() {
	local tarballs
	phase "build"
	tarballs=("$carry"/spank-nccl-*.tar.xz)
	{ [ ${#tarballs[@]} -eq 1 ] && [ -f "${tarballs[0]}" ]; } ||
		die_setup build "want exactly one $carry/spank-nccl-*.tar.xz (tests/gpu/fetch-debs.sh), found ${#tarballs[@]}"
	say "$(grep -h '^# tarball:' "$carry/MANIFEST" 2>/dev/null)"
	rm -rf "$work/src" "$work/build"
	mkdir -p "$work/src" "$work/build"
	tar -xJf "${tarballs[0]}" -C "$work/src" --strip-components=1 ||
		die_setup build "cannot unpack ${tarballs[0]}"
	find_nccl || die_setup build "NCCL not usable"
	if hide_cuda_runtime; then
		record PASS no-cuda-runtime-in-loader-path
	else
		record FAIL no-cuda-runtime-in-loader-path "a libcudart stays in ld.so.cache (run.log)"
	fi
	if ! configure_and_make --with-slurm="$sl_root/usr"; then
		tail -n 40 "$out/build.log"
		tail -n 8 "$out/build.log" >&3
		record FAIL build-with-slurm-prefix "configure --with-slurm=$sl_root/usr && make failed (build.log); retrying with CPPFLAGS=-isystem"
		# Slurm's headers are not -Wstrict-prototypes clean: given with
		# -I they fail a -Werror build, as system headers they do not.
		mv "$out/build.log" "$work/build-with-slurm.log"
		rm -rf "$work/build"
		mkdir -p "$work/build"
		configure_and_make CPPFLAGS="-isystem $sl_root/usr/include" || {
			tail -n 40 "$out/build.log"
			tail -n 15 "$out/build.log" >&3
			cat "$work/build-with-slurm.log" >>"$out/build.log"
			die_setup build "configure/make failed (build.log)"
		}
		{ echo "==== first attempt (--with-slurm):"; cat "$work/build-with-slurm.log"; } >>"$out/build.log"
	fi
	say "$(sed -n '/spank-nccl [0-9]/,/warnings as errors/p' "$out/build.log")"
	[ -x "$work/build/src/warmup/nccl-warmup" ] ||
		die_setup build "nccl-warmup was not built (configure did not find CUDA+NCCL?)"
	[ -f "$work/build/src/plugin/.libs/spank_nccl.so" ] ||
		die_setup build "spank_nccl.so was not built"
	if [ "$dryrun" = 1 ]; then
		(cd "$work/build" && make fake-libs) >>"$out/build.log" 2>&1 ||
			die_setup build "make fake-libs failed"
	fi
	ldd "$work/build/src/warmup/nccl-warmup"
	check_ldd "$work/build/src/warmup/nccl-warmup" "$work/build/src/plugin/.libs/spank_nccl.so" ||
		die_setup build "built objects have unresolved libraries"
	gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC \
		-o "$work/interpose.so" "$src/tests/gpu/interpose.c" -ldl ||
		die_setup build "cannot build tests/gpu/interpose.c"
	record PASS build
	build_before
}

# The bench's "before": nccl-warmup of SN_GPU_BEFORE_SRC (a source tree
# of the previous helper, linked with libcudart and libnccl), built with
# gcc; its RUNPATH finds the toolkit's libcudart, hidden from ld.so.
before_helper=
build_before() {
	local b=${SN_GPU_BEFORE_SRC:-} f srcs=()
	[ -n "$b" ] && [ -f "$b/src/warmup/main.c" ] || return 0
	# The helper's own sources, as its Makefile.inc lists them.
	for f in $(sed -n '/^src_warmup_nccl_warmup_SOURCES/,/^$/p' \
			"$b/src/warmup/Makefile.inc" | grep -o 'src/warmup/[a-z_]*\.c'); do
		srcs+=("$b/$f")
	done
	if gcc -std=gnu11 -O2 -D_GNU_SOURCE -w -I"$b/src/core" -I"$work/build" \
		'-DWU_VERSION="before"' -I"$cuda/include" -I"$nccl_prefix/include" \
		-o "$work/nccl-warmup-before" "$b"/src/core/*.c "${srcs[@]}" \
		-L"$cuda/lib64" -L"$nccl_prefix/lib" -Wl,-rpath,"$cuda/lib64" \
		-lnccl -lcudart -lpthread >>"$out/build.log" 2>&1; then
		before_helper=$work/nccl-warmup-before
		say "bench before: $before_helper from $b ($(ldd "$before_helper" | grep -Eo 'libcudart[^ ]*|libnccl[^ ]*' | paste -sd' '))"
	else
		say "bench before: cannot build $b (build.log); bench without it"
	fi
}

# ---------------------------------------------------------------------
# 3. The cluster (generic parts from tests/cluster/cluster.sh)

gpu_write_slurm_conf() {
	local d=$SN_CLUSTER_DIR cpus last
	# config_overrides: at least 32 CPUs advertised, so one-task-per-GPU
	# steps fit on small rehearsal machines too.
	cpus=$(nproc)
	[ "$cpus" -ge 32 ] || cpus=32
	last=$((gpu_count - 1))
	cat >"$d/etc/slurm.conf" <<EOF
# Generated by tests/gpu/run-gpu-tests.sh
ClusterName=spankncclgpu
SlurmctldHost=localhost(127.0.0.1)
EOF
	sn_slurm_conf_common "$d" >>"$d/etc/slurm.conf"
	cat >>"$d/etc/slurm.conf" <<EOF
NodeName=n1 NodeAddr=127.0.0.1 CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 Gres=gpu:$gpu_count State=UNKNOWN
PartitionName=gpu Nodes=n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
	if [ "$dryrun" = 1 ]; then
		mkdir -p "$d/dev"
		for ((i = 0; i < gpu_count; i++)); do
			ln -sfn /dev/null "$d/dev/nvidia$i"
		done
		printf 'AutoDetect=off\nNodeName=n1 Name=gpu File=%s/dev/nvidia[0-%d]\n' \
			"$d" "$last" >"$d/etc/gres.conf"
	else
		printf 'AutoDetect=off\nNodeName=n1 Name=gpu File=/dev/nvidia[0-%d]\n' \
			"$last" >"$d/etc/gres.conf"
	fi
	# Pure cgroup v2 without systemd: slurmd 22.05 always starts its
	# cgroup plugin, which needs the controllers delegated by hand.
	if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ "$dryrun" != 1 ]; then
		printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$d/etc/cgroup.conf"
		mkdir -p /sys/fs/cgroup/system.slice
		echo "+cpuset +cpu +memory" >/sys/fs/cgroup/cgroup.subtree_control ||
			echo "note: cannot enable cgroup controllers at the root"
		echo "+cpuset +cpu +memory" >/sys/fs/cgroup/system.slice/cgroup.subtree_control ||
			echo "note: cannot enable cgroup controllers in system.slice"
	fi
	chmod 0644 "$d"/etc/*.conf
}

gpu_cluster_start() {
	local d=$SN_CLUSTER_DIR
	sn__cluster_stop >/dev/null 2>&1
	rm -rf "$d"
	mkdir -p "$d"/{etc,state,spool/n1,run,log,lib,libexec,dev,tmp}
	chmod 0755 "$d" "$d"/{etc,spool,run,log,lib,libexec,dev}
	chmod 1777 "$d/tmp"
	sn_cluster_ensure_user || return 1
	sn_cluster_install_artifacts || return 1
	install -m 0755 "$work/interpose.so" "$d/lib/interpose.so"
	gpu_write_slurm_conf
	sn_plugstack_reset
	sn__start_munge || return 1
	slurmctld -f "$SLURM_CONF" >>"$d/log/slurmctld.out" 2>&1 || {
		sn__dump_logs
		return 1
	}
	sn__wait_for 100 sh -c 'scontrol ping | grep -q "is UP"' || {
		sn__dump_logs
		return 1
	}
	slurmd -f "$SLURM_CONF" -N n1 >>"$d/log/slurmd-n1.out" 2>&1 || {
		sn__dump_logs
		return 1
	}
	sn__wait_nodes_idle
}

start_cluster() {
	phase "cluster"
	export SN_CLUSTER_DIR=/tmp/sn-gpu-cluster
	export SN_BUILD_DIR=$work/build SN_SRC_DIR=$work/src SN_NODES=1
	export SN_PROFILES_SRC=$work/src/etc/nccl-profiles.conf
	# shellcheck source=tests/cluster/cluster.sh
	source "$src/tests/cluster/cluster.sh" ||
		die_setup cluster "cannot source tests/cluster/cluster.sh"
	# The daemons must not inherit the console (fd 3): a caller waiting
	# for the end of the output would wait for them too.
	gpu_cluster_start 3>&- || die_setup cluster "the Slurm cluster did not come up (run.log)"
	sinfo -N -o '%N %T %G %c'
	if [ "$dryrun" = 1 ]; then
		# The jobs (and so the helper) load the fake driver and NCCL.
		export LD_LIBRARY_PATH=$SN_CLUSTER_DIR/fake/cuda:$SN_CLUSTER_DIR/fake/nccl
	fi
	say "cluster up: $(sinfo -h -N -o '%N %T %G') ($(elapsed) s)"
	record PASS cluster
}

# ---------------------------------------------------------------------
# 4. The checks

srun_rc=0
srun_s=0
srun_out=
srun_err=

# run_srun LIMIT ARGS...: srun under a deadline; sets srun_rc, srun_s,
# srun_out, srun_err (file names) and logs all of it.
run_srun() {
	local limit=$1 t0
	shift
	srun_out=$work/srun.out
	srun_err=$work/srun.err
	echo "+ srun $*"
	t0=$EPOCHREALTIME
	timeout -k 5 "$limit" srun --immediate=30 -N1 "$@" >"$srun_out" 2>"$srun_err"
	srun_rc=$?
	srun_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	echo "  rc=$srun_rc in $srun_s s"
	sed 's/^/  out| /' "$srun_out" | head -n 60
	sed 's/^/  err| /' "$srun_err" | head -n 60
}

log_mark() {
	wc -l <"$(sn_slurmd_log n1)"
}

log_since() {
	tail -n +"$(($1 + 1))" "$(sn_slurmd_log n1)"
}

# warmup_records MARK ARGS...: warmup_log.py over the log since MARK.
warmup_records() {
	local mark=$1
	shift
	log_since "$mark" | python3 "$src/tests/gpu/warmup_log.py" --print "$@"
}

gpus_idle_now() {
	local tries=20
	while ((tries-- > 0)); do
		SN_GPU_BASELINE=$gpu_baseline python3 "$src/tests/gpu/gpu_state.py" \
			check-idle >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	SN_GPU_BASELINE=$gpu_baseline python3 "$src/tests/gpu/gpu_state.py" check-idle
	return 1
}

# Helpers of this cluster only (other test clusters on a rehearsal
# machine run their own nccl-warmup).
no_helper_left() {
	local p left="" helper
	helper=$(sn_helper_path)
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = nccl-warmup ] || continue
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$helper" ] ||
			[ "$(awk '{ print $3 }' "$p/stat" 2>/dev/null)" = Z ] ||
			continue
		left="$left $(basename "$p")"
	done
	[ -z "$left" ] || { echo "nccl-warmup still running:$left"; return 1; }
}

srun_ok() { [ "$srun_rc" -eq 0 ]; }
lacks() { ! grep -q -- "$1" "$2"; }
srun_failed() { [ "$srun_rc" -ne 0 ] && [ "$srun_rc" -ne 124 ] && [ "$srun_rc" -ne 137 ]; }
err_has() { grep -Eq -- "$1" "$srun_err"; }
err_has_i() { grep -Eqi -- "$1" "$srun_err"; }
out_has() { grep -Eq -- "$1" "$srun_out"; }
within() { awk -v s="$srun_s" -v l="$1" 'BEGIN { exit !(s <= l) }'; }

plugstack() {
	# shellcheck disable=SC2086
	sn_plugstack_set "$@"
	echo "  plugstack: $(cat "$SN_CLUSTER_DIR/etc/plugstack.conf")"
}

gres() { echo "--gres=gpu:$gpu_count"; }

t_no_warmup() {
	local mark
	mark=$(log_mark)
	run_srun 30 "$(gres)" true
	want "srun exits 0" srun_ok
	want "no warmup without --nccl-warmup" \
		lacks "nccl-warmup" <(log_since "$mark")
}

t_ddp_profiles() {
	local mark shm_before
	mark=$(log_mark)
	shm_before=$(ls /dev/shm 2>/dev/null | sort)
	PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 \
	SN_GPU_BASELINE=$gpu_baseline \
		run_srun 180 "$(gres)" --nccl-warmup \
		--nccl-profile=nccl-cumem-off,expandable-segments \
		python3 "$src/tests/gpu/ddp_check.py" --gpus "$gpu_count" \
		--user-key max_split_size_mb:256
	want "srun exits 0 (ddp_check.py: GPUs idle, profile env, all_reduce)" srun_ok
	want "ddp_check.py reports ok" out_has "ddp_check: ok: $gpu_count ranks"
	# warmup_teardown=exit (the default) must leave nothing behind either.
	want "nothing new left in /dev/shm" \
		test "$(ls /dev/shm 2>/dev/null | sort)" = "$shm_before"
	want "one passed comm warmup over $gpu_count GPUs in the log" \
		warmup_records "$mark" --count 1 --status passed --mode comm \
		--gpus "$gpu_count" --busids "$gpu_busids" --uid 0
}

t_one_warmup_per_node() {
	local mark
	mark=$(log_mark)
	run_srun 60 -n "$gpu_count" "$(gres)" --nccl-warmup \
		printenv SLURM_PROCID
	want "srun exits 0" srun_ok
	want "$gpu_count tasks ran" \
		test "$(sort -u "$srun_out" | grep -c '^[0-9]')" -eq "$gpu_count"
	want "exactly one warmup for the $gpu_count-task step" \
		warmup_records "$mark" --count 1 --status passed
}

# Summary line of a verbose warmup: "spank-nccl: warmup ok on NODE: 4 GPUs
# [busids], NCCL x.y.z, MODE mode, ..." on srun's stderr.  NODE is the
# Slurm node name or, where the plugin cannot learn it in user_init, the
# host name (they differ here: slurmd -N n1).
check_summary() {
	local mode=$1 id
	want "verbose summary says ok on n1 or $(hostname)" \
		err_has "spank-nccl: warmup ok on (n1|$(hostname)):"
	want "summary names $gpu_count GPUs" err_has "[^0-9]$gpu_count GPUs? \\["
	for id in ${gpu_busids//,/ }; do
		want "summary names bus ID $id" err_has_i "$id"
	done
	if [ -n "$nccl_lib_version" ]; then
		want "summary names NCCL $nccl_lib_version" err_has "NCCL $nccl_lib_version"
	else
		want "summary names an NCCL version" err_has "NCCL [0-9]+\\.[0-9]+\\.[0-9]+"
	fi
	want "summary says $mode mode" err_has "$mode mode"
}

t_mode() {
	local mode=$1 mark
	mark=$(log_mark)
	SN_GPU_BASELINE=$gpu_baseline run_srun 60 "$(gres)" \
		--nccl-warmup="$mode,verbose" \
		python3 "$src/tests/gpu/gpu_state.py" check-idle
	want "srun exits 0 (task found the GPUs idle)" srun_ok
	check_summary "$mode"
	want "one passed $mode warmup in the log" \
		warmup_records "$mark" --count 1 --status passed --mode "$mode" \
		--gpus "$gpu_count"
	[ "$mode" = bandwidth ] &&
		want "summary gives busbw" err_has "busbw [0-9.]+ GB/s"
}
t_mode_check() { t_mode check; }
t_mode_comm() { t_mode comm; }
t_mode_bandwidth() { t_mode bandwidth; }

t_busbw_floor_met() {
	plugstack warmup_min_busbw=10
	run_srun 60 "$(gres)" --nccl-warmup=bandwidth,verbose echo TASK-RAN
	want "srun exits 0 at a 10 GB/s floor" srun_ok
	want "the task ran" out_has TASK-RAN
	sn_plugstack_reset
}

t_busbw_floor_missed() {
	plugstack warmup_min_busbw=100000
	run_srun 60 "$(gres)" --nccl-warmup=bandwidth echo TASK-RAN
	want "srun fails at a 100000 GB/s floor" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	want "stderr has spank-nccl: ... bandwidth" err_has "spank-nccl:.*bandwidth"
	want "stderr names the floor" err_has "100000"
	sn_plugstack_reset
}

# fault NAME EXPECT_RE LIMIT_S: a fault from tests/gpu/interpose.c.
fault() {
	local name=$1 expect=$2 limit=$3 mark
	mark=$(log_mark)
	rm -f "$SN_CLUSTER_DIR/tmp/fault.log"
	run_srun 60 "$(gres)" --nccl-warmup=comm \
		--export="ALL,LD_PRELOAD=$SN_CLUSTER_DIR/lib/interpose.so,SN_FAULT=$name,SN_FAULT_LOG=$SN_CLUSTER_DIR/tmp/fault.log" \
		echo TASK-RAN
	want "srun fails" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	want "stderr has spank-nccl: and /$expect/" err_has "spank-nccl:.*($expect)"
	want "srun ended within $limit s (took $srun_s s)" within "$limit"
	want "the log records a failed warmup" \
		warmup_records "$mark" --count 1 --status failed
	want "the fault was injected (not a real failure)" \
		grep -q "injecting fault $name" "$SN_CLUSTER_DIR/tmp/fault.log"
	want "no nccl-warmup process left" no_helper_left
	want "GPUs idle again" gpus_idle_now
}

t_fault_dup_busid() {
	if [ "$gpu_count" -lt 2 ]; then
		t_problems+=("needs 2 GPUs, the node has $gpu_count")
		return
	fi
	fault dup_busid "duplicate PCI bus ID" 20
}

timeout_re="timed out|did not finish"
t_fault_init_hang() {
	plugstack warmup_timeout=5
	fault init_hang "$timeout_re" 7.5
	sn_plugstack_reset
}
t_fault_async_hang() {
	plugstack warmup_timeout=5
	fault async_hang "$timeout_re" 7.5
	sn_plugstack_reset
}
t_fault_wedged() {
	plugstack warmup_timeout=5
	fault wedged "did not finish within 5 s and was killed" 7.5
	sn_plugstack_reset
}

err_has_f() { grep -qF -- "$1" "$srun_err"; }

# The NCCL of PyTorch's nvidia-nccl-cu* wheel in the venv, and its version.
venv_nccl=
venv_nccl_version=
find_venv_nccl() {
	venv_nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
	venv_nccl_version=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)
	[ -f "$venv_nccl/libnccl.so.2" ]
}

t_driver_only() {
	want "nccl-warmup links no CUDA or NCCL library" \
		sh -c "! ldd '$(sn_helper_path)' | grep -E 'libcuda|libnccl'"
	want "no libcudart in the loader path" \
		sh -c "! ldconfig -p | grep -q libcudart"
	run_srun 60 "$(gres)" --nccl-warmup=comm,verbose echo TASK-RAN
	want "srun exits 0" srun_ok
	want "the task ran" out_has TASK-RAN
	want "summary names the driver" err_has "driver [^,]*[0-9]+\\.[0-9]+"
	if [ -n "$sys_nccl" ]; then
		want "summary names the system NCCL $nccl_lib_version at $sys_nccl" \
			err_has_f "NCCL ${nccl_lib_version:-} from $sys_nccl (system)"
	fi
	want "summary gives the NCCL memory per GPU" err_has "NCCL memory [0-9/]+ MiB"
	say "  $(grep -o 'driver [^,]*, NCCL [^,]*, comm mode, NCCL memory [^,]*' "$srun_err")"
}

t_venv_nccl() {
	if ! find_venv_nccl; then
		t_problems+=("no nvidia-nccl wheel in python3's environment")
		return
	fi
	run_srun 60 "$(gres)" --nccl-warmup="comm,verbose,nccl=$venv_nccl" echo TASK-RAN
	want "srun exits 0 (nccl=venv)" srun_ok
	want "summary names the venv's NCCL $venv_nccl_version at $venv_nccl (user)" \
		err_has_f "NCCL $venv_nccl_version from $venv_nccl/libnccl.so.2 (user)"
	say "  $(grep -o 'NCCL [0-9.]* from [^,]*, comm mode, NCCL memory [^,]*' "$srun_err")"
	run_srun 60 "$(gres)" --export="ALL,LD_PRELOAD=$venv_nccl/libnccl.so.2" \
		--nccl-warmup=comm,verbose echo TASK-RAN
	want "srun exits 0 (LD_PRELOAD)" srun_ok
	want "the preloaded venv NCCL is warmed (preload)" \
		err_has_f "NCCL $venv_nccl_version from $venv_nccl/libnccl.so.2 (preload)"
	run_srun 60 "$(gres)" --export="ALL,LD_LIBRARY_PATH=$venv_nccl" \
		--nccl-warmup=comm,verbose echo TASK-RAN
	want "srun exits 0 (LD_LIBRARY_PATH)" srun_ok
	want "the venv NCCL in LD_LIBRARY_PATH is warmed (ld_library_path)" \
		err_has_f "NCCL $venv_nccl_version from $venv_nccl/libnccl.so.2 (ld_library_path)"
	run_srun 60 "$(gres)" --export="ALL,NCCL_CUMEM_ENABLE=0" \
		--nccl-warmup="comm,verbose,nccl=$venv_nccl" echo TASK-RAN
	want "srun exits 0 (NCCL_CUMEM_ENABLE=0)" srun_ok
	say "  NCCL_CUMEM_ENABLE=0: $(grep -o 'NCCL memory [^,]*' "$srun_err")"
}

t_algo_tree() {
	local mark nccl_word=
	find_venv_nccl && nccl_word=",nccl=$venv_nccl"
	mark=$(log_mark)
	run_srun 60 "$(gres)" --export="ALL,NCCL_ALGO=Tree" \
		--nccl-warmup="comm$nccl_word" echo TASK-RAN
	want "srun fails" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	want "the failure names broadcast" err_has "NCCL broadcast failed"
	want "the failure names NCCL_ALGO=Tree" err_has "NCCL_ALGO=Tree"
	want "the failure points at the rule/profile" err_has "ppo-tree"
	want "the log records failed_op broadcast" \
		grep -q '"failed_op":"broadcast"' <(log_since "$mark")
	say "  $(grep -o 'NCCL broadcast failed[^;]*' "$srun_err" | head -n 1)"
}

t_unprivileged() {
	local mark uid gid extra
	uid=$(id -u "$SN_USER")
	gid=$(id -g "$SN_USER")
	extra=$(getent group "$SN_USER_GROUP2" | cut -d: -f3)
	mark=$(log_mark)
	echo "+ (as $SN_USER) srun $(gres) --nccl-warmup=comm id"
	(cd "$SN_CLUSTER_DIR/tmp" &&
	 timeout -k 5 60 runuser -u "$SN_USER" -- env PATH="$PATH" \
		SLURM_CONF="$SLURM_CONF" NCCL_NVLS_ENABLE=0 \
		TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
		${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} \
		srun --immediate=30 -N1 "$(gres)" --nccl-warmup=comm id \
		>"$work/srun.out" 2>"$work/srun.err")
	srun_rc=$?
	srun_out=$work/srun.out
	srun_err=$work/srun.err
	sed 's/^/  out| /' "$srun_out"
	sed 's/^/  err| /' "$srun_err"
	want "srun as $SN_USER exits 0" srun_ok
	want "the task ran as $SN_USER" out_has "uid=$uid\\("
	want "the helper ran as uid $uid, gid $gid, with group $extra" \
		warmup_records "$mark" --count 1 --status passed --uid "$uid" \
		--gid "$gid" --group "$extra"
}

run_checks() {
	phase "checks ($gpu_count GPUs)"
	run_test no-warmup-without-option t_no_warmup 40
	run_test driver-only-system-nccl t_driver_only 70
	run_test venv-nccl-named t_venv_nccl 200
	run_test nccl-algo-tree-refused t_algo_tree 70
	run_test ddp-profiles-merge t_ddp_profiles 190
	run_test one-warmup-per-node t_one_warmup_per_node 70
	run_test mode-check t_mode_check 70
	run_test mode-comm t_mode_comm 70
	run_test mode-bandwidth t_mode_bandwidth 70
	run_test busbw-floor-met t_busbw_floor_met 70
	run_test busbw-floor-missed t_busbw_floor_missed 70
	run_test fault-duplicate-busid t_fault_dup_busid 70
	run_test fault-init-hang t_fault_init_hang 70
	run_test fault-async-hang t_fault_async_hang 70
	run_test fault-wedged t_fault_wedged 70
	run_test unprivileged-user t_unprivileged 70
}

run_bench() {
	[ "${SN_GPU_BENCH:-1}" = 1 ] || return 0
	phase "bench"
	if [ "$(seconds_left)" -lt 170 ]; then
		record FAIL bench "not run: only $(seconds_left) s left"
		return
	fi
	if [ -n "$before_helper" ]; then
		install -m 0755 "$before_helper" "$SN_CLUSTER_DIR/libexec/nccl-warmup-before"
		export SN_HELPER_BEFORE=$SN_CLUSTER_DIR/libexec/nccl-warmup-before
		export SN_BENCH_PLUGSTACK=$SN_CLUSTER_DIR/etc/plugstack.conf
	fi
	if SN_HELPER=$(sn_helper_path) SN_BENCH_GPUS=$gpu_count \
	   timeout -k 5 "$(($(seconds_left) - 15))" \
	   bash "$src/bench/warmup-bench.sh" >"$out/bench.txt" 2>&1; then
		cat "$out/bench.txt" >&3
		record PASS bench
	else
		cat "$out/bench.txt" >&3
		record FAIL bench "bench/warmup-bench.sh failed (bench.txt)"
	fi
	# Warmup reuse: batch jobs with 1, 4, 10 sruns, reuse off and on.
	if [ "$(seconds_left)" -lt 150 ]; then
		record FAIL bench-reuse "not run: only $(seconds_left) s left"
	elif SN_BENCH_RUNS=${SN_REUSE_BENCH_RUNS:-1} \
	   timeout -k 5 "$(($(seconds_left) - 15))" \
	   bash "$src/bench/warmup-reuse.sh" >"$out/bench-reuse.txt" 2>&1; then
		cat "$out/bench-reuse.txt" >&3
		record PASS bench-reuse
	else
		cat "$out/bench-reuse.txt" >&3
		record FAIL bench-reuse "bench/warmup-reuse.sh failed (bench-reuse.txt)"
	fi
}

# shellcheck source=tests/gpu/fabric-gpu.sh
source "$src/tests/gpu/fabric-gpu.sh" || {
	echo "run-gpu-tests.sh: cannot source $src/tests/gpu/fabric-gpu.sh (not in the tarball?)" >&2
	exit 1
}
# shellcheck source=tests/gpu/fabric-one-gpu.sh
source "$src/tests/gpu/fabric-one-gpu.sh" || {
	echo "run-gpu-tests.sh: cannot source $src/tests/gpu/fabric-one-gpu.sh (not in the tarball?)" >&2
	exit 1
}

mkdir -p "$work"
chmod 0755 "$work"
say "spank-nccl GPU tests: $src (dry run: $dryrun), results in $out"
[ "$(id -u)" -eq 0 ] || die_setup setup "must run as root"
describe_node
setup_slurm
build_project
start_cluster
run_checks
run_bench
run_fabric
finish
[ "$failed" -eq 0 ]
