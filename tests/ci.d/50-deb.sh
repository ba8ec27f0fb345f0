#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Packaging, as root on Debian: follows docs/install.md, running each of
# its command blocks as written.  Builds the .debs (spank-nccl and
# spank-nccl-warmup) from `make dist`'s tarball, checks what each installs
# where, checks that a build without CUDA/NCCL headers fails with a clear
# message and that the plugin-only profile (pkg.spank-nccl.nohelper)
# builds spank-nccl alone, lints the RPM spec and builds it with rpmbuild,
# with and without the helper (host only), installs spank-nccl alone (a
# node without GPUs: the Prolog exits 0) and then both, runs the
# integration tests against the INSTALLED plugin, helper, Prolog and
# profile file, then on a test cluster whose plugstack.conf includes
# /etc/slurm/plugstack.conf enables, verifies, adds arguments and purges
# as the guide says, and checks that srun works after the purge.
#
# Runs on the host (Slurm 22.05, Debian 12) from tests/run-all.sh, and
# inside each newer release's Debian root (tests/release-suite.sh), where
# the package is built with that suite's compiler against its libslurm.
#
# TAP on stdout (plan at the end); details of failures as TAP comments.
# Always exits 0: tests/run-all.sh counts the TAP lines.
#
#   SN_BUILD_DIR     configured build tree (make dist runs there)
#   DEB_BUILD_OPTIONS=nocheck   passed on: skips `make check` in the build
#   SN_DEB_SUITES    integration files run against the installed package
#                    (default "profiles warmup prolog")
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${SN_BUILD_DIR:-$src/_build}
work=$(mktemp -d /tmp/spank-nccl-deb.XXXXXX)
# shellcheck source=../cluster/release.sh
source "$src/tests/cluster/release.sh"
pkg=spank-nccl
wpkg=spank-nccl-warmup
n=0
installed=0
conf_backup=
cleanup_dropin=0
dropin=/etc/slurm/plugstack.conf.d/spank-nccl.conf

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1))
	echo "not ok $n - $1"
	[ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/# /'
}
check() {	# check DESCRIPTION COMMAND...: one TAP line for COMMAND
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$what"; else not_ok "$what" "$out"; fi
}
finish() {
	if [ "$installed" = 1 ]; then
		if out=$(dpkg -P "$wpkg" "$pkg" 2>&1) &&
		   ! dpkg-query -W -f='${Status}' "$pkg" "$wpkg" 2>/dev/null |
			grep -q installed; then
			ok "dpkg -P $wpkg $pkg leaves nothing installed"
		else
			not_ok "dpkg -P $wpkg $pkg" "$out"
		fi
		# dpkg -P removed the package's conffile; put back what was
		# there before (never on a clean CI machine).
	fi
	if [ -n "$conf_backup" ]; then
		cp -p "$conf_backup" /etc/slurm/nccl-profiles.conf
	fi
	# The guide's drop-in (none was there before the test).
	[ "$cleanup_dropin" = 0 ] || rm -f "$dropin" "$dropin.disabled"
	rm -rf "$work"
	echo "1..$n"
	exit 0
}
trap finish EXIT

# docs/install.md's commands, run as written: each ```sh block follows a
# "<!-- step: NAME -->" line; doc_step NAME DIR runs NAME's block in DIR
# under bash -e, and the end of this file checks that every step ran.
guide=$src/docs/install.md
steps_run=$work/steps-run
doc_block() {
	awk -v mark="<!-- step: $1 -->" '$0 == mark { f = 1; next }
		f == 1 && /^```sh$/ { f = 2; next }
		f == 2 && /^```$/ { exit }
		f == 2 { print }' "$guide"
}
doc_step() {
	local cmds
	cmds=$(doc_block "$1")
	[ -n "$cmds" ] || { echo "no step $1 in $guide"; return 1; }
	echo "$1" >>"$steps_run"
	(cd "$2" && bash -e -o pipefail -c "$cmds") </dev/null
}

if [ "$(id -u)" -ne 0 ]; then
	not_ok "packaging tests run as root" "run as root (dpkg -i, test cluster)"
	exit 0
