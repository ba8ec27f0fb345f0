# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What the fabric bats files share: the helper's result per node, the
# candidate ports of a step, listeners in n1's namespace, and the check
# that nothing is left listening or running.

# The helper's JSON of the last warmup of JOB on NODE (the plugin logs
# every run to slurmd's log with the helper's result).
warmup_json() {
	local node=$1 job=$2
	grep -aE "job $job step [0-9]+ on $node: nccl-warmup (passed|failed)" \
		"$(sn_slurmd_log "$node")" | tail -n1 |
		sed -E 's/^.*nccl-warmup (passed|failed) in [0-9]+ ms: //'
}

# Asserts the JSON of JOB on NODE has every "key":value given.
assert_json() {
	local node=$1 job=$2 json kv
	shift 2
	json=$(warmup_json "$node" "$job")
	for kv in "$@"; do
		grep -qF "$kv" <<<"$json" ||
			sn_fail "$node: no $kv in the helper's result: $json" ||
			return 1
	done
}

# Murmur3's finaliser and the port of attempt A for JOB.STEP in LO-HI:
# src/core/config/ras.c's sn_step_port (sn_fabric_port), to know the first candidate.
mix32() {
	local h=$1
	h=$(((h ^ (h >> 16)) & 0xffffffff))
	h=$(((h * 0x85ebca6b) & 0xffffffff))
	h=$(((h ^ (h >> 13)) & 0xffffffff))
	h=$(((h * 0xc2b2ae35) & 0xffffffff))
	echo $(((h ^ (h >> 16)) & 0xffffffff))
}
fabric_port() {
	local lo=$1 hi=$2 job=$3 step=$4 attempt=$5
	echo $((lo + ($(mix32 "$job") + step + attempt) % (hi - lo + 1)))
}

# Listens on PORT... inside n1's network namespace until the test ends;
# returns once every socket is bound (the listener writes a file).
occupy_on_n1() {
	local ready="$SN_CLUSTER_DIR/tmp/listener-$BATS_TEST_NUMBER"
	rm -f "$ready"
	# shellcheck disable=SC2016
	nsenter --net="/run/netns/$(sn__netns_name 1)" perl -MIO::Socket::INET -e '
		my $ready = shift;
		my @s = map { IO::Socket::INET->new(LocalAddr => "0.0.0.0",
			LocalPort => $_, Listen => 5, ReuseAddr => 1)
			or die "listen $_: $!\n" } @ARGV;
		open(my $f, ">", $ready) or die; close($f);
		sleep;' "$ready" "$@" </dev/null >/dev/null 2>&1 3>&- &
	LISTENER_PID=$!
	sn__wait_for 100 test -e "$ready" ||
		sn_fail "the listener on n1 ($*) did not start"
}

# Nothing of the warmup listens in any node's namespace, and no helper
# runs: the plugin reaped each one before the tasks started.
assert_nothing_left() {
	local lo=$1 hi=$2 i ns left
	for i in 1 2 3; do
		ns=/run/netns/$(sn__netns_name "$i")
		left=$(nsenter --net="$ns" ss -Htlnp |
			awk -v lo="$lo" -v hi="$hi" -v own="${LISTENER_PID:-x}" '
				{ port = $4; sub(/.*:/, "", port) }
				$0 ~ "pid=" own "," { next }
				(port >= lo && port <= hi) || /nccl-warmup/')
		[ -z "$left" ] || sn_fail "n$i still listens: $left" || return 1
	done
	[ -z "$(sn_helper_procs)" ] ||
		sn_fail "nccl-warmup still running: $(sn_helper_procs)"
}

# srun -N3 --gres=gpu:2 --nccl-warmup=fabric, each task touching $MARKER
# and printing its job id.
fabric_srun() {
	sn_srun -N3 --gres=gpu:2 --nccl-warmup=fabric "$@" \
		sh -c "touch $MARKER; echo \$SLURM_JOB_ID"
}
