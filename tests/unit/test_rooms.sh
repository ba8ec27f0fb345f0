#!/bin/sh
# SPDX-License-Identifier: MIT
# docs/design.md's "## Rooms" table is the law of the tree: each room
# (src/core/<room>, and src/plugin, src/warmup, src/report) includes only
# the rooms its row names, and every #include of a src/core header names
# its room ("fleet/record.h", never "record.h").
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
doc=$src/docs/design.md
[ -f "$doc" ] || { echo "test_rooms: $doc not found" >&2; exit 1; }
table=$(sed -n '/^## Rooms$/,/^## /p' "$doc" |
	sed -n 's/^| `\([a-z]*\)` | \(.*\) |$/\1 \2/p' | tr -d '`,')
[ -n "$table" ] || { echo "FAIL: no \"## Rooms\" table in $doc" >&2; exit 1; }
fail=0
n=0
cd "$src" || exit 1
for f in $(find src fuzz tests -name '*.[ch]' -o -name '*.inc' | sort); do
	case $f in
	src/core/*) room=${f#src/core/} ;;
	src/*) room=${f#src/} ;;
	*) room= ;;
	esac
	case $room in */*) room=${room%%/*} ;; *) room= ;; esac
	# A bare name of a core header: the room is not said.
	for h in $(sed -n 's/^#include "\([a-z_0-9]*\.h\)".*/\1/p' "$f"); do
		if ls src/core/*/"$h" >/dev/null 2>&1; then
			echo "FAIL: $f: #include \"$h\": name its room (\"$(cd src/core && ls */"$h")\")" >&2
			fail=1
		fi
	done
	[ -n "$room" ] || continue
	allowed=$(printf '%s\n' "$table" | awk -v r="$room" '$1 == r { $1 = ""; print }')
	if ! printf '%s\n' "$table" | awk -v r="$room" '$1 == r { f = 1 } END { exit !f }'; then
		echo "FAIL: $f: room \"$room\" has no row in docs/design.md's Rooms table" >&2
		fail=1
		continue
	fi
	for dep in $(sed -n 's/^#include "\([a-z]*\)\/[a-z_0-9]*\.h".*/\1/p' "$f" | sort -u); do
		[ -d "src/core/$dep" ] || continue
		[ "$dep" = "$room" ] && continue
		n=$((n + 1))
		case " $allowed " in
		*" $dep "*) ;;
		*) echo "FAIL: $f includes room \"$dep\", not in \"$room\"'s row of docs/design.md's Rooms table" >&2
		   fail=1 ;;
		esac
	done
done
echo "$n room-crossing includes checked"
exit $fail
