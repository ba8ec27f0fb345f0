#!/bin/sh
# SPDX-License-Identifier: MIT
# docs/design.md's "## Files" table names every file under src/, once, and
# nothing else: the map stays true as files are added, split or removed.
# The file list is git's where the source is a checkout, else the tree's
# sources (a dist tarball, even one unpacked inside a checkout by distcheck).
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
doc=$src/docs/design.md
[ -f "$doc" ] || { echo "test_design_map: $doc not found" >&2; exit 1; }
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)
if [ -n "$top" ] && [ "$top" = "$(cd "$src" && pwd -P)" ]; then
	files=$(git -C "$src" ls-files src | sort)
else
	files=$(cd "$src" && find src -type f \( -name '*.[ch]' -o \
		-name '*.inc' -o -name '*.map' \) | sort)
fi
table=$(sed -n '/^## Files$/,/^## /p' "$doc" |
	sed -n 's/^| `\(src\/[^`]*\)` |.*/\1/p' | sort)
fail=0
[ -n "$files" ] || { echo "FAIL: no files under $src/src" >&2; exit 1; }
missing=$(printf '%s\n' "$files" | grep -vxF "$table" || true)
[ -z "$table" ] && missing=$files
stale=$(printf '%s\n' "$table" | grep -vxF "$files" || true)
dup=$(printf '%s\n' "$table" | uniq -d)
if [ -n "$missing" ]; then
	echo "FAIL: not in docs/design.md's file table (add a line):" >&2
	printf '  %s\n' $missing >&2
	fail=1
fi
if [ -n "$stale" ]; then
	echo "FAIL: in docs/design.md's file table but not in src/:" >&2
	printf '  %s\n' $stale >&2
	fail=1
fi
if [ -n "$dup" ]; then
	echo "FAIL: listed twice in docs/design.md's file table: $dup" >&2
	fail=1
fi
echo "$(printf '%s\n' "$files" | wc -l) files, $(printf '%s\n' "$table" | wc -l) table lines"
exit $fail
