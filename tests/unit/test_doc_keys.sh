#!/bin/sh
# SPDX-License-Identifier: MIT
# The two places that list the plugstack.conf keys with their defaults name
# exactly the parser's keys (src/core/config/config.c) and the parser's defaults
# (sn_config_defaults, printed by tests/unit/config_keys): the PLUGSTACK
# ARGUMENTS of spank-nccl(8) and plugstack.conf.example.  The other docs
# link to spank-nccl(8) instead of copying its table.
#
# A default is compared as an admin writes the value: the text of the
# default cell up to a parenthesis or comma, without backticks;
# SYSCONFDIR/LIBEXECDIR (or $(sysconfdir)/$(libexecdir)) stand for the
# configured directories; "none", "the system's ..." and "libmunge's ..."
# mean that the key is off or empty unless given.
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
keys_prog=${SN_CONFIG_KEYS:-./tests/unit/config_keys}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_doc_keys.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

if ! "$keys_prog" >"$tmp/parser" 2>"$tmp/parser.err"; then
	cat "$tmp/parser.err" >&2
	echo "FAIL: $keys_prog (the parser's keys and defaults)" >&2
	exit 1
fi
sysconfdir=$(sed -n 's/^#SYSCONFDIR\t//p' "$tmp/parser")
libexecdir=$(sed -n 's/^#LIBEXECDIR\t//p' "$tmp/parser")
grep -v '^#' "$tmp/parser" | sort >"$tmp/want"
[ -s "$tmp/want" ] || { echo "FAIL: no keys from $keys_prog" >&2; exit 1; }

# plugstack.conf.example: "#   KEY=VALUE ..." starts an entry; its
# "default: TEXT" is on one of the entry's lines.
example_keys() {	# FILE
	awk '
		function flush() { if (key != "") print key "\t" def; key = ""; def = "" }
		/^#   [a-z_]+=/ {
			flush()
			key = $2; sub(/=.*/, "", key)
		}
		key != "" && /default:/ { d = $0; sub(/.*default: */, "", d); def = d }
		/^#?$/ || /^# [^ ]/ { flush() }
		END { flush() }' "$1"
}

# spank-nccl(8), section PLUGSTACK ARGUMENTS: each ".TP" whose tag is
# KEY=..., its text with the font macros undone, then "Default: TEXT" or
# "VALUE (default)".
man_keys() {	# FILE
	awk '
		function unroff(line,   m, args, out, i, n, a, q) {
			gsub(/\\f[BIRP]/, "", line); gsub(/\\-/, "-", line)
			gsub(/\\\(em/, "-", line); gsub(/\\e/, "\\", line)
			if (line !~ /^\./) return line
			m = line; sub(/[ \t].*/, "", m)
			args = substr(line, length(m) + 1); sub(/^[ \t]+/, "", args)
			if (m ~ /^\.(BR|RB|BI|IB|IR|RI)$/) {
				# alternating fonts: the arguments are joined
				out = ""; n = 0
				while (args != "") {
					if (substr(args, 1, 1) == "\"") {
						q = index(substr(args, 2), "\"")
						a = substr(args, 2, q - 1); args = substr(args, q + 2)
					} else {
						a = args; sub(/[ \t].*/, "", a); args = substr(args, length(a) + 1)
					}
					sub(/^[ \t]+/, "", args); out = out a
				}
				return out
			}
			if (m ~ /^\.(B|I)$/) { gsub(/"/, "", args); return args }
			return ""
		}
		function flush(   t, d) {
			if (key == "") return
			t = text; gsub(/[ \t]+/, " ", t)
			d = ""
			if (match(t, /Default: /)) {
				d = substr(t, RSTART + RLENGTH)
				sub(/\. .*/, "", d)	# the sentence ends
			}
			else if (match(t, /[^ ]+ \(default\)/))
				d = substr(t, RSTART, RLENGTH - 10)
			print key "\t" d
			key = ""; text = ""
		}
		/^\.SH / { flush(); on = ($0 ~ /^\.SH "?PLUGSTACK ARGUMENTS"?/); next }
		!on { next }
		/^\.(TP|PP|IP|SS)/ { flush(); tp = ($0 ~ /^\.TP/); next }
		tp {
			tp = 0; t = unroff($0)
			if (t ~ /^[a-z_]+=/) { key = t; sub(/=.*/, "", key) }
			next
		}
		key != "" { text = text " " unroff($0) }
		END { flush() }' "$1"
}

normalise() {	# stdin: KEY<TAB>TEXT lines; stdout: KEY<TAB>VALUE, sorted
	sed -e 's/`//g' -e 's/\*\*//g' \
	    -e "s|\\\$(sysconfdir)|$sysconfdir|g; s|SYSCONFDIR|$sysconfdir|g" \
	    -e "s|\\\$(libexecdir)|$libexecdir|g; s|LIBEXECDIR|$libexecdir|g" |
	awk -F '\t' '{
		v = $2
		sub(/[(,].*/, "", v); sub(/^[ \t]+/, "", v); sub(/[ \t.]+$/, "", v)
		if (v ~ /^(none|the system.s|libmunge.s)( |$)/) v = "none"
		print $1 "\t" v
	}' | sort
}

fail=0
check_doc() {	# NAME FILE EXTRACTED
	name=$1 file=$2 got=$3
	if [ ! -s "$got" ]; then
		echo "FAIL: $name: no plugstack keys found in $file (table moved?)" >&2
		fail=1
		return
	fi
	normalise <"$got" >"$got.n"
	dup=$(cut -f1 "$got.n" | uniq -d)
	[ -z "$dup" ] || { echo "FAIL: $name lists twice: $dup" >&2; fail=1; }
	cut -f1 "$tmp/want" >"$tmp/want.keys"
	cut -f1 "$got.n" >"$got.keys"
	for k in $(grep -vxF -f "$got.keys" "$tmp/want.keys"); do
		echo "FAIL: $name ($file) leaves out $k=" >&2
		fail=1
	done
	for k in $(grep -vxF -f "$tmp/want.keys" "$got.keys"); do
		echo "FAIL: $name ($file) lists $k=, which the parser does not know" >&2
		fail=1
	done
	while IFS="$(printf '\t')" read -r k v; do
		w=$(awk -F '\t' -v k="$k" '$1 == k { print $2 }' "$tmp/want")
		[ -n "$w" ] || continue
		if [ "$v" != "$w" ]; then
			echo "FAIL: $name ($file): $k= defaults to \"$w\", the doc says \"$v\"" >&2
			fail=1
		fi
	done <"$got.n"
	echo "$name: $(wc -l <"$got.n") keys"
	[ -z "${SN_DOC_KEYS_SHOW:-}" ] || sed 's/^/    /' "$got.n"
}

man_keys "$src/man/spank-nccl.8" >"$tmp/man"
check_doc "spank-nccl(8)" "$src/man/spank-nccl.8" "$tmp/man"
example_keys "$src/plugstack.conf.example" >"$tmp/example"
check_doc plugstack.conf.example "$src/plugstack.conf.example" "$tmp/example"
exit $fail
