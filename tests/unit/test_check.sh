#!/bin/sh
# SPDX-License-Identifier: MIT
# spank-nccl-check on good and broken configurations: each problem as
# FILE:LINE (the plugstack line's arguments, a second spank_nccl.so line,
# the profile file's first error, an unknown default profile, the
# Prolog's settings), exit 1; none: one OK line, exit 0.
set -u
check=${SN_CHECK:-src/report/spank-nccl-check}
prolog=${SN_PROLOG:-scripts/nccl-warmup-prolog}
src=${SN_SRC_DIR:-${srcdir:-.}}
dir=$(mktemp -d "${TMPDIR:-/tmp}/sn-test-check.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
fail=0
bad() {
	echo "FAIL: $*" >&2
	fail=1
}
[ -x "$check" ] || { echo "test_check: $check not built" >&2; exit 1; }
[ -x "$prolog" ] || { echo "test_check: $prolog not built" >&2; exit 1; }

# The Prolog sources only root's file: as another user, its file is
# refused for its owner, which is what is checked then.
root=no
[ "$(id -u)" -eq 0 ] && root=yes

# run_check EXPECTED_STATUS EXPECTED_STDOUT [ARGS...]: the plugstack
# text comes from $line on stdin.
run_check() {
	want_rc=$1 want=$2
	shift 2
	out=$(printf '%s\n' "$line" |
		"$check" --plugstack - --prolog "$prolog" \
			--prolog-conf "$dir/prolog.conf" "$@" 2>"$dir/err")
	rc=$?
	[ "$rc" -eq "$want_rc" ] || bad "[$line] $*: status $rc, expected $want_rc: $out"
	[ "$out" = "$want" ] || bad "[$line] $*: stdout
$out
expected
$want"
}

good=$dir/good.conf
cp "$src/etc/nccl-profiles.conf" "$good"
chmod 0644 "$good"
n_profiles=$(grep -c '^\[profile ' "$good")
n_rules=$(grep -c '^\[rule ' "$good")
printf 'MODE=comm\nTIMEOUT=20\n' >"$dir/prolog.conf"
chmod 0644 "$dir/prolog.conf"

if [ "$root" = yes ]; then
	# A good configuration: one OK line.
	line="required spank_nccl.so profiles=$good default_profiles=quiet-logs"
	out=$(printf '%s\n' "$line" | "$check" --plugstack - --prolog "$prolog" \
		--prolog-conf "$dir/prolog.conf" 2>/dev/null) ||
		bad "good configuration: not status 0"
	case $out in
	"spank-nccl: check OK: <stdin>:1, 2 arguments; $good: $n_profiles profiles, $n_rules rules; nccl-warmup-prolog: OK: $dir/prolog.conf"*) ;;
	*) bad "good configuration: $out" ;;
	esac

	# The integration tests' broken file (profiles.bats), and the shipped
	# file with its first "set" mistyped.
	printf '[profile ok]\nset A=1\nthis line is not valid\n' >"$dir/broken.conf"
	n=$(grep -n -m1 '^set ' "$good" | cut -d: -f1)
	sed "${n}s/^set /sett /" "$good" >"$dir/typo.conf"
	chmod 0644 "$dir/broken.conf" "$dir/typo.conf"
	line="required spank_nccl.so profiles=$dir/broken.conf"
	run_check 1 "$dir/broken.conf:3: unknown directive \"this\" in [profile ok] (valid: description, set, default, merge, unset, force)"
	line="required spank_nccl.so profiles=$dir/typo.conf default_profiles=quiet-logs"
	run_check 1 "$dir/typo.conf:$n: unknown directive \"sett\" in [profile nccl-cumem-off] (valid: description, set, default, merge, unset, force)"
	# --profiles reads another file than profiles= names.
	line="required spank_nccl.so profiles=$good"
	run_check 1 "$dir/broken.conf:3: unknown directive \"this\" in [profile ok] (valid: description, set, default, merge, unset, force)" \
		--profiles "$dir/broken.conf"

	# default_profiles= resolved against the file: the plugstack line.
	line="required spank_nccl.so profiles=$good default_profiles=nope"
	run_check 1 "<stdin>:1: plugstack.conf default_profiles names unknown profile \"nope\"; profiles in $good: nccl-cumem-off, ppo-tree, expandable-segments, quiet-logs (fix default_profiles= or the profile file)"

	# The Prolog's settings, by the Prolog: every problem, FILE:LINE.
	printf 'TIMEOUT=20\nMODE=fast\nDRAIN=maybe\n' >"$dir/prolog.conf"
	line="required spank_nccl.so profiles=$good"
	run_check 1 "$dir/prolog.conf:2: MODE=fast: expected check, comm or bandwidth
