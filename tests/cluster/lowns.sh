#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# unshare(1) for the mount namespaces the test clusters run slurmd in (a
# release root's namespace, a netns node's): the new mount namespace gets
# an id lower than that of every mount namespace created after it.
#
#   lowns.sh UNSHARE-OPTION... -- COMMAND [ARG...]
#   lowns.sh --check PID   exit 0 when PID's mount namespace is older
#                          (lower id) than one made now on any CPU
#
# Why: job_container/tmpfs (namespace/tmpfs from 25.11; what
# SlurmdParameters=contain_spank needs) gives each job a mount namespace
# and keeps it by bind-mounting /proc/PID/ns/mnt onto BasePath/JOB/.ns
# from slurmstepd, which lives in slurmd's namespace.  The kernel refuses
# that bind with EINVAL when the caller's mount namespace id is not lower
# than the target's (fs/namespace.c mnt_ns_loop(): it prevents reference
# loops).  Ids used to be one global sequence, so slurmd's namespace was
# always older; newer kernels (seen on 6.18) hand ids out in per-CPU
# batches, so a namespace made on one CPU can get a lower id than one made
# earlier on another.  slurmd in the initial namespace (a real node) is
# never hit; slurmd in a namespace of its own fails such jobs at random
# ("_create_ns: ns base mount failed: Invalid argument" in slurmd's log,
# "srun: error: Nodes n1 are still not ready" for the user).
#
# So the namespace is made on the CPU whose next id is the lowest (each
# CPU's is read from a throwaway namespace made there), and checked from
# inside against a fresh namespace on every CPU; a namespace that lost a
# race (that CPU moved to a new batch in between) is replaced by a nested
# one, at most three times.  Where the kernel cannot report mount
# namespace ids (NS_GET_MNTNS_ID, Linux 6.8+) ids are one sequence and
# this is a plain unshare.

set -u
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

# Prints the id of the mount namespace at /proc/PID/ns/mnt (ioctl
# NS_GET_MNTNS_ID = _IOR(0xb7, 5, __u64)); fails where the kernel has no
# such ioctl.  Perl: in every Debian root (perl-base is essential).
# shellcheck disable=SC2016
id_pl='open(my $f, "<", $ARGV[0]) or exit 1;
	my $b = pack("Q", 0); ioctl($f, 0x8008b705, $b) or exit 1;
	print unpack("Q", $b), "\n"'
mntns_id() {
	perl -e "$id_pl" "$1" 2>/dev/null
}

# The online CPUs, one per line (from "0-3,6"): a namespace may be made
# on any of them later, whatever this process's own affinity.
online_cpus() {
	local r
	for r in $(tr ',' ' ' </sys/devices/system/cpu/online); do
		seq "${r%-*}" "${r#*-}"
	done
}

# "CPU ID" for each online CPU we may run on: the id a mount namespace
# made there now gets.
probe_cpus() {
	local c id
	for c in $(online_cpus); do
		id=$(taskset -c "$c" unshare --mount \
			perl -e "$id_pl" /proc/self/ns/mnt 2>/dev/null) || continue
		echo "$c $id"
	done
}

case ${1:-} in
--check)
	own=$(mntns_id "/proc/$2/ns/mnt") || {
		echo "lowns.sh: no mount namespace ids here (kernel before 6.8): one sequence, always older"
		exit 0
	}
	while read -r c id; do
		[ "$own" -lt "$id" ] || {
			echo "lowns.sh: mount namespace of $2 (id $own) is not older than a new one on CPU $c (id $id)" >&2
			exit 1
		}
	done < <(probe_cpus)
	exit 0
	;;
--inside)
	# In the new namespace, still on the chosen CPU: back to the
	# caller's CPUs, then check.
	try=$2 cpus=$3
	shift 3
	taskset -pc "$cpus" $$ >/dev/null
	opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	own=$(mntns_id /proc/self/ns/mnt) || exec "$@"
	lowest=$(probe_cpus | sort -k2,2n | head -n1 | cut -d' ' -f2)
	if [ -z "$lowest" ] || [ "$own" -lt "$lowest" ]; then
		exec "$@"
	fi
	if [ "$try" -ge 3 ]; then
		echo "lowns.sh: warning: mount namespace $own is not older than a new one ($lowest); job containers may fail with 'ns base mount failed: Invalid argument'" >&2
		exec "$@"
	fi
	exec bash "$self" --try $((try + 1)) "${opts[@]}" -- "$@"
	;;
--try)
	try=$2
	shift 2
	;;
*)
	try=1
	;;
esac

opts=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	opts+=("$1")
	shift
done
if [ "${1:-}" != -- ] || [ $# -lt 2 ]; then
	echo "usage: lowns.sh UNSHARE-OPTION... -- COMMAND [ARG...]" >&2
	exit 2
fi
shift
if ! mntns_id /proc/self/ns/mnt >/dev/null; then
	exec unshare "${opts[@]}" -- "$@"
fi
cpu=$(probe_cpus | sort -k2,2n | head -n1 | cut -d' ' -f1)
[ -n "$cpu" ] || exec unshare "${opts[@]}" -- "$@"
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
exec taskset -c "$cpu" unshare "${opts[@]}" -- \
	bash "$self" --inside "$try" "$cpus" "${opts[@]}" -- "$@"