fi
# The RPM spec is checked once, on the host (its rpm tools build against
# whatever Slurm headers are installed); release roots have no rpm.
rpm_checks=1
[ ! -f /.spank-nccl-root ] || rpm_checks=0
missing=
tools="dpkg-buildpackage dh bats unshare"
[ "$rpm_checks" = 0 ] || tools="$tools rpmlint rpmspec rpmbuild"
for t in $tools; do
	command -v "$t" >/dev/null || missing="$missing $t"
done
if [ -n "$missing" ]; then
	not_ok "packaging tools present" "missing:$missing (bash tests/install-deps.sh)"
	exit 0
fi
ok "packaging tools present"

# ---- build the .deb from the release tarball --------------------------
if out=$(make -C "$build" dist 2>&1); then
	ok "make dist"
else
	not_ok "make dist" "$(tail -n 20 <<<"$out")"
	exit 0
fi
tarball=$(ls -t "$build"/"$pkg"-*.tar.xz | head -n1)
tar -C "$work" -xf "$tarball" || { not_ok "unpack $tarball"; exit 0; }
tree=$(ls -d "$work/$pkg"-*/ | head -n1)
t0=$(date +%s)
if doc_step build "$tree" >"$work/build.log" 2>&1; then
	ok "docs/install.md, build: apt-get build-dep ./; dpkg-buildpackage -us -uc -b ($(($(date +%s) - t0)) s${DEB_BUILD_OPTIONS:+, DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS})"
else
	# The title names the failed unit tests: CI's summary keeps titles.
	failed=$(sed -n 's/^\(FAIL\|ERROR\): //p' "$work/build.log" | paste -sd' ')
	not_ok "docs/install.md, build${failed:+ (make check: $failed)}" \
		"$(tail -n 40 "$work/build.log")"
	exit 0
fi
deb=$(ls "$work"/"$pkg"_*.deb 2>/dev/null | head -n1)
wdeb=$(ls "$work"/"$wpkg"_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] && [ -n "$wdeb" ] ||
	{ not_ok "two .debs were built ($pkg, $wpkg)" "$(ls "$work")"; exit 0; }
ok "built $(basename "$deb") and $(basename "$wdeb")"
if [[ ${DEB_BUILD_OPTIONS:-} != *nocheck* ]]; then
	check "the package build ran the unit tests" \
		grep -qE '^# PASS: +[1-9]' "$work/build.log"
fi

# ---- what the .debs contain --------------------------------------------
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
plugin=/usr/lib/$ma/slurm-wlm/spank_nccl.so
contents=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
wcontents=$(dpkg-deb -c "$wdeb" | awk '{print $6}' | sed 's|^\.||')
has() { grep -qxF "$1" <<<"$contents" || { echo "$1 not in $pkg"; return 1; }; }
whas() { grep -qxF "$1" <<<"$wcontents" || { echo "$1 not in $wpkg"; return 1; }; }
check "$pkg: plugin in Slurm's plugin directory: $plugin" has "$plugin"
check "$pkg: profile file /etc/slurm/nccl-profiles.conf" has /etc/slurm/nccl-profiles.conf
check "$pkg: fleet report: /usr/bin/spank-nccl-report" has /usr/bin/spank-nccl-report
check "$pkg: configuration check: /usr/bin/spank-nccl-check" has /usr/bin/spank-nccl-check
check "$pkg: logrotate snippet" has /usr/share/spank-nccl/spank-nccl.logrotate
check "$pkg: the record's JSON Schema" has /usr/share/spank-nccl/record.schema.json
check "$pkg: the Prometheus alert rules" has /usr/share/spank-nccl/spank-nccl-alerts.yml
check "$pkg: the Grafana dashboard" has /usr/share/spank-nccl/spank-nccl-dashboard.json
check "$wpkg: helper in libexec: /usr/libexec/nccl-warmup" whas /usr/libexec/nccl-warmup
# Prolog= is set for every node: the Prolog comes with the plugin, and
# exits 0 where the helper is not installed (tested below).
check "$pkg: Prolog in libexec: /usr/libexec/nccl-warmup-prolog" \
	has /usr/libexec/nccl-warmup-prolog
