#!/bin/sh
# SPDX-License-Identifier: MIT
# The key lists of spank-nccl(8) and plugstack.conf.example are what
# sn-config-doc writes from config.c's key table (`make generate`), and
# every key's default parses (sn-config-doc checks that first).
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
gen=${SN_CONFIG_DOC:-./src/report/sn-config-doc}
fail=0
"$gen" check man "$src/man/spank-nccl.8" || fail=1
"$gen" check example "$src/plugstack.conf.example" || fail=1
exit $fail
