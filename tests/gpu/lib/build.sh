# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The GPU tests' phase 2, sourced by tests/gpu/run-gpu-tests.sh: the node's
# NCCL, every CUDA runtime hidden from the loader, spank-nccl built from the
# carried tarball (configure + make, or plain gcc without make), the fault
# interposer, and the bench's "before" helper.

nccl_prefix=
nccl_lib_version=

find_nccl() {
	local h lib pyinc
	lib=$(ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ { print $NF; exit }')
	if [ "$dryrun" = 1 ] && [ -e "$cuda/include/nccl.h" ]; then
		nccl_prefix=$cuda
		return 0
	fi
	[ -n "$lib" ] || { echo "libnccl.so.2 is not in the ld.so cache"; return 1; }
	lib=$(readlink -f "$lib")
	nccl_lib_version=$(basename "$lib" | sed -n 's/^libnccl\.so\.\([0-9.]*\)$/\1/p')
	pyinc=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)
	for h in /usr/include/nccl.h "$cuda/include/nccl.h" "$carry/nccl.h" "${pyinc:-/nonexistent}/nccl.h"; do
		[ -f "$h" ] && break
	done
	[ -f "$h" ] || { echo "no nccl.h anywhere (carry .carry/nccl.h)"; return 1; }
	nccl_prefix=$work/nccl
	rm -rf "$nccl_prefix"
	mkdir -p "$nccl_prefix/include" "$nccl_prefix/lib"
	cp "$h" "$nccl_prefix/include/nccl.h"
	ln -s "$lib" "$nccl_prefix/lib/libnccl.so"
	echo "NCCL: library $lib (version ${nccl_lib_version:-unknown}), header $h ($(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{printf "%s%s", s, $3; s="."}' "$h"))"
}

