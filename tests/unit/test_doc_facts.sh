#!/bin/sh
# SPDX-License-Identifier: MIT
# Facts the docs state in several places, checked against their source:
#  - every man page's .TH names a date and "spank-nccl VERSION", VERSION
#    being configure.ac's (as do the RPM spec and debian/changelog);
#  - the NHC line is the same everywhere, and its check_cmd_status -t
#    fits in NHC's own run limit (TIMEOUT, 30 s unless changed: NHC
#    refuses a larger -t and fails the node for it);
#  - nccl-warmup links libc, libcrypto and (optional) libmunge only, no
#    CUDA or NCCL library
#    (the docs send nobody to ldd for CUDA/NCCL);
#  - the driver entry points nccl-warmup needs all exist in CUDA 11.0's
#    driver (R450), so the minimum driver is the one the job's NCCL needs
#    (R525 for CUDA 12 builds, R580 for CUDA 13), as the docs say;
#  - the shipped alert rules and dashboard read only the .prom metrics
#    slurmstepd writes as root (a Prometheus datasource, spank_nccl_warmup_*
#    names), never syslog, which any local user can write to (admin guide,
#    "Syslog"; security.md).
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
helper=${SN_HELPER:-./src/warmup/nccl-warmup}
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# ---- versions ---------------------------------------------------------
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$src/configure.ac")
[ -n "$version" ] || bad "no version in $src/configure.ac's AC_INIT"
n=0
for page in "$src"/man/*.[1-8] "$src"/man/*.[1-8].in; do
	n=$((n + 1))
	th=$(grep -m1 '^\.TH ' "$page")
	# .TH TITLE SECTION "DATE" "SOURCE" "MANUAL"
	date=$(printf '%s\n' "$th" | sed -n 's/^\.TH [^ ]* [1-8] "\([^"]*\)".*/\1/p')
	source=$(printf '%s\n' "$th" | sed -n 's/^\.TH [^ ]* [1-8] "[^"]*" "\([^"]*\)".*/\1/p')
	printf '%s\n' "$date" | grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' ||
		bad "$page: .TH date \"$date\" is not YYYY-MM-DD ($th)"
	[ "$source" = "spank-nccl $version" ] ||
		bad "$page: .TH says \"$source\", configure.ac's version is $version ($th)"
done
[ "$n" -ge 5 ] || bad "expected at least 5 man pages in $src/man, found $n"
grep -qE "^Version: +$version\$" "$src/packaging/rpm/spank-nccl.spec" ||
	bad "packaging/rpm/spank-nccl.spec's Version is not $version"
grep -q "^spank-nccl ($version-" "$src/debian/changelog" ||
	bad "debian/changelog's version is not $version-N"

# ---- the licence --------------------------------------------------------
# LICENSE (what every source's SPDX line names, what the RPMs install as
# %license) and debian/copyright's licence text (what the .debs install)
# are one text: the permission paragraphs, compared word by word.
[ -f "$src/LICENSE" ] || bad "no LICENSE at the root"
grep -q '^%license LICENSE$' "$src/packaging/rpm/spank-nccl.spec" ||
	bad "the RPM spec does not install LICENSE as %license"
lic_words() { sed -n '/^ *Permission is hereby granted/,$p' | tr -s ' \n.' '\n' | grep -v '^$'; }
[ "$(lic_words <"$src/LICENSE")" = \
  "$(sed -n '/^License: MIT$/,$p' "$src/debian/copyright" | sed 1d | lic_words)" ] ||
	bad "LICENSE and debian/copyright's MIT text differ"
grep -q '^License: MIT$' "$src/debian/copyright" || bad "debian/copyright names no MIT licence"
for f in $(cd "$src" && git ls-files src 2>/dev/null | grep '\.[ch]$'); do
	grep -q 'SPDX-License-Identifier: MIT' "$src/$f" || bad "$f: no SPDX-License-Identifier: MIT line"
done

