# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154  # $src: set by the sourcing suite
# Sourced by tests/ci.d suites that configure a build tree of their own
# (not run itself: run-all.sh runs only *.sh).  Needs $src and a
# fail_all MESSAGE LOG function; sets $log.
#
#   ci_configure_tree BUILD OPTION FLAG
#     configures $src in BUILD with OPTION (e.g. --enable-coverage) and
#     checks that FLAG reached BUILD/Makefile; the output goes to
#     BUILD/ci-NAME.log ($log), NAME being OPTION without "--enable-".
ci_configure_tree() {
	local build=$1 option=$2 flag=$3

	mkdir -p "$build" || fail_all "cannot create $build" /dev/null
	log=$build/ci-${option#--enable-}.log
	: >"$log"
	if [ ! -x "$src/configure" ]; then
		(cd "$src" && autoreconf -fi) >>"$log" 2>&1 ||
			fail_all "autoreconf -fi failed" "$log"
	fi
	echo "# configure $option in $build"
	(cd "$build" && "$src/configure" -q "$option") >>"$log" 2>&1 ||
		fail_all "configure $option failed" "$log"
	grep -q -- "$flag" "$build/Makefile" ||
		fail_all "$flag did not reach the Makefile" "$log"
}
