#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the libFuzzer harnesses with clang (-fsanitize=fuzzer,address,
# undefined) and runs each for a given time on a copy of its committed seed
# corpus (fuzz/corpus/NAME).  Needs clang and its libFuzzer runtime
# (Debian: clang, libclang-rt-14-dev).
#
#   bash fuzz/run.sh [--tap] [SECONDS] [HARNESS...]
#
#   SECONDS        per harness (default: $FUZZ_SECONDS, else 60)
#   HARNESS        profile_file config options warmup_result busid applied
#                  hostlist fabric_msg nccl_log record ras_status
#                  (default: all)
#   --tap          TAP on stdout (tests/ci.d/40-fuzz.sh), the rest as "# "
#   FUZZ_JOBS      harnesses built and run at once (default 1)
#   FUZZ_BUILD_DIR binaries, work corpora, logs and crash inputs
#                  (default: _build/fuzz in the source tree)
#   CC             the compiler (default clang)
#
# Prints one line per harness: "fuzz NAME: N execs, N crashes" and exits
# non-zero if any harness crashed or could not be built.  A crashing input
# is kept as FUZZ_BUILD_DIR/NAME/crash-*: replay it with
#   FUZZ_BUILD_DIR/fuzz_NAME FILE
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
all=(profile_file config options warmup_result busid applied hostlist fabric_msg nccl_log record ras_status)
tap=0
if [ "${1:-}" = --tap ]; then
	tap=1
	shift
fi
seconds=${FUZZ_SECONDS:-60}
case "${1:-}" in
[0-9]*) seconds=$1; shift ;;
esac
if [ $# -gt 0 ]; then
	harnesses=("$@")
else
	harnesses=("${all[@]}")
fi
jobs=${FUZZ_JOBS:-1}
build=${FUZZ_BUILD_DIR:-$src/_build/fuzz}
cc=${CC:-clang}

# Diagnostics: "# " lines in TAP mode, plain otherwise.
note() {
	if [ "$tap" = 1 ]; then
		printf '# %s\n' "$*"
	else
		printf '%s\n' "$*"
	fi
}

# Per harness: the longest input worth trying (whole files for the
# profile parser, one value or one result for the others).
max_len() {
	case $1 in
	profile_file) echo 16384 ;;
	warmup_result) echo 8192 ;;
	record) echo 8192 ;;
	ras_status) echo 16384 ;;
	*) echo 4096 ;;
	esac
}

# Runs "$@" in the background, $jobs at once; a failure leaves
# $build/obj/failed behind.
par() {
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	{ "$@" || : >"$build/obj/failed"; } &
}