# ---- the NHC line -----------------------------------------------------
nhc=$(cd "$src" && grep -n 'check_cmd_status.*nccl' README.md docs/*.md man/*.[1-8] man/*.[1-8].in |
	sed 's/\\-/-/g')
[ -n "$nhc" ] || bad "no check_cmd_status line in the docs"
lines=$(printf '%s\n' "$nhc" | sed 's/^[^:]*:[0-9]*://; s/^[ \t]*//' | sort -u)
if [ "$(printf '%s\n' "$lines" | wc -l)" -ne 1 ]; then
	bad "the NHC lines differ:"
	printf '%s\n' "$nhc" | sed 's/^/  /' >&2
fi
t=$(printf '%s\n' "$lines" | sed -n 's/.*check_cmd_status .*-t \([0-9]*\) .*/\1/p' | head -n1)
if [ -z "$t" ] || [ "$t" -gt 30 ]; then
	bad "check_cmd_status -t ${t:-(none)}: NHC's default TIMEOUT is 30 s, and a larger -t fails the node"
fi

# ---- what nccl-warmup links ---------------------------------------------
if [ -x "$helper" ] && command -v readelf >/dev/null; then
	needed=$(readelf -d "$helper" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
	for lib in $needed; do
		case $lib in
		libc.so.* | libmunge.so.* | libcrypto.so.* | libpthread.so.* | \
		libdl.so.* | libm.so.*) ;;
		# An instrumented build (configure --enable-sanitizers) adds
		# the sanitizers' runtimes; the installed helper has none.
		libasan.so.* | libubsan.so.* | liblsan.so.* | libtsan.so.*)
			[ -n "${SN_SAN_CFLAGS:-}" ] ||
				bad "nccl-warmup links $lib in a build without sanitizers" ;;
		*) bad "nccl-warmup links $lib: the docs say it links libc, libcrypto and libmunge only" ;;
		esac
	done
	printf '%s\n' "$needed" | grep -q '^libcrypto\.so' ||
		bad "nccl-warmup does not link libcrypto (the docs say the fabric mode's step key uses it)"
	echo "nccl-warmup links: $(echo $needed)"
else
	echo "nccl-warmup not built: its libraries not checked"
fi

# ---- the driver entry points nccl-warmup binds --------------------------
# Exported by the driver of CUDA 11.0 (R450) and every later one.
cuda11='cuInit cuDriverGetVersion cuDeviceGetCount cuDeviceGet
cuDeviceGetPCIBusId cuDeviceGetUuid cuDeviceGetName cuDevicePrimaryCtxRetain
cuCtxSetCurrent cuMemGetInfo_v2 cuMemAlloc_v2 cuMemFree_v2 cuMemcpyHtoD_v2
cuMemcpyDtoH_v2 cuMemsetD32_v2 cuStreamCreate cuStreamQuery
cuStreamDestroy_v2 cuGetErrorName cuGetErrorString'
syms=$(sed -n 's/^[ \t]*SYM([a-z_]*, *"\([A-Za-z0-9_]*\)", *\([^)]*\)),.*/\1 \2/p' \
	"$src/src/warmup/cuda_driver.c")
[ -n "$syms" ] || bad "no SYM(...) table in src/warmup/cuda_driver.c"
printf '%s\n' "$syms" | {
	rc=0
	while read -r name fallback; do
		fallback=$(printf '%s' "$fallback" | tr -d '"')
		[ "$fallback" = NULL ] && fallback=
		need=${fallback:-$name}
		printf '%s\n' $cuda11 | grep -qxF "$need" || {
			echo "FAIL: nccl-warmup needs $need${fallback:+ (fallback of $name)}, not in CUDA 11.0's driver: update the minimum driver in the docs (admin guide, nccl-warmup(8)) and this list" >&2
			rc=1
		}
	done
	exit $rc
} || fail=1
# ---- alerts and dashboard: root-written metrics only ------------------
share=$src/share/spank-nccl
logs=$(grep -oE '"type": *"(loki|elasticsearch|influxdb|graphite|mysql|postgres|grafana-[a-z-]*)"' \
	"$share/spank-nccl-dashboard.json" || true)
[ -z "$logs" ] || bad "the dashboard reads another datasource than Prometheus: $logs"
# Every name with an underscore in the queries, but PromQL's functions and
# keywords and the label names they use.
metrics=$( { grep -o '"expr": *"[^"]*' "$share/spank-nccl-dashboard.json" |
		sed 's/"expr": *"//'
	     awk '/^ *expr:/ { on = 1; sub(/^ *expr: *>?/, ""); print; next }
		  on && /^ *[a-z_]+:/ { on = 0 }
		  on' "$share/spank-nccl-alerts.yml"; } |
	grep -oE '[a-z][a-z0-9_]*_[a-z0-9_]+' |
	grep -vxE 'group_left|group_right|histogram_quantile|label_replace|count_values|gpu_model|pci_bus_id' |
	sort -u)
[ -n "$metrics" ] || bad "no metric names found in $share"
for m in $metrics; do
	case $m in
	spank_nccl_warmup_*) ;;
	*) bad "$share reads $m, not one of spank-nccl's .prom metrics" ;;
	esac
done

echo "$n man pages at $version; NHC: check_cmd_status -t $t; $(printf '%s\n' "$syms" | wc -l) driver entry points; alerts and dashboard: $(printf '%s\n' "$metrics" | wc -l) .prom metrics"
exit $fail