check "$wpkg: Prolog's record writer: /usr/libexec/nccl-warmup-record" \
	whas /usr/libexec/nccl-warmup-record
check "$pkg: Prolog's example configuration" \
	has /usr/share/spank-nccl/nccl-warmup-prolog.conf.example
no_libexec() {
	! grep '^/usr/libexec/.' <<<"$contents" | grep -vx /usr/libexec/nccl-warmup-prolog
}
no_la() { ! grep '\.la$' <<<"$contents"$'\n'"$wcontents"; }
check "$pkg holds nothing of $wpkg (in /usr/libexec only the Prolog)" no_libexec
check "no libtool archive (.la) in either package" no_la
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles 2>/dev/null)
check "/etc/slurm/nccl-profiles.conf is a conffile" \
	grep -qxF /etc/slurm/nccl-profiles.conf <<<"$conffiles"
for m in man5/nccl-profiles.conf.5.gz man8/spank-nccl.8.gz \
	 man8/spank-nccl-report.8.gz man8/spank-nccl-check.8.gz \
	 man8/nccl-warmup-prolog.8.gz; do
	check "$pkg: man page /usr/share/man/$m" has "/usr/share/man/$m"
done
check "$wpkg: man page /usr/share/man/man8/nccl-warmup.8.gz (a program in /usr/libexec)" \
	whas /usr/share/man/man8/nccl-warmup.8.gz
# Both are built from their templates and config.c's key table.
built_keys() {
	local man ex
	man=$(dpkg-deb --fsys-tarfile "$deb" |
		tar -xO ./usr/share/man/man8/spank-nccl.8.gz | zcat)
	ex=$(dpkg-deb --fsys-tarfile "$deb" |
		tar -xO --wildcards "./usr/share/doc/$pkg/plugstack.conf.example*" | zcat -f)
	grep -q '^\.BI warmup_timeout= ' <<<"$man" ||
		{ echo "spank-nccl(8) does not list warmup_timeout="; return 1; }
	grep -q '^#   warmup_timeout=SECONDS ' <<<"$ex" ||
		{ echo "/usr/share/doc/$pkg/plugstack.conf.example does not list warmup_timeout="; return 1; }
}
check "$pkg: spank-nccl(8) and plugstack.conf.example list the plugstack keys" built_keys
snippet=/usr/share/spank-nccl/plugstack.conf.d/spank-nccl.conf
check "plugstack.conf.d snippet $snippet" has "$snippet"
# dh_compress gzips documents over 4 KiB.
check "admin guide in /usr/share/doc/$pkg" \
	grep -qE "^/usr/share/doc/$pkg/admin-guide\.md(\.gz)?\$" <<<"$contents"
depends=$(dpkg-deb -f "$deb" Depends)
wdepends=$(dpkg-deb -f "$wdeb" Depends)
debversion=$(dpkg-deb -f "$deb" Version)
slurmlib=$(dpkg-query -S "$(readlink -f "/usr/lib/$ma/libslurm.so")" | cut -d: -f1)
check "Depends names the Slurm ABI it was built for ($slurmlib): $depends" \
	grep -qw "$slurmlib" <<<"$depends"
check "$pkg recommends $wpkg (= $debversion)" \
	grep -qF "$wpkg (= $debversion)" <<<"$(dpkg-deb -f "$deb" Recommends)"
check "$wpkg depends on $pkg (= $debversion) and libmunge: $wdepends" \
	bash -c "grep -qF '$pkg (= $debversion)' <<<'$wdepends' && grep -q libmunge <<<'$wdepends'"
check "the plugin links no CUDA/NCCL library" \
	sh -c "dpkg-deb -x '$deb' '$work/root' && ! readelf -d '$work/root$plugin' | grep -E 'NEEDED.*(cudart|libnccl)'"
# nccl-warmup loads libcuda.so.1 and libnccl.so.2 at run time (issue 14).
check "Depends has no CUDA/NCCL package: $depends; $wdepends" \
	bash -c "! grep -Eiq 'cuda|nccl2' <<<'$depends $wdepends'"