build_all() {
	local objs=() f o
	local cflags=(-g -O1 -std=gnu11 -D_GNU_SOURCE
		-I"$src/src/core"
		-I"$src/fuzz" -I"$src/tests/unit"
		-fno-omit-frame-pointer -fno-sanitize-recover=all
		'-DSYSCONFDIR="/etc/slurm"' '-DLIBEXECDIR="/usr/libexec"'
		# configure's AC_INIT defines (the record's "producer")
		'-DPACKAGE_NAME="spank-nccl"' '-DPACKAGE_VERSION="fuzz"')
	mkdir -p "$build/obj" || return 1
	rm -f "$build/obj/failed"
	# The core once, instrumented; each harness links it with libFuzzer.
	for f in "$src"/src/core/*/*.c; do
		o="$build/obj/$(basename "$f" .c).o"
		par "$cc" "${cflags[@]}" -fsanitize=fuzzer-no-link,address,undefined \
			-c "$f" -o "$o"
		objs+=("$o")
	done
	wait
	[ ! -e "$build/obj/failed" ] || return 1
	for h in "${harnesses[@]}"; do
		par "$cc" "${cflags[@]}" -fsanitize=fuzzer,address,undefined \
			"$src/fuzz/fuzz_$h.c" "${objs[@]}" \
			-o "$build/fuzz_$h"
	done
	wait
	[ ! -e "$build/obj/failed" ]
}

# Runs one harness; writes "EXECS CRASHES" into $build/$1/result.
run_one() {
	local h=$1 dir="$build/$1" execs crashes dict=()
	rm -rf "$dir"
	mkdir -p "$dir/corpus" "$dir/artifacts"
	cp "$src/fuzz/corpus/$h"/* "$dir/corpus/" 2>/dev/null
	[ -f "$src/fuzz/$h.dict" ] && dict=(-dict="$src/fuzz/$h.dict")
	# -timeout: one input taking 10 s is a hang; -rss_limit_mb: a leak
	# or a runaway allocation is a crash too (ASan also reports leaks).
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$build/fuzz_$h" "$dir/corpus" "${dict[@]}" \
		-max_total_time="$seconds" -max_len="$(max_len "$h")" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$dir/artifacts/" >"$dir/log" 2>&1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" |
		tail -n1)
	if [ -z "$execs" ]; then
		execs=$(grep -oE '^#[0-9]+' "$dir/log" | tail -n1 | tr -d '#')
	fi
	crashes=$(find "$dir/artifacts" -type f | wc -l)
	echo "${execs:-0} $crashes" >"$dir/result"
}

if ! command -v "$cc" >/dev/null 2>&1; then
	msg="$cc not found (Debian: apt-get install clang libclang-rt-14-dev)"
	if [ "$tap" = 1 ]; then
		echo "1..${#harnesses[@]}"
		i=0
		for h in "${harnesses[@]}"; do
			i=$((i + 1))
			# Under CI a missing tool fails; elsewhere it is a skip.
			case "${CI:-}" in
			true | 1 | yes) echo "not ok $i - fuzz $h: $msg" ;;
			*) echo "ok $i - fuzz $h # skip $msg" ;;
			esac
		done
		exit 0
	fi
	echo "fuzz/run.sh: $msg" >&2
	exit 1
fi

note "building ${#harnesses[@]} harnesses in $build"
if [ "$tap" = 1 ]; then
	build_all 2>&1 | sed 's/^/# /'
	built=${PIPESTATUS[0]}
else
	build_all
	built=$?
fi
if [ "$built" -ne 0 ]; then
	if [ "$tap" = 1 ]; then
		echo "1..${#harnesses[@]}"
		i=0
		for h in "${harnesses[@]}"; do
			i=$((i + 1))
			echo "not ok $i - fuzz $h: build failed (see the # lines)"
		done
		exit 0
	fi
	echo "fuzz/run.sh: build failed" >&2
	exit 1
fi

note "running each harness for ${seconds}s, $jobs at a time"
running=0
for h in "${harnesses[@]}"; do
	run_one "$h" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

[ "$tap" = 1 ] && echo "1..${#harnesses[@]}"
i=0
bad=0
total=0
for h in "${harnesses[@]}"; do
	i=$((i + 1))
	read -r execs crashes <"$build/$h/result" 2>/dev/null ||
		{ execs=0; crashes=1; }
	total=$((total + execs))
	line="fuzz $h: $execs execs, $crashes crashes"
	ok=1
	if [ "$crashes" -ne 0 ]; then
		ok=0
		line="$line ($(find "$build/$h/artifacts" -type f -printf '%f\n' |
			head -n3 | paste -sd' ' -))"
	elif [ "$execs" -eq 0 ]; then
		ok=0
		line="$line (harness did not run: $build/$h/log)"
	fi
	if [ "$tap" = 1 ]; then
		if [ "$ok" = 1 ]; then
			echo "ok $i - $line"
		else
			echo "not ok $i - $line"
			grep -E 'ERROR|invariant|SUMMARY|#[0-9]+ 0x' "$build/$h/log" |
				head -n 20 | sed 's/^/#   /'
		fi
	else
		echo "$line"
	fi
	[ "$ok" = 1 ] || bad=$((bad + 1))
done
note "total: $total execs, $bad harnesses failed"
if [ "$tap" = 1 ]; then
	exit 0
fi
[ "$bad" -eq 0 ]
