# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The GPU tests' phase 1, sourced by tests/gpu/run-gpu-tests.sh: Slurm and
# munge from the carried Debian debs (.carry/debs), unpacked into $sl_root,
# since the node has no package registry and no network.

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
	local dir=$sl_root/syslib f name added=0 have conf=/etc/ld.so.conf.d/zz-spank-nccl-gpu-test.conf
	# A second run on the same machine: the first one's entries point
	# into the $sl_root just removed; forget them before looking.
	if [ "$dryrun" != 1 ] && [ -e "$conf" ]; then
		rm -f "$conf"
		ldconfig
	fi
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
	echo "$dir" >"$conf"
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
