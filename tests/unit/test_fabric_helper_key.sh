#!/bin/sh
# SPDX-License-Identifier: MIT
# test_fabric_helper.sh's scenarios under the step key instead of MUNGE
# (issue 34: sites without munged).  Run by "make check".
SN_TEST_FABRIC_AUTH=key exec sh "${SN_SRC_DIR:-${srcdir:-.}}/tests/unit/test_fabric_helper.sh"