check "nccl-warmup links no CUDA/NCCL library" \
	sh -c "dpkg-deb -x '$wdeb' '$work/root' && ! readelf -d '$work/root/usr/libexec/nccl-warmup' | grep -E 'NEEDED.*(libcuda|libnccl)'"

# ---- without CUDA/NCCL headers: fail, unless plugin-only on purpose ------
# A build host without the headers: /usr/local/cuda hidden by an empty
# tmpfs in a private mount namespace (neither header is elsewhere).
nocuda() {	# nocuda DIR LOG COMMAND...: COMMAND in DIR with no CUDA headers
	local dir=$1 log=$2
	shift 2
	unshare -m sh -c 'mount -t tmpfs none /usr/local/cuda 2>/dev/null ||
		{ mkdir -p /usr/local/cuda && mount -t tmpfs none /usr/local/cuda; } ||
		{ echo "cannot hide /usr/local/cuda"; exit 99; }
		cd "$0" && exec "$@"' "$dir" "$@" >"$log" 2>&1
}
if [ -e /usr/include/cuda.h ] || [ -e /usr/include/nccl.h ]; then
	not_ok "a build without CUDA/NCCL headers" \
		"/usr/include has cuda.h or nccl.h: cannot hide them here"
else
	for t in noheaders nohelper; do
		mkdir -p "$work/$t" && tar -C "$work/$t" -xf "$tarball"
	done
	t0=$(date +%s)
	nocuda "$(ls -d "$work/noheaders/$pkg"-*/)" "$work/noheaders.log" \
		env DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b
	rc=$?
	msg='--enable-warmup: nccl-warmup cannot be built'
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 99 ] && grep -qF -- "$msg" "$work/noheaders.log" &&
	   grep -qF 'DEB_BUILD_PROFILES=pkg.spank-nccl.nohelper' "$work/noheaders.log" &&
	   ! ls "$work/noheaders/"*.deb >/dev/null 2>&1; then
		ok "without CUDA/NCCL headers dpkg-buildpackage fails, saying why and how to build the plugin only ($(($(date +%s) - t0)) s)"
	else
		not_ok "without CUDA/NCCL headers dpkg-buildpackage fails with a clear message (exit $rc)" \
			"$(tail -n 25 "$work/noheaders.log")"
	fi
	t0=$(date +%s)
	if nocuda "$(ls -d "$work/nohelper/$pkg"-*/)" "$work/nohelper.log" \
		env DEB_BUILD_OPTIONS=nocheck DEB_BUILD_PROFILES=pkg.spank-nccl.nohelper \
		dpkg-buildpackage -us -uc -b; then
		ndeb=$(ls "$work/nohelper/$pkg"_*.deb 2>/dev/null | head -n1)
		ncontents=$(dpkg-deb -c "$ndeb" 2>/dev/null | awk '{print $6}' | sed 's|^\.||')
		if [ -n "$ndeb" ] && ! ls "$work/nohelper/$wpkg"_*.deb >/dev/null 2>&1 &&
		   grep -qxF "$plugin" <<<"$ncontents" &&
		   grep -qx /usr/libexec/nccl-warmup-prolog <<<"$ncontents" &&
		   ! grep '^/usr/libexec/.' <<<"$ncontents" | grep -qvx /usr/libexec/nccl-warmup-prolog &&
		   ! grep -qF "$wpkg" <<<"$(dpkg-deb -f "$ndeb" Recommends 2>/dev/null)"; then
			ok "DEB_BUILD_PROFILES=pkg.spank-nccl.nohelper without headers: $pkg alone, plugin and Prolog, no helper ($(($(date +%s) - t0)) s)"
		else
			not_ok "pkg.spank-nccl.nohelper builds $pkg alone, without the helper" \
				"$(ls "$work/nohelper"; printf '%s\n' "$ncontents" | head -n 40)"
		fi
	else
		not_ok "DEB_BUILD_PROFILES=pkg.spank-nccl.nohelper dpkg-buildpackage without headers" \
			"$(tail -n 40 "$work/nohelper.log")"
	fi
	rm -rf "$work/noheaders" "$work/nohelper"
fi

