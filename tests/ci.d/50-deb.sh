#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Packaging, as root on Debian: builds the .debs (spank-nccl and
# spank-nccl-warmup) from `make dist`'s tarball with dpkg-buildpackage,
# checks what each installs where, checks that a build without CUDA/NCCL
# headers fails with a clear message and that the plugin-only profile
# (pkg.spank-nccl.nohelper) builds spank-nccl alone, lints the RPM spec
# and builds it with rpmbuild, with and without the helper (host only),
# installs the .debs, enables them with the package's own plugstack.conf.d
# line, runs the integration tests against the INSTALLED plugin, helper,
# Prolog and profile file, and purges the packages.
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
		if [ -n "$conf_backup" ]; then
			cp -p "$conf_backup" /etc/slurm/nccl-profiles.conf
		fi
	fi
	rm -rf "$work"
	echo "1..$n"
	exit 0
}
trap finish EXIT

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
if (cd "$tree" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b ($(($(date +%s) - t0)) s${DEB_BUILD_OPTIONS:+, DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS})"
else
	not_ok "dpkg-buildpackage -us -uc -b" "$(tail -n 40 "$work/build.log")"
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
check "$wpkg: Prolog in libexec: /usr/libexec/nccl-warmup-prolog" \
	whas /usr/libexec/nccl-warmup-prolog
check "$wpkg: Prolog's record writer: /usr/libexec/nccl-warmup-record" \
	whas /usr/libexec/nccl-warmup-record
check "$wpkg: Prolog's example configuration" \
	whas /usr/share/spank-nccl/nccl-warmup-prolog.conf.example
no_libexec() { ! grep '^/usr/libexec/.' <<<"$contents"; }
no_la() { ! grep '\.la$' <<<"$contents"$'\n'"$wcontents"; }
check "$pkg holds nothing of $wpkg (no /usr/libexec)" no_libexec
check "no libtool archive (.la) in either package" no_la
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles 2>/dev/null)
check "/etc/slurm/nccl-profiles.conf is a conffile" \
	grep -qxF /etc/slurm/nccl-profiles.conf <<<"$conffiles"
for m in man5/nccl-profiles.conf.5.gz man8/spank-nccl.8.gz \
	 man8/spank-nccl-report.8.gz man8/spank-nccl-check.8.gz; do
	check "$pkg: man page /usr/share/man/$m" has "/usr/share/man/$m"
done
for m in man1/nccl-warmup.1.gz man8/nccl-warmup-prolog.8.gz; do
	check "$wpkg: man page /usr/share/man/$m" whas "/usr/share/man/$m"
done
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
		   ! grep -q '^/usr/libexec/.' <<<"$ncontents" &&
		   ! grep -qF "$wpkg" <<<"$(dpkg-deb -f "$ndeb" Recommends 2>/dev/null)"; then
			ok "DEB_BUILD_PROFILES=pkg.spank-nccl.nohelper without headers: $pkg alone, plugin and no helper ($(($(date +%s) - t0)) s)"
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
		rpm_no_libexec() { ! grep '/libexec/' <<<"$rpm_files"; }
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
			wrpm_has '/nccl-warmup$' && wrpm_has '/nccl-warmup-prolog$' &&
				wrpm_has '/nccl-warmup-record$'
		}
		check "the $wpkg RPM has nccl-warmup, the Prolog and its record writer" \
			wrpm_helper
		check "the $pkg RPM has nothing of $wpkg" rpm_no_libexec
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
		   ! rpm -qpl "$nrpm" | grep -q /libexec/ &&
		   grep -q -- '--disable-warmup' "$work/rpmbuild-nohelper.log"; then
			ok "rpmbuild -ta --without helper: $pkg alone, no helper ($(($(date +%s) - t0)) s)"
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

# ---- install, enable with the package's line, test ---------------------
if dpkg-query -W -f='${Status}' "$pkg" "$wpkg" 2>/dev/null | grep -q 'ok installed'; then
	not_ok "$pkg, $wpkg not installed before the test" "purge them first (dpkg -P $wpkg $pkg)"
	exit 0
fi
if [ -e /etc/slurm/nccl-profiles.conf ]; then
	conf_backup=$work/nccl-profiles.conf.before
	cp -p /etc/slurm/nccl-profiles.conf "$conf_backup"
fi
if out=$(dpkg -i --force-confnew "$deb" "$wdeb" 2>&1 </dev/null); then
	installed=1
	ok "dpkg -i $(basename "$deb") $(basename "$wdeb")"
else
	installed=1
	not_ok "dpkg -i $(basename "$deb") $(basename "$wdeb")" "$out"
	exit 0
fi
check "installed plugin loads in srun's process (dlopen)" \
	test -f "$plugin"
# The admin's check after a change, on what the packages installed: the
# snippet's line, /etc/slurm/nccl-profiles.conf, the Prolog's defaults.
check "spank-nccl-check: the package's line, profile file and Prolog are OK" \
	sh -c "spank-nccl-check --plugstack $snippet | grep -q '^spank-nccl: check OK: $snippet:'"

export SN_INSTALLED=1 SN_BUILD_DIR="$build" SN_SRC_DIR="$src"
export SN_CLUSTER_DIR=${SN_CLUSTER_DIR:-/tmp/spank-nccl-cluster}-deb
# shellcheck source=../cluster/cluster.sh
source "$src/tests/cluster/cluster.sh"

# The admin's procedure: plugstack.conf includes a plugstack.conf.d where
# the package's snippet is linked.
enable_test() {
	local d=$SN_CLUSTER_DIR/etc
	mkdir -p "$d/plugstack.conf.d"
	ln -sfn "$snippet" "$d/plugstack.conf.d/spank-nccl.conf"
	echo "include $d/plugstack.conf.d/*.conf" >"$d/plugstack.conf"
	(cd "$SN_CLUSTER_DIR/tmp" &&
	 sn_timeout srun --nccl-profile=list </dev/null | grep -q quiet-logs &&
	 [ "$(sn_timeout srun -n1 --nccl-profile=quiet-logs printenv NCCL_DEBUG </dev/null)" = WARN ])
}
if out=$(sn_cluster_start 2>&1); then
	check "the package's plugstack.conf.d line enables the installed plugin" enable_test
else
	not_ok "test cluster with the installed package" "$out"
fi
sn_cluster_stop >/dev/null 2>&1

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