$dir/prolog.conf:3: DRAIN=maybe: expected yes or no"
	printf 'MODE=comm\n' >"$dir/prolog.conf"
else
	line="required spank_nccl.so profiles=$good"
	out=$(printf '%s\n' "$line" | "$check" --plugstack - --prolog "$prolog" \
		--prolog-conf "$dir/prolog.conf" 2>/dev/null)
	[ $? -eq 1 ] || bad "not root: files not refused"
	case $out in
	*"$dir/prolog.conf:1: not sourced: it must be owned by root"*) ;;
	*) bad "not root: $out" ;;
	esac
fi

# The plugstack arguments, each by the plugin's parser: every bad one.
line="required /usr/lib/slurm/spank_nccl.so profiles=$good warmup_timeout=abc bogus=1"
expect="<stdin>:1: plugstack.conf argument \"warmup_timeout=abc\": expected whole seconds between 1 and 540
<stdin>:1: plugstack.conf argument \"bogus=1\": unknown key \"bogus\": valid keys are"
out=$(printf '%s\n' "$line" | "$check" --plugstack - --prolog "$prolog" \
	--prolog-conf "$dir/prolog.conf" 2>/dev/null)
[ $? -eq 1 ] || bad "bad arguments: not status 1"
case $out in
"$expect"*) ;;
*) bad "bad arguments: $out" ;;
esac
line="required spank_nccl.so warmup_timeout=10 warmup_timeout=20"
out=$(printf '%s\n' "$line" | "$check" --plugstack - --prolog "$prolog" 2>/dev/null)
case $out in
"<stdin>:1: plugstack.conf argument \"warmup_timeout=20\": warmup_timeout is given twice: keep one"*) ;;
*) bad "a key twice: $out" ;;
esac

# A profile file that is not there: at the profiles= argument naming it,
# or at line 0 of the file given with --profiles.
line="required spank_nccl.so profiles=$dir/none.conf"
out=$(printf '%s\n' "$line" | "$check" --plugstack - --prolog "$prolog" 2>/dev/null)
[ "$out" = "<stdin>:1: profiles=$dir/none.conf: cannot open profile file: No such file or directory (set profiles= in plugstack.conf)" ] ||
	bad "no profile file: $out"
out=$(printf '%s\n' "$line" | "$check" --plugstack - --prolog "$prolog" \
	--profiles "$dir/none2.conf" 2>/dev/null)
[ "$out" = "$dir/none2.conf:0: cannot open profile file: No such file or directory (set profiles= in plugstack.conf)" ] ||
	bad "no --profiles file: $out"

# plugstack.conf with an include: the plugin loaded twice.
mkdir "$dir/d"
echo "required spank_nccl.so profiles=$good" >"$dir/d/spank-nccl.conf"
printf '# site\ninclude %s/d/*.conf\noptional spank_nccl.so\n' "$dir" >"$dir/plugstack.conf"
out=$("$check" --plugstack "$dir/plugstack.conf" --prolog "$prolog" 2>/dev/null)
[ $? -eq 1 ] || bad "loaded twice: not status 1"
case $out in
"$dir/plugstack.conf:3: spank_nccl.so loaded a second time (first at $dir/d/spank-nccl.conf:1): "*) ;;
*) bad "loaded twice: $out" ;;
esac
# No plugin line at all.
echo "required other.so" >"$dir/plugstack.conf"
out=$("$check" --plugstack "$dir/plugstack.conf" --prolog "$prolog" 2>/dev/null)
case $out in
"$dir/plugstack.conf:0: no spank_nccl.so line, here or in its includes; add "*) ;;
*) bad "no plugin line: $out" ;;
esac

# --help and usage errors.
"$check" --help | grep -q '^usage: spank-nccl-check ' || bad "--help: no usage"
"$check" --bogus 2>/dev/null
[ $? -eq 2 ] || bad "--bogus: not status 2"

[ "$fail" -eq 0 ] && echo "test_check: ok"
exit "$fail"