# ---- RPM spec ----------------------------------------------------------
spec=$src/packaging/rpm/spank-nccl.spec
if [ "$rpm_checks" = 1 ]; then
	out=$(rpmlint -r "$src/packaging/rpm/spank-nccl.rpmlintrc" "$spec" 2>&1)
	if grep -q ' 0 errors, 0 warnings' <<<"$out"; then
		ok "rpmlint packaging/rpm/spank-nccl.spec: no errors or warnings"
	else
		not_ok "rpmlint packaging/rpm/spank-nccl.spec" "$out"
	fi
	# rpmbuild -ta, as the spec's header says; --nodeps because Debian
	# has no rpm database of slurm-devel/libcmocka-devel (the headers
	# and libraries themselves are installed); --nocheck because the
	# unit tests ran on this tree already (make check, the .deb build).
	t0=$(date +%s)
	if (rpmbuild -ta --nodeps --nocheck --define "_topdir $work/rpm" "$tarball") \
		>"$work/rpmbuild.log" 2>&1; then
		ok "rpmbuild -ta $(basename "$tarball") ($(($(date +%s) - t0)) s)"
		rpmfile=$(ls "$work"/rpm/RPMS/*/"$pkg"-[0-9]*.rpm 2>/dev/null | head -n1)
		wrpmfile=$(ls "$work"/rpm/RPMS/*/"$wpkg"-[0-9]*.rpm 2>/dev/null | head -n1)
		rpm_files=$(rpm -qpl "$rpmfile" 2>/dev/null)
		wrpm_files=$(rpm -qpl "$wrpmfile" 2>/dev/null)
		rpm_has() { grep -qE "$1" <<<"$rpm_files" || { echo "no $1 in $rpmfile"; return 1; }; }
		wrpm_has() { grep -qE "$1" <<<"$wrpm_files" || { echo "no $1 in ${wrpmfile:-the $wpkg RPM (not built)}"; return 1; }; }
		rpm_no_libexec() {
			! grep '/libexec/' <<<"$rpm_files" | grep -qv '/libexec/nccl-warmup-prolog$'
		}
		check "the RPM has the plugin in Slurm's plugin dir" rpm_has '/slurm/spank_nccl\.so$'
		check "the RPM has the record's JSON Schema" \
			rpm_has '/spank-nccl/record\.schema\.json$'
		check "the RPM has the Prometheus alert rules" \
			rpm_has '/spank-nccl/spank-nccl-alerts\.yml$'
		check "the RPM has the Grafana dashboard" \
			rpm_has '/spank-nccl/spank-nccl-dashboard\.json$'
		check "the RPM has the profile file as a config file" \
			sh -c "rpm -qpc '$rpmfile' | grep -qx /etc/slurm/nccl-profiles.conf"
		wrpm_helper() {
			wrpm_has '/nccl-warmup$' && wrpm_has '/nccl-warmup-record$'
		}
		check "the $wpkg RPM has nccl-warmup and the Prolog's record writer" \
			wrpm_helper
		check "the $pkg RPM has the Prolog" rpm_has '/libexec/nccl-warmup-prolog$'
		check "the $pkg RPM has nothing of $wpkg (in libexec only the Prolog)" rpm_no_libexec
		# The same as debian/spank-nccl.postrm (tested below, on the .deb).
		check "the $pkg RPM's %postun disables the plugstack.conf.d line on uninstall" \
			sh -c "rpm -qp --scripts '$rpmfile' | grep -q 'plugstack.conf.d/spank-nccl.conf'"
		host_slurm=$(sn_release_local)
		check "the RPM requires Slurm $host_slurm (the release it was built for)" \
			sh -c "rpm -qpR '$rpmfile' | grep -qE '^slurm.* >= $host_slurm\$'"
	else
		not_ok "rpmbuild -ta $(basename "$tarball")" "$(tail -n 40 "$work/rpmbuild.log")"
	fi
	# The plugin alone, on purpose: no helper, no spank-nccl-warmup.
	t0=$(date +%s)
	if (rpmbuild -ta --nodeps --nocheck --without helper \
		--define "_topdir $work/rpm-nohelper" "$tarball") \
		>"$work/rpmbuild-nohelper.log" 2>&1; then
		nrpm=$(ls "$work"/rpm-nohelper/RPMS/*/"$pkg"-[0-9]*.rpm 2>/dev/null | head -n1)
		if [ -n "$nrpm" ] && ! ls "$work"/rpm-nohelper/RPMS/*/"$wpkg"-*.rpm >/dev/null 2>&1 &&
		   ! rpm -qpl "$nrpm" | grep /libexec/ | grep -qv '/libexec/nccl-warmup-prolog$' &&
		   grep -q -- '--disable-warmup' "$work/rpmbuild-nohelper.log"; then
			ok "rpmbuild -ta --without helper: $pkg alone, the Prolog and no helper ($(($(date +%s) - t0)) s)"
		else
			not_ok "rpmbuild -ta --without helper builds $pkg alone" \
				"$(ls "$work"/rpm-nohelper/RPMS/*/; tail -n 20 "$work/rpmbuild-nohelper.log")"
		fi
	else
		not_ok "rpmbuild -ta --without helper" "$(tail -n 40 "$work/rpmbuild-nohelper.log")"
	fi
fi
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$src/configure.ac")
check "spec Version matches configure.ac ($version)" \
	grep -qE "^Version: +$version\$" "$spec"
check "debian/changelog version matches configure.ac ($version)" \
	grep -q "^$pkg ($version-" "$src/debian/changelog"

# ---- docs/install.md, as written: install, enable, verify, uninstall ---
if dpkg-query -W -f='${Status}' "$pkg" "$wpkg" 2>/dev/null | grep -q 'ok installed'; then
	not_ok "$pkg, $wpkg not installed before the test" "purge them first (dpkg -P $wpkg $pkg)"
	exit 0
fi
if [ -e "$dropin" ] || [ -L "$dropin" ] || [ -e "$dropin.disabled" ]; then
	not_ok "no $dropin before the test" "remove $dropin and $dropin.disabled first"
	exit 0
fi
# A profile file from an earlier install is put aside (apt would ask
# whether to keep it), and back by finish().
if [ -e /etc/slurm/nccl-profiles.conf ]; then
	conf_backup=$work/nccl-profiles.conf.before
	mv /etc/slurm/nccl-profiles.conf "$conf_backup"
fi
tree_dir=${tree%/}

# A node without GPUs: spank-nccl alone.
installed=1
if out=$(doc_step install-plugin "$tree_dir" 2>&1) &&
   [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] &&
   ! dpkg-query -W -f='${Status}' "$wpkg" 2>/dev/null | grep -q 'ok installed'; then
	ok "docs/install.md, install-plugin: apt install -y ../spank-nccl_*.deb installs $pkg alone"
else
	not_ok "docs/install.md, install-plugin" "$out"
	exit 0
fi
# The Prolog as slurmd runs it (an empty environment but the job's), on
# this node without the helper: exit 0, one line.  With GPUs in the job
# (CUDA_VISIBLE_DEVICES) and without.
prolog_gpuless() {
	local out rc want
	want="spank-nccl: no /usr/libexec/nccl-warmup on n1 (spank-nccl-warmup not installed): job not checked"
	for gpus in "CUDA_VISIBLE_DEVICES=0,1 SLURM_JOB_GPUS=0,1" ""; do
		# shellcheck disable=SC2086
		out=$(env -i SLURMD_NODENAME=n1 SLURM_JOB_ID=42 SLURM_JOB_UID=65534 \
			SLURM_JOB_USER=nobody SLURM_CLUSTER_NAME=sn $gpus \
			/usr/libexec/nccl-warmup-prolog 2>&1 </dev/null)
		rc=$?
		[ "$rc" -eq 0 ] && [ "$out" = "$want" ] ||
			{ echo "job env ${gpus:-without GPUs}: exit $rc, output:"; echo "$out"; return 1; }
	done
}
check "$pkg alone: the Prolog exits 0 with one line, the job's GPUs or none" prolog_gpuless
check "$pkg alone: spank-nccl-check says this node's jobs are not checked" \
	sh -c "spank-nccl-check --plugstack $snippet | grep -q 'no /usr/libexec/nccl-warmup on this node'"

# A GPU node: both.
if out=$(doc_step install "$tree_dir" 2>&1) &&
   [ "$(dpkg-query -W -f='${Status}' "$wpkg" 2>/dev/null)" = "install ok installed" ]; then
	ok "docs/install.md, install: apt install -y ../spank-nccl{,-warmup}_*.deb"
else
	not_ok "docs/install.md, install: apt install -y ../spank-nccl{,-warmup}_*.deb" "$out"
	exit 0
fi
check "installed plugin loads in srun's process (dlopen)" \
	test -f "$plugin"
# The admin's check after a change, on what the packages installed: the
# snippet's line, /etc/slurm/nccl-profiles.conf, the Prolog's defaults.
check "spank-nccl-check: the package's line, profile file and Prolog are OK" \
	sh -c "spank-nccl-check --plugstack $snippet | grep -q '^spank-nccl: check OK: $snippet:'"
# nccl-warmup-prolog(8)'s example of nccl-warmup-record (a check by hand,
# recorded as "manual"), as the page renders it, on the installed programs
# and the fake driver; the record file moved into $work.
record_example() {
	local cmds
	cmds=$(MANWIDTH=200 man -l "$src/man/nccl-warmup-prolog.8" 2>/dev/null |
		sed -n '/^ *\/usr\/libexec\/nccl-warmup --mode check --json/,/<\/tmp\/warmup\.json$/p' |
		sed -e 's/^ *//' -e "s|/var/log/spank-nccl/warmups.jsonl|$work/warmups.jsonl|")
	[ "$(wc -l <<<"$cmds")" -eq 4 ] || { echo "example not found: $cmds"; return 1; }
	LD_LIBRARY_PATH=$build/tests/fake/cuda:$build/tests/fake/nccl bash -ec "$cmds" </dev/null >/dev/null &&
		rm -f /tmp/warmup.json &&
		grep -q '"source":"manual".*"verdict":"pass"' "$work/warmups.jsonl"
}
check "nccl-warmup-prolog(8)'s nccl-warmup-record example writes a passed manual record" \
	record_example
prolog_line=$(grep -m1 '^Prolog=' "$guide")
check "docs/install.md's $prolog_line names the installed Prolog" \
	test -x "${prolog_line#Prolog=}"

export SN_INSTALLED=1 SN_BUILD_DIR="$build" SN_SRC_DIR="$src"
export SN_CLUSTER_DIR=${SN_CLUSTER_DIR:-/tmp/spank-nccl-cluster}-deb
# shellcheck source=../cluster/cluster.sh
source "$src/tests/cluster/cluster.sh"

# Each bats file starts its own cluster (SN_INSTALLED=1: the installed
# plugin, helper, profile file and Prolog; fake GPUs from the build tree).
for f in ${SN_DEB_SUITES:-profiles warmup prolog}; do
	tap=$work/$f.tap
	(cd "$src" && bats --tap "tests/integration/$f.bats") >"$tap" 2>&1
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tap" | head -n1)
	ran=0
	while IFS= read -r line; do
		case $line in
		"ok "* | "not ok "*)
			ran=$((ran + 1))
			status=${line%% [0-9]*}
			rest=${line#"$status "}
			rest=${rest#* }
			n=$((n + 1))
			echo "$status $n - installed package: $f.bats: $rest"
			;;
		"#"*) echo "$line" ;;
		esac
	done <"$tap"
	if [ -z "$plan" ] || [ "$ran" -lt "$plan" ]; then
		not_ok "installed package: $f.bats ran all its tests (${ran}/${plan:-?})" \
			"$(tail -n 20 "$tap")"
	fi
done

# The rest of docs/install.md on a cluster whose plugstack.conf stands for
# Debian's: it includes /etc/slurm/plugstack.conf, which includes
# /etc/slurm/plugstack.conf.d/*.conf, where the guide's commands write.
# (The Prolog= line is tested by prolog.bats, through a wrapper that gives
# the Prolog the fake driver; here it is not set.)
# The installed plugin keeps passed warmups in /run/spank-nccl/job-JOBID;
# the suites' clusters above numbered their jobs from 1 too, so this one
# starts elsewhere, or its first warmup would "reuse" their pass.  A job
# run by srun alone has no batch or extern step to remove its record, so
# one left by an earlier run on this machine (a cached release root) goes
# first.
rm -rf /run/spank-nccl/job-100[0-9][0-9][0-9]
if ! out=$(SN_PLUGIN=0 SN_SLURM_CONF_EXTRA=FirstJobId=100000 sn_cluster_start 2>&1); then
	not_ok "test cluster with the installed package" "$out"
	exit 0
fi
echo "include /etc/slurm/plugstack.conf" >"$SN_CLUSTER_DIR/etc/plugstack.conf"
cdir=$SN_CLUSTER_DIR/tmp
cleanup_dropin=1
# Each TAP line names the step and its first command.
step_check() {	# step_check NAME [TEST...]: doc_step NAME, then TEST
	local name=$1 out
	shift
	if out=$(doc_step "$name" "$cdir" 2>&1) && { [ $# -eq 0 ] || "$@" <<<"$out"; }; then
		ok "docs/install.md, $name: $(doc_block "$name" | head -n1)"
	else
		not_ok "docs/install.md, $name: $(doc_block "$name" | head -n1)" "$out"
	fi
}
step_check enable
# The job's environment carries the fake driver (the node's, in a real
# cluster), which the helper loads.
verify_test() {
	local out
	out=$(cat)
	grep -q '^spank-nccl: check OK: /etc/slurm/plugstack.conf' <<<"$out" &&
		grep -q quiet-logs <<<"$out" &&
		grep -qE '^spank-nccl: warmup ok on n1: 1 GPU .*check mode' <<<"$out"
}
LD_LIBRARY_PATH=$(sn_fake_lib_dir) step_check verify verify_test
arguments_test() {
	[ -f "$dropin" ] && [ ! -L "$dropin" ] &&
		[ "$(cd "$cdir" && sn_timeout srun -n1 printenv NCCL_DEBUG </dev/null)" = WARN ]
}
step_check arguments arguments_test
step_check reconfigure
step_check find-lines grep -qF "$dropin:required"
uninstall_test() {
	! dpkg-query -W -f='${Status}' "$pkg" "$wpkg" 2>/dev/null | grep -q installed ||
		return 1
	installed=0
	[ ! -e "$dropin" ] && grep -q spank_nccl "$dropin.disabled"
}
step_check uninstall uninstall_test
sn_cluster_stop >/dev/null 2>&1
# The guide's scontrol reconfigure re-executes slurmctld and slurmd on
# Slurm 23.11 and later, and their pid files may be gone: stop this
# cluster's own daemons (their -f names its slurm.conf) by pid too.
cluster_pids() {
	local p args
	for p in /proc/[0-9]*; do
		args=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		case $args in
		"slurmctld -f $SLURM_CONF "* | "slurmd -f $SLURM_CONF "*) echo "${p#/proc/}" ;;
		esac
	done
}
left=$(cluster_pids)
if [ -n "$left" ]; then
	# shellcheck disable=SC2086
	kill -TERM $left 2>/dev/null
	for _ in $(seq 50); do
		[ -n "$(cluster_pids)" ] || break
		sleep 0.2
	done
	left=$(cluster_pids)
	# shellcheck disable=SC2086
	[ -z "$left" ] || kill -KILL $left 2>/dev/null
fi

all_steps=$(sed -n 's/^<!-- step: \([a-z-]*\) -->$/\1/p' "$guide")
sh_blocks=$(grep -c '^```sh$' "$guide")
not_run() {
	local s missing=
	for s in $all_steps; do
		grep -qxF "$s" "$steps_run" 2>/dev/null || missing="$missing $s"
	done
	[ -z "$missing" ] || { echo "not run:$missing"; return 1; }
	[ "$(wc -w <<<"$all_steps")" -eq "$sh_blocks" ] ||
		{ echo "$sh_blocks sh blocks, $(wc -w <<<"$all_steps") step marks"; return 1; }
}
check "every command block of docs/install.md ran ($(wc -w <<<"$all_steps") steps)" not_run
