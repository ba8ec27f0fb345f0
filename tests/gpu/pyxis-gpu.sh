# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Real pyxis on the GPU node (issue 36 item 4), sourced by
# run-gpu-tests.sh after its single-node checks: enroot and squashfs-tools
# from .carry/enroot (tests/gpu/lib/enroot.sh), pyxis built from its
# carried source against the carried Slurm headers
# (tests/cluster/containers.sh's sn_pyxis_build), listed before spank-nccl
# in plugstack.conf, and an image of the node's own sh/coreutils holding
# the venv's NCCL (PyTorch's nvidia-nccl-cu* wheel) where a venv in an
# image would; then, as the unprivileged job user,
#
#   srun --container-image=./venv-nccl.sqsh --nccl-warmup=comm,verbose
#
# The dry run uses this machine's enroot and mksquashfs, enroot's
# configuration in a private copy, and the fake NCCL in the image.

pyxis_dir=
pyxis_wheel=
pyxis_tmp_mode=
pyxis_stage=

# The images in the cluster's tmp directory (the job user's cwd):
# venv-nccl.sqsh holds the venv's NCCL, broken-nccl.sqsh junk at its place.
pyxis_setup() {
	local etc=/usr/local/etc/enroot ncclfile pyver root tmpd
	pyxis_dir=$work/pyxis
	rm -rf "$pyxis_dir"
	mkdir -p "$pyxis_dir/share"
	chmod 0755 "$pyxis_dir"
	chmod 0777 "$pyxis_dir/share"
	pyxis_stage="enroot and squashfs-tools"
	if [ "$dryrun" = 1 ]; then
		if ! command -v enroot >/dev/null || ! command -v mksquashfs >/dev/null; then
			echo "dry run: install enroot (containers.bats) and squashfs-tools here"
			return 1
		fi
		# enroot's configuration: a private copy (mount namespace).
		cp -a "$etc" "$pyxis_dir/enroot-etc" && mount --bind "$pyxis_dir/enroot-etc" "$etc" ||
			return 1
	else
		gpu_enroot_install "$carry/enroot" /opt/sn-squashfs || return 1
	fi
	gpu_enroot_configure "$pyxis_dir/enroot" "$etc" || return 1
	gpu_enroot_no_nvidia_hook
	# pyxis writes enroot's start script into /tmp (mkstemp).
	pyxis_tmp_mode=$(stat -c %a /tmp)
	[ "$pyxis_tmp_mode" = 1777 ] || chmod 1777 /tmp

	# pyxis against the carried Slurm headers (in /usr/include/slurm,
	# where sn_release_local and pyxis's includes look).
	pyxis_stage="pyxis's build"
	sys_link "$sl_root/usr/include/slurm" /usr/include/slurm || return 1
	export SN_PYXIS_CACHE=$pyxis_dir/build SN_THIRD_PARTY_DIR=$carry/enroot
	sn_pyxis_build || return 1
	echo "pyxis: $(sn_pyxis_so)"

	pyxis_stage="the images"
	if [ "$dryrun" = 1 ]; then
		ncclfile=$(sn_fake_dir nccl)/libnccl.so.2
	elif find_venv_nccl; then
		ncclfile=$venv_nccl/libnccl.so.2
	else
		echo "no nvidia-nccl wheel in python3's environment"
		return 1
	fi
	pyver=$(python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])') || return 1
	pyxis_wheel=$(gpu_image_wheel_dir "$pyver")
	root=$pyxis_dir/root
	tmpd=$SN_CLUSTER_DIR/tmp
	gpu_image_root "$root" "$ncclfile" || return 1
	mkdir -p "$root$pyxis_wheel"
	cp -L "$ncclfile" "$root$pyxis_wheel/libnccl.so.2" &&
	gpu_image_squash "$root" "$tmpd/venv-nccl.sqsh" || return 1
	echo 'not a library' >"$root$pyxis_wheel/libnccl.so.2"
	gpu_image_squash "$root" "$tmpd/broken-nccl.sqsh" || return 1
	rm -rf "$root"
	ls -l "$tmpd"/*.sqsh

	pyxis_stage="plugstack.conf"
	export SN_PYXIS=1
	sn_plugstack_reset
	echo "plugstack: $(cat "$SN_CLUSTER_DIR/etc/plugstack.conf")"
	head -n 1 "$SN_CLUSTER_DIR/etc/plugstack.conf" | grep -q spank_pyxis.so ||
		{ echo "pyxis is not listed first in plugstack.conf"; return 1; }
	say "  pyxis $SN_PYXIS_VERSION built, enroot $(enroot version), images $(du -h "$tmpd/venv-nccl.sqsh" | cut -f1) (NCCL from $ncclfile) and $(du -h "$tmpd/broken-nccl.sqsh" | cut -f1)"
}

pyxis_teardown() {
	export SN_PYXIS=0
	sn_plugstack_reset
	[ -z "$pyxis_tmp_mode" ] || chmod "$pyxis_tmp_mode" /tmp
}

# The step's GPUs and tasks, in IMAGE, as the job user.
pyxis_srun() {
	local limit=$1 image=$2
	shift 2
	run_srun_as_user "$limit" -n "$gpu_count" "$(gres)" \
		--container-image="./$image" "$@"
}

pyxis_tasks_waiting() {
	local f=("$pyxis_dir"/share/started.*)
	[ -e "${f[0]}" ] && [ "${#f[@]}" -ge "$gpu_count" ]
}
pyxis_waiting_or_ended() { pyxis_tasks_waiting || ! kill -0 "$1" 2>/dev/null; }

# (a) The image's NCCL named, the tasks run in the container as the job
# user, and each finds the GPUs idle: the tasks wait (in a mount shared
# with the host) while nvidia-smi looks.
t_pyxis_nccl() {
	local mark uid share=$pyxis_dir/share nccl_re pid
	uid=$(id -u "$SN_USER")
	rm -f "$share"/* "$work/srun.rc"
	mark=$(log_mark)
	# shellcheck disable=SC2016 # expanded in the task
	pyxis_srun 90 venv-nccl.sqsh --container-mounts="$share:/share" \
		--nccl-warmup=comm,verbose sh -c \
		'echo "TASK-RAN $SLURM_PROCID uid $(id -u)"; touch /share/started.$SLURM_PROCID; i=0; while [ ! -e /share/go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' \
		>"$work/pyxis-srun.log" 2>&1 &
	pid=$!
	sn__wait_for 900 pyxis_waiting_or_ended "$pid"
	want "all $gpu_count tasks started in the container" pyxis_tasks_waiting
	if pyxis_tasks_waiting; then
		want "the GPUs are idle while the tasks run" gpus_idle_now
		say "  GPU memory used (MiB) while the tasks run: $(python3 "$src/tests/gpu/gpu_state.py" baseline) (at the start: $gpu_baseline)"
	fi
	touch "$share/go"
	wait "$pid"
	cat "$work/pyxis-srun.log"
	srun_rc=$(cat "$work/srun.rc" 2>/dev/null || echo 255)
	srun_out=$work/srun.out
	srun_err=$work/srun.err
	want "srun as $SN_USER exits 0" srun_ok
	want "$gpu_count tasks ran as uid $uid" \
		test "$(grep -c "^TASK-RAN [0-9]* uid $uid\$" "$srun_out")" -eq "$gpu_count"
	if [ "$dryrun" = 1 ] || [ -z "$venv_nccl_version" ]; then
		nccl_re="NCCL [0-9.]+"
	else
		nccl_re="NCCL ${venv_nccl_version//./\\.}"
	fi
	want "the summary names the image's NCCL ($nccl_re at $pyxis_wheel)" \
		err_has "spank-nccl: warmup ok on .*$nccl_re from $pyxis_wheel/libnccl\\.so\\.2 \\(container image \\./venv-nccl\\.sqsh\\), comm mode"
	if [ -n "$nccl_lib_version" ] && [ "$nccl_lib_version" != "${venv_nccl_version:-}" ]; then
		want "the summary does not name the node's NCCL $nccl_lib_version" \
			lacks "NCCL $nccl_lib_version " "$srun_err"
	fi
	want "one passed comm warmup as uid $uid in the log" \
		warmup_records "$mark" --count 1 --status passed --mode comm --uid "$uid"
	say "  $(grep -o 'NCCL [0-9.]* from [^,]*, comm mode' "$srun_err")"
}

# (b) A broken NCCL in the image: the step fails before any task runs.
t_pyxis_broken() {
	local mark
	mark=$(log_mark)
	pyxis_srun 60 broken-nccl.sqsh --nccl-warmup=comm sh -c 'echo TASK-RAN'
	want "srun fails" srun_failed
	want "no task ran" lacks TASK-RAN "$srun_out"
	# (The first line is cut at the user-facing width.)
	want "stderr says the image's NCCL cannot be loaded" \
		err_has "spank-nccl: .*cannot load the NCCL named by the container image \\./broken-nccl"
	want "stderr blames the image, not the node" \
		err_has_f "this is the image's fault, not a fault of the node"
	want "the log records a failed warmup" \
		warmup_records "$mark" --count 1 --status failed
	want "no nccl-warmup process left" no_helper_left
	want "GPUs idle again" gpus_idle_now
}

# (c) What --nccl-warmup adds to a pyxis step: without and with,
# alternating, after one discarded pair; medians.  The target is reported,
# never a failure; a failed step is.
t_pyxis_bench() {
	local runs=${SN_PYXIS_BENCH_RUNS:-5} i kind without=() with=() m0 m1
	[ "$runs" -ge 5 ] || runs=5
	for ((i = 0; i <= runs; i++)); do
		for kind in without with; do
			if [ "$kind" = with ]; then
				pyxis_srun 60 venv-nccl.sqsh --nccl-warmup=comm true
			else
				pyxis_srun 60 venv-nccl.sqsh true
			fi
			srun_ok || { t_problems+=("a step $kind the warmup failed (rc $srun_rc)"); return; }
			[ "$i" -eq 0 ] && continue
			if [ "$kind" = with ]; then with+=("$srun_s"); else without+=("$srun_s"); fi
		done
	done
	m0=$(printf '%s\n' "${without[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	m1=$(printf '%s\n' "${with[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	say "  pyxis step ($gpu_count GPUs, $gpu_count tasks, $runs rounds): without ${without[*]}; with ${with[*]}"
	say "  pyxis step: without $m0 s, with $m1 s, visible cost $(awk -v a="$m0" -v b="$m1" 'BEGIN { printf "%.2f", b - a }') s (target ≤ 0.3 s)"
}

run_pyxis() {
	local t
	[ "${SN_GPU_PYXIS:-1}" = 1 ] || return 0
	phase "pyxis (real pyxis + enroot, the venv's NCCL in the image)"
	if [ "$(seconds_left)" -lt 60 ]; then
		record FAIL pyxis-setup "not run: only $(seconds_left) s of the ${budget_s} s budget left"
	elif pyxis_setup; then
		record PASS pyxis-setup
		run_test pyxis-container-nccl t_pyxis_nccl 100
		run_test pyxis-broken-nccl t_pyxis_broken 70
		run_test pyxis-bench t_pyxis_bench 150
		pyxis_teardown
		return
	else
		record FAIL pyxis-setup "failed at $pyxis_stage (run.log)"
	fi
	for t in pyxis-container-nccl pyxis-broken-nccl pyxis-bench; do
		record FAIL "$t" "not run: pyxis-setup failed"
	done
	pyxis_teardown
}
