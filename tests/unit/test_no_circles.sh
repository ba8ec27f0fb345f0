#!/bin/sh
# SPDX-License-Identifier: MIT
# No two files under src/ depend on each other, directly or around a longer
# circle: file A depends on file B when A's object uses a symbol B's object
# defines (nm over this build's objects, so a declaration in a shared
# header such as plugin.h hides nothing).  Fails naming each circle.
set -u
build=${SN_BUILD_DIR:-.}
NM=${NM:-nm}

objs=$(find "$build/src" -name '*.o' | sort)
[ -n "$objs" ] || { echo "FAIL: no objects under $build/src (build first)" >&2; exit 1; }

for o in $objs; do
	# the source an object came from: its directory without .libs/, its
	# name without automake's per-target prefix (nccl_warmup-main.o)
	d=${o%/*}; d=${d%/.libs}; d=${d#"$build"/}
	f=${o##*/}; f=${f#*-}; f=${f%.o}
	"$NM" -P "$o" | awk -v f="$d/$f.c" '
		$2 ~ /^[TDBRCVW]$/ { print f, "D", $1 }
		$2 == "U" { print f, "U", $1 }'
done | awk '
	$2 == "D" { if (($3 in def) && def[$3] != $1) dup[$3] = 1; def[$3] = $1; node[$1] = 1; next }
	{ use[NR] = $1 " " $3; node[$1] = 1 }
	END {
		for (i in use) {
			split(use[i], u, " ")
			if ((u[2] in def) && !(u[2] in dup) && def[u[2]] != u[1])
				reach[u[1], def[u[2]]] = 1
		}
		n = 0
		for (a in node) name[++n] = a
		for (k = 1; k <= n; k++)
			for (i = 1; i <= n; i++) {
				if (!((name[i], name[k]) in reach)) continue
				for (j = 1; j <= n; j++)
					if ((name[k], name[j]) in reach)
						reach[name[i], name[j]] = 1
			}
		bad = 0
		for (i = 1; i <= n; i++) {
			a = name[i]
			if (!((a, a) in reach) || (a in shown)) continue
			line = a
			for (j = 1; j <= n; j++)
				if (j != i && ((a, name[j]) in reach) && ((name[j], a) in reach)) {
					line = line " " name[j]; shown[name[j]] = 1
				}
			print "FAIL: files that depend on each other: " line
			bad = 1
		}
		exit bad
	}' >&2
