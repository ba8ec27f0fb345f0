#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every man page renders without a warning, with groff (-ww: all warnings)
# and with man-db (man --warnings -l, as a user would read it): those of
# man/ and, built from their man/*.in templates, those of SN_BUILD_DIR/man.
# TAP on stdout; run by tests/run-all.sh.
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${SN_BUILD_DIR:-$src/_build}
pages=("$src"/man/*.[1-8])
for t in "$src"/man/*.[1-8].in; do
	# A missing page is a file that does not render below.
	p=$build/man/$(basename "$t" .in)
	[ "$p" -ef "$src/man/${p##*/}" ] || pages+=("$p")
done
n=0

echo "1..$((${#pages[@]} * 2 + 1))"

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1))
	echo "not ok $n - $1"
	printf '%s\n' "$2" | sed 's/^/# /'
}

if ! command -v groff >/dev/null || ! command -v man >/dev/null; then
	# No silent skip: a missing renderer fails every page.
	for p in "${pages[@]}"; do
		not_ok "groff $(basename "$p")" "groff/man missing (tests/install-deps.sh)"
		not_ok "man $(basename "$p")" "groff/man missing (tests/install-deps.sh)"
	done
	not_ok "man pages found" "groff/man missing"
	exit 0
fi

if [ ${#pages[@]} -ge 3 ] && [ -e "${pages[0]}" ]; then
	ok "man pages found: ${#pages[@]}"
else
	not_ok "man pages found" "expected at least 3 pages in $src/man"
fi

for p in "${pages[@]}"; do
	name=$(basename "$p")
	warn=$(LC_ALL=C.UTF-8 groff -man -ww -z -Tutf8 "$p" 2>&1)
	if [ -z "$warn" ]; then
		ok "groff -man -ww renders $name without warnings"
	else
		not_ok "groff -man -ww renders $name without warnings" "$warn"
	fi
	# MANWIDTH: a fixed width, so that line-fill warnings do not depend
	# on the terminal of whoever runs the tests.
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
	if [ -z "$warn" ]; then
		ok "man --warnings -l renders $name without warnings"
	else
		not_ok "man --warnings -l renders $name without warnings" "$warn"
	fi
done
exit 0