# The helper needs only the driver: hide every CUDA runtime from the
# loader (ld.so.cache and LD_LIBRARY_PATH), as on a node where PyTorch
# from pip brings its own.  An NCCL that lived beside the hidden runtime
# is put back, alone, as the node's system NCCL.
sys_nccl=
hide_cuda_runtime() {
	local lib dir conf nccl pass
	[ "$dryrun" = 1 ] && return 0
	echo "LD_LIBRARY_PATH was: ${LD_LIBRARY_PATH:-unset}"
	unset LD_LIBRARY_PATH
	nccl=$(ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ { print $NF; exit }')
	# Several files may list (other spellings of) the same directory:
	# hide what ld.so.cache shows until no libcudart is left.
	for pass in 1 2 3 4 5; do
		ldconfig -p | grep -q 'libcudart\.so' || break
		for lib in $(ldconfig -p | awk '$1 ~ /^libcudart\.so/ { print $NF }'); do
			dir=$(dirname "$(readlink -f "$lib")")
			for conf in /etc/ld.so.conf.d/*.conf /etc/ld.so.conf; do
				[ -f "$conf" ] || continue
				grep -qxF "$(dirname "$lib")" "$conf" ||
					grep -qxF "$dir" "$conf" || continue
				echo "pass $pass: hiding $(dirname "$lib") from $conf (holds $(basename "$lib"))"
				grep -vxF -e "$(dirname "$lib")" -e "$dir" "$conf" >"$conf.sn-tmp" || :
				mv -f "$conf.sn-tmp" "$conf"
			done
		done
		ldconfig
	done
	if [ -n "$nccl" ] && ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
		mkdir -p /opt/sn-system-nccl
		ln -sfn "$(readlink -f "$nccl")" /opt/sn-system-nccl/libnccl.so.2
		echo /opt/sn-system-nccl >/etc/ld.so.conf.d/zz-sn-system-nccl.conf
		ldconfig
		echo "system NCCL $nccl re-registered alone in /opt/sn-system-nccl"
	fi
	sys_nccl=$(ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ { print $NF; exit }')
	if ldconfig -p | grep -q 'libcudart\.so'; then
		ldconfig -p | grep libcudart
		return 1
	fi
	echo "no libcudart in the loader path; system NCCL: ${sys_nccl:-none}"
}

# No make on the node: the same objects with plain gcc.
build_with_gcc() {
	local s=$work/src b=$work/build
	local flags=(-std=gnu11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror
		-Wno-unused-parameter -Wno-format-truncation -fPIC
		$(find "$s/src/core" "$s/src/warmup" -mindepth 1 -type d -printf '-I%p ') \
		-I"$s/src/warmup" -I"$b" '-DSYSCONFDIR="/usr/local/etc"'
		'-DPACKAGE_NAME="spank-nccl"' '-DPACKAGE_VERSION="gcc-build"'
		'-DLIBEXECDIR="/usr/local/libexec"')
	mkdir -p "$b/src/plugin/.libs" "$b/src/warmup"
	gcc "${flags[@]}" -I"$sl_root/usr/include" -shared \
		-o "$b/src/plugin/.libs/spank_nccl.so" \
		-Wl,--version-script="$s/src/plugin/spank_nccl.map" \
		"$s"/src/core/*/*.c "$s"/src/plugin/*.c &&
	gcc "${flags[@]}" '-DWU_VERSION="gcc-build"' -I"$cuda/include" \
		-I"$nccl_prefix/include" -I"$sl_root/usr/include" \
		-o "$b/src/warmup/nccl-warmup" \
		"$s"/src/core/*/*.c "$s"/src/warmup/*.c "$s"/src/warmup/fabric/*.c \
		-L"$sl_root/usr/lib/x86_64-linux-gnu" -lmunge -lpthread -ldl
}

# configure_and_make CONFIGURE_ARGS...: into build.log.
configure_and_make() {
	(
		cd "$work/build" &&
		"$work/src/configure" --with-cuda="$cuda" \
			--with-nccl="$nccl_prefix" --with-munge="$sl_root/usr" "$@" &&
		if command -v make >/dev/null; then
			make -j16
		else
			echo "no make on this node: building with plain gcc"
			build_with_gcc
		fi
	) >"$out/build.log" 2>&1
}

build_project() {
	local tarballs
	phase "build"
	tarballs=("$carry"/spank-nccl-*.tar.xz)
	{ [ ${#tarballs[@]} -eq 1 ] && [ -f "${tarballs[0]}" ]; } ||
		die_setup build "want exactly one $carry/spank-nccl-*.tar.xz (tests/gpu/fetch-debs.sh), found ${#tarballs[@]}"
	say "$(grep -h '^# tarball:' "$carry/MANIFEST" 2>/dev/null)"
	rm -rf "$work/src" "$work/build"
	mkdir -p "$work/src" "$work/build"
	tar -xJf "${tarballs[0]}" -C "$work/src" --strip-components=1 ||
		die_setup build "cannot unpack ${tarballs[0]}"
	find_nccl || die_setup build "NCCL not usable"
	if hide_cuda_runtime; then
		record PASS no-cuda-runtime-in-loader-path
	else
		record FAIL no-cuda-runtime-in-loader-path "a libcudart stays in ld.so.cache (run.log)"
	fi
	if ! configure_and_make --with-slurm="$sl_root/usr"; then
		tail -n 40 "$out/build.log"
		tail -n 8 "$out/build.log" >&3
		record FAIL build-with-slurm-prefix "configure --with-slurm=$sl_root/usr && make failed (build.log); retrying with CPPFLAGS=-isystem"
		# Slurm's headers are not -Wstrict-prototypes clean: given with
		# -I they fail a -Werror build, as system headers they do not.
		mv "$out/build.log" "$work/build-with-slurm.log"
		rm -rf "$work/build"
		mkdir -p "$work/build"
		configure_and_make CPPFLAGS="-isystem $sl_root/usr/include" || {
			tail -n 40 "$out/build.log"
			tail -n 15 "$out/build.log" >&3
			cat "$work/build-with-slurm.log" >>"$out/build.log"
			die_setup build "configure/make failed (build.log)"
		}
		{ echo "==== first attempt (--with-slurm):"; cat "$work/build-with-slurm.log"; } >>"$out/build.log"
	fi
	say "$(sed -n '/spank-nccl [0-9]/,/warnings as errors/p' "$out/build.log")"
	[ -x "$work/build/src/warmup/nccl-warmup" ] ||
		die_setup build "nccl-warmup was not built (configure did not find CUDA+NCCL?)"
	[ -f "$work/build/src/plugin/.libs/spank_nccl.so" ] ||
		die_setup build "spank_nccl.so was not built"
	if [ "$dryrun" = 1 ]; then
		(cd "$work/build" && make fake-libs) >>"$out/build.log" 2>&1 ||
			die_setup build "make fake-libs failed"
	fi
	ldd "$work/build/src/warmup/nccl-warmup"
	check_ldd "$work/build/src/warmup/nccl-warmup" "$work/build/src/plugin/.libs/spank_nccl.so" ||
		die_setup build "built objects have unresolved libraries"
	gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC \
		-o "$work/interpose.so" "$src/tests/gpu/interpose.c" -ldl ||
		die_setup build "cannot build tests/gpu/interpose.c"
	record PASS build
	build_before
}

# The bench's "before": nccl-warmup of SN_GPU_BEFORE_SRC (a source tree
# of the previous helper, linked with libcudart and libnccl), built with
# gcc; its RUNPATH finds the toolkit's libcudart, hidden from ld.so.
before_helper=
build_before() {
	local b=${SN_GPU_BEFORE_SRC:-} f srcs=()
	[ -n "$b" ] && [ -f "$b/src/warmup/main.c" ] || return 0
	# The helper's own sources, as its Makefile.inc lists them.
	for f in $(sed -n '/^src_warmup_nccl_warmup_SOURCES/,/^$/p' \
			"$b/src/warmup/Makefile.inc" | grep -o 'src/warmup/[a-z_]*\.c'); do
		srcs+=("$b/$f")
	done
	if gcc -std=gnu11 -O2 -D_GNU_SOURCE -w -I"$b/src/core" -I"$work/build" \
		'-DWU_VERSION="before"' -I"$cuda/include" -I"$nccl_prefix/include" \
		-o "$work/nccl-warmup-before" "$b"/src/core/*.c "${srcs[@]}" \
		-L"$cuda/lib64" -L"$nccl_prefix/lib" -Wl,-rpath,"$cuda/lib64" \
		-lnccl -lcudart -lpthread >>"$out/build.log" 2>&1; then
		before_helper=$work/nccl-warmup-before
		say "bench before: $before_helper from $b ($(ldd "$before_helper" | grep -Eo 'libcudart[^ ]*|libnccl[^ ]*' | paste -sd' '))"
	else
		say "bench before: cannot build $b (build.log); bench without it"
	fi
}
