#!/bin/sh
# SPDX-License-Identifier: MIT
# End-to-end test of the built nccl-warmup against the fake CUDA/NCCL: its
# options and usage errors, the step and fabric options, --help (against
# nccl-warmup(8)), --version, --limits and --quiet.
# Set-up and checks: lib/nccl_warmup_cases.sh.  Run by "make check" from
# the build directory.
set -u

src=${SN_SRC_DIR:-${srcdir:-.}}
# shellcheck source=tests/unit/lib/nccl_warmup_cases.sh
. "$src/tests/unit/lib/nccl_warmup_cases.sh"

# --- usage errors ----------------------------------------------------------
for args in "--mode fast" "--timeout 0" "--timeout abc" "--timeout 99999" \
	    "--bytes 3" "--bytes 1T" "--min-busbw -1" "--frobnicate" \
	    "--node bad/name" "--timeout" "--timeout 541" "--timeout 1.5" \
	    "--mode off" "--json stray"; do
	# shellcheck disable=SC2086
	run "usage $args" -- $args
	expect_rc 1
	expect_err "spank-nccl: nccl-warmup usage error on testnode: "
done
# --- the step options: accepted when they agree, else a usage error -----
run step-options -- --json --mode check --job-id 4294967294 --step-id 0 \
	--node-index 2 --nodes 3 --nodelist 'n[1-2],gpu7' --fabric-ports 30000-30009
expect_rc 0; ok_json
run step-usage-bad-ports -- --fabric-ports 80-90
expect_rc 1
expect_err "invalid --fabric-ports '80-90': port range \"80-90\" is not PORT or LO-HI"
run step-usage-job-alone -- --job-id 7
expect_rc 1
expect_err "--job-id and --step-id go together: give both"
run step-usage-nodes-alone -- --node-index 0 --nodes 2
expect_rc 1
expect_err "--node-index, --nodes and --nodelist go together: give all three"
run step-usage-count -- --node-index 0 --nodes 2 --nodelist 'n[1-3]'
expect_rc 1
expect_err "--nodelist 'n[1-3]' names 3 nodes but --nodes is 2: pass the step's SLURM_STEP_NODELIST and S_JOB_NNODES"
run step-usage-index -- --node-index 3 --nodes 3 --nodelist 'n[1-3]'
expect_rc 1
expect_err "--node-index 3 is not below --nodes 3 (node indexes count from 0)"
# --- mode fabric: its options (the runs themselves: test_fabric_helper.sh)
run fabric-needs-step -- --json --mode fabric --job-id 1 --step-id 0
expect_rc 1
expect_json '"status":"usage"'
expect_err "--mode fabric needs the step: --job-id, --step-id, --node-index, --nodes and --nodelist (spank_nccl.so passes them)"
run fabric-bad-root -- --mode fabric --fabric-root n1.example
expect_rc 1
expect_err "invalid --fabric-root 'n1.example': give the numeric IPv4 or IPv6 address of the step's first node"
run fabric-bad-transport -- --fabric-transport tcp
expect_rc 1
expect_err "invalid --fabric-transport 'tcp': give any or no-socket"
run fabric-help -- --help
expect_rc 0
case $out in *"--fabric-transport any|no-socket"*"--mode fabric"*) ;;
*) fail "--help lacks the fabric options";; esac
# Other modes: no fabric object, transport null (NCCL's log not read).
run comm-no-fabric -- --json
expect_rc 0
expect_json '"transport":null'
expect_no_json '"fabric"'
# The job's NCCL_COMM_ID names the job's root (here an address no node
# has): NCCL's rank 0 would listen there and fail; the helper drops it.
run comm-job-comm-id NCCL_COMM_ID=192.0.2.1:29999 -- --json
expect_rc 0
run fabric-one-node-job-comm-id NCCL_COMM_ID=192.0.2.1:29999 -- --mode fabric \
	--job-id 3 --step-id 2 --node-index 0 --nodes 1 --nodelist testnode
expect_rc 0
# A one-node fabric step is comm mode: no coordination, loopback fine.
run fabric-one-node -- --json --mode fabric --job-id 3 --step-id 1 \
	--node-index 0 --nodes 1 --nodelist testnode
expect_rc 0; ok_json
expect_json '"mode":"fabric"'
expect_json '"transport":"NET/Socket","fabric":{"nodes":1,"node_index":0,"ranks":4,"rank_base":0,"comm_id":null,"coordinator":null,"refused_connections":0,"blame_index":null,"blame_node":null}'
expect_err ", ranks 0-3 of 4 over 1 node, network NET/Socket"

run step-usage-badlist -- --node-index 0 --nodes 1 --nodelist 'n[3-1]'
expect_rc 1
expect_err "invalid --nodelist 'n[3-1]': "
for args in "--job-id -1 --step-id 0" "--job-id 0x10 --step-id 0" \
	    "--job-id 1 --step-id 4294967296" "--nodes 0" "--node-index 1e3"; do
	# shellcheck disable=SC2086
	run "step-usage $args" -- $args
	expect_rc 1
	expect_err "spank-nccl: nccl-warmup usage error on testnode: invalid --"
done

run usage-json -- --json --mode fast
expect_rc 1; expect_shape
expect_json '"status":"usage"'
expect_err "invalid --mode 'fast': use check, comm, bandwidth or fabric"

run help -- --help
expect_rc 0
case $out in *"Usage: nccl-warmup"*) ;; *) fail "no usage text";; esac
run version -- --version
expect_rc 0
case $out in "nccl-warmup (spank-nccl) "*) ;; *) fail "no version";; esac

# --limits: helper_protocol.h's values, KEY=VALUE lines, for the Prolog.
run limits -- --limits
expect_rc 0
want=$(for k in TIMEOUT_MAX_S TIMEOUT_DEFAULT_S SLACK_MS KILL_GRACE_MS; do
	printf '%s=%s\n' "$k" "$(sed -n "s/^#define SN_WARMUP_$k \([0-9]*\)\$/\1/p" \
		"$src/src/core/protocol/helper_protocol.h")"
done)
[ "$out" = "$want" ] || fail "--limits is not helper_protocol.h's: $want"
[ -z "$err" ] || fail "--limits printed on stderr"

# Every option of --help has its entry in nccl-warmup(8)'s OPTIONS (the
# words of each .TP tag), and every entry is an option of --help.
run help-man -- --help
help_opts=$(printf '%s\n' "$out" | grep -o -- '--[a-z][a-z-]*' | sort -u)
man_opts=$(awk '/^\.SH OPTIONS/ { o = 1; next } /^\.SH / { o = 0 }
		o && t { print; t = 0 } o && /^\.TP/ { t = 1 }' \
		"$src/man/nccl-warmup.8" | sed 's/\\-/-/g' |
	grep -o -- '--[a-z][a-z-]*' | sort -u)
[ -n "$help_opts" ] && [ "$help_opts" = "$man_opts" ] ||
	fail "--help and nccl-warmup(8)'s OPTIONS differ: $(printf '%s\n' "$help_opts" "$man_opts" | sort | uniq -u | tr '\n' ' ')"

run quiet -- --quiet
expect_rc 0
[ -z "$err" ] || fail "--quiet must print nothing on success"
run quiet-fail FAKE_CUDA_FAIL=init -- --quiet
expect_rc 4
expect_err "warmup FAILED"

cases_done "usage"
