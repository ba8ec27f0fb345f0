# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared by faults.bats, load.bats and privilege.bats: installs the
# misbehaving stand-in for nccl-warmup (helpers/fake-helper.sh) in the
# test cluster, root-owned and mode 0755 as an admin would, and finds the
# processes it leaves.

SN_FAKE_HELPER_SRC="$SN_TESTS_DIR/helpers/fake-helper.sh"

sn_fake_helper_path() { echo "$SN_CLUSTER_DIR/libexec/fake-helper"; }

# Installs the fake helper (and, with MODE, a copy with that mode under
# NAME) into the cluster's libexec.
sn_install_fake_helper() {
	local name=${1:-fake-helper} mode=${2:-0755}
	install -o root -g root -m "$mode" "$SN_FAKE_HELPER_SRC" \
		"$SN_CLUSTER_DIR/libexec/$name"
}

# plugstack.conf with warmup_helper= the fake helper, plus ARGS.
sn_use_fake_helper() {
	sn_plugstack_set "warmup_helper=$(sn_fake_helper_path)" "$@"
}

# Exports what the fake helper reads (it gets the job's environment).
sn_fake_mode() {
	export SN_FAKE_MODE=$1 SN_FAKE_DIR="$SN_CLUSTER_DIR/tmp"
	export SN_FAKE_TAG="t$BATS_TEST_NUMBER-$RANDOM"
	rm -f "$SN_FAKE_DIR"/*-"$SN_FAKE_TAG"*
}

# Nodes on which the fake helper ran for this test, sorted, one line.
sn_fake_nodes() {
	if [ -f "$SN_FAKE_DIR/runs-$SN_FAKE_TAG" ]; then
		sed -n 's/.* node=\([^ ]*\) .*/\1/p' \
			"$SN_FAKE_DIR/runs-$SN_FAKE_TAG" | sort | paste -sd' ' -
	fi
}

# True while PID runs (a zombie waiting for its reaper does not count).
sn_pid_running() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Processes running a program from the cluster's libexec (the real and
# the fake helper: a script's command line names it) or left behind by
# the fake helper (pid files of this test).  Prints "PID CMDLINE" lines.
sn_leftovers() {
	local f pid
	for f in $(grep -lasF "$SN_CLUSTER_DIR/libexec/" /proc/[0-9]*/cmdline); do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[ "$pid" != "$BASHPID" ] || continue
		sn_pid_running "$pid" &&
			echo "$pid $(tr '\0' ' ' <"$f" 2>/dev/null)"
	done
	for f in "$SN_FAKE_DIR"/*-"$SN_FAKE_TAG"*.pid; do
		[ -s "$f" ] || continue
		pid=$(cat "$f")
		if sn_pid_running "$pid"; then
			echo "$pid left behind ($(basename "$f"))"
		fi
	done
}

# Waits up to TENTHS tenths of a second for sn_leftovers to be empty.
sn_assert_no_leftovers() {
	local tries=${1:-20} left
	while :; do
		left=$(sn_leftovers)
		[ -z "$left" ] && return 0
		((tries-- > 0)) || break
		sleep 0.1
	done
	sn_fail "processes left behind: $left"
}
