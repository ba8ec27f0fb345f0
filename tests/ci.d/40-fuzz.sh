#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Each libFuzzer harness (fuzz/) for a short while on its committed seed
# corpus: one TAP line per harness with its exec and crash counts.  The
# long runs are reported in docs/dev/fuzzing.md.
#
#   SN_FUZZ_SECONDS  per harness (default 10, FUZZ_JOBS=2 at a time; long runs:
#                    docs/dev/fuzzing.md)
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export FUZZ_BUILD_DIR=${SN_BUILD_DIR:-$src/_build}/fuzz-ci
export FUZZ_JOBS=${FUZZ_JOBS:-2}
exec bash "$src/fuzz/run.sh" --tap "${SN_FUZZ_SECONDS:-10}"
