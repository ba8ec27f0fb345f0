#!/bin/sh
# SPDX-License-Identifier: MIT
# spank-nccl(8) and plugstack.conf.example as built (src/report/Makefile.inc):
# each is its template (man/spank-nccl.8.in, plugstack.conf.example.in) with
# the @KEYS@ line replaced by one entry and one default per key of
# config.c's table (`sn-config-doc keys` names them).
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
gen=${SN_CONFIG_DOC:-./src/report/sn-config-doc}
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

keys=$("$gen" keys) || bad "$gen keys failed"
n=$(printf '%s\n' "$keys" | grep -c .)
[ "$n" -ge 20 ] || bad "$gen keys names $n keys"

# check TEMPLATE BUILT ENTRY DEFAULT: ENTRY, a grep pattern with %s for
# the key, matches one line of BUILT's list per key; DEFAULT, n lines.
check() {
	tpl=$1 built=$2 entry=$3 def=$4
	[ -f "$built" ] || { bad "$built: not built (run make)"; return; }
	m=$(grep -n '@KEYS@' "$tpl" | cut -d: -f1)
	case $m in
	'' | *[!0-9]*) bad "$tpl: expected one @KEYS@ line"; return ;;
	esac
	after=$(($(wc -l <"$tpl") - m))
	list=$(sed -n "$m,$(($(wc -l <"$built") - after))p" "$built")
	[ "$(head -n $((m - 1)) "$tpl")" = "$(head -n $((m - 1)) "$built")" ] &&
	[ "$(tail -n "$after" "$tpl")" = "$(tail -n "$after" "$built")" ] ||
		bad "$built: not $tpl around the key list"
	for k in $keys; do
		# shellcheck disable=SC2059  # ENTRY is the format
		c=$(printf '%s\n' "$list" | grep -c "$(printf "$entry" "$k")")
		[ "$c" = 1 ] || bad "$built: $c entries for $k"
	done
	c=$(printf '%s\n' "$list" | grep -c "$def")
	[ "$c" = "$n" ] || bad "$built: $c defaults for $n keys"
	echo "$built: $n keys, $(printf '%s\n' "$list" | wc -l) lines"
}
check "$src/man/spank-nccl.8.in" man/spank-nccl.8 \
	'^\.BI\{0,1\} "\{0,1\}%s=' '^Default: '
check "$src/plugstack.conf.example.in" plugstack.conf.example \
	'^#   %s=' '^#  *default: '
exit $fail
