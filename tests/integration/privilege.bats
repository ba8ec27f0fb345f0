#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Privilege audit on a one-node cluster, jobs run by the unprivileged
# user (sncuser, with a supplementary group): the helper's real, effective
# and saved ids and its groups are the user's and it cannot regain root;
# every process the plugin starts (the supervisor too) runs as the user;
# nothing the user controls (option, env var, PATH, profile, sbatch
# pass-through) chooses the executable; and the plugin's sources hold a
# single exec call.  Threat model: docs/security.md.

load common
load helpers/faults

setup_file() {
	sn_file_setup || return
	sn_install_fake_helper
}
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_file "$(sn_fake_helper_path)" "fake helper not installed"
	USER_UID=$(id -u "$SN_USER")
	USER_GID=$(id -g "$SN_USER")
	# An "evil" nccl-warmup the user owns: it leaves a mark if ever run.
	EVIL_DIR="$SN_CLUSTER_DIR/tmp/evil-$BATS_TEST_NUMBER"
	EVIL_MARK="$EVIL_DIR/RAN"
	rm -rf "$EVIL_DIR"
	mkdir -p "$EVIL_DIR"
	printf '#!/bin/sh\nid >%s\nexit 0\n' "$EVIL_MARK" >"$EVIL_DIR/nccl-warmup"
	chmod 0755 "$EVIL_DIR/nccl-warmup"
	cp "$EVIL_DIR/nccl-warmup" "$EVIL_DIR/evil"
	chown -R "$SN_USER" "$EVIL_DIR"
}

# srun as the job user, with the fake helper's variables and EXTRA env.
user_srun() {
	sn_as_user env SN_FAKE_MODE="$SN_FAKE_MODE" SN_FAKE_DIR="$SN_FAKE_DIR" \
		SN_FAKE_TAG="$SN_FAKE_TAG" "${EXTRA_ENV[@]}" \
		timeout -k 5 30 srun "$@" </dev/null
}

assert_evil_never_ran() {
	[ ! -e "$EVIL_MARK" ] ||
		sn_fail "the user's executable ran: $(cat "$EVIL_MARK")"
}

@test "privilege: helper ids, groups and capabilities are the job user's; root cannot be regained" {
	local f want_groups
	sn_use_fake_helper
	sn_fake_mode ids
	EXTRA_ENV=(LD_PRELOAD=)
	run --separate-stderr user_srun -n2 --gres=gpu:2 --nccl-warmup=comm true
	sn_assert_status 0
	f="$SN_FAKE_DIR/ids-$SN_FAKE_TAG-n1"
	[ -s "$f" ] || sn_fail "the helper did not record its ids"
	want_groups=$(id -G "$SN_USER" | tr ' ' '\n' | sort -n | paste -sd' ' -)
	grep -qx "uid=$USER_UID $USER_UID $USER_UID" "$f" ||
		sn_fail "uid (real effective saved): $(grep ^uid= "$f")"
	grep -qx "gid=$USER_GID $USER_GID $USER_GID" "$f" ||
		sn_fail "gid (real effective saved): $(grep ^gid= "$f")"
	grep -qx "groups=$want_groups" "$f" ||
		sn_fail "groups: $(grep ^groups= "$f"), want $want_groups (id -G)"
	grep -qx 'setuid0=refused' "$f" || sn_fail "setuid(0) worked"
	grep -qx 'seteuid0=refused' "$f" || sn_fail "seteuid(0) worked"
	grep -qx 'setgid0=refused' "$f" || sn_fail "setgid(0) worked"
	grep -qx 'capeff=0000000000000000' "$f" ||
		sn_fail "capabilities: $(grep ^capeff= "$f")"
	# The admin's path and the plugin's fixed arguments, nothing else.
	grep -qEx "argv=$(sn_fake_helper_path) --mode comm --timeout 60 --node n1 --json --result-fd 3( --teardown (exit|clean))?" "$f" ||
		sn_fail "$(grep ^argv= "$f")"
}

@test "privilege: every process the plugin starts runs as the job user, none as root" {
	local t0 helper sup stepd p
	sn_use_fake_helper
	sn_fake_mode sleep
	EXTRA_ENV=(SN_FAKE_SLEEP=3)
	user_srun -n1 --gres=gpu:1 --nccl-warmup=comm true \
		>"$SN_CLUSTER_DIR/tmp/priv-$BATS_TEST_NUMBER.out" 2>&1 &
	t0=$SECONDS
	until helper=$(grep -lasF "$(sn_fake_helper_path)" /proc/[0-9]*/cmdline |
			cut -d/ -f3 | while read -r p; do
				[ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" = S ] &&
					echo "$p"; done | head -n1) && [ -n "$helper" ]; do
		((SECONDS - t0 < 15)) || sn_fail "the helper never ran"
		sleep 0.1
	done
	sup=$(awk '/^PPid:/ { print $2 }' "/proc/$helper/status")
	stepd=$(awk '/^PPid:/ { print $2 }' "/proc/$sup/status")
	grep -qa '^slurmstepd' "/proc/$stepd/cmdline" ||
		sn_fail "the helper's grandparent $stepd is not slurmstepd"
	# The helper, its children (sleep) and the supervisor between it and
	# slurmstepd: real, effective, saved and filesystem uid all the user's.
	for p in "$sup" "$helper" $(awk -v pp="$helper" '$4 == pp { print $1 }' \
					/proc/[0-9]*/stat 2>/dev/null); do
		[ "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$p/status")" = \
		  "$USER_UID $USER_UID $USER_UID $USER_UID" ] ||
			sn_fail "process $p: $(grep -E '^(Name|Uid):' "/proc/$p/status")"
		[ "$(awk '/^CapEff:/ { print $2 }' "/proc/$p/status")" = \
		  0000000000000000 ] || sn_fail "process $p has capabilities"
	done
	# The supervisor holds a copy of slurmstepd's memory: not dumpable,
	# so its /proc files stay root's and the user cannot ptrace it.
	[ "$(stat -c %u "/proc/$sup/status")" -eq 0 ] ||
		sn_fail "the supervisor is dumpable"
	if runuser -u "$SN_USER" -- cat "/proc/$sup/environ" >/dev/null 2>&1; then
		sn_fail "the user can read the supervisor's /proc/PID/environ"
	fi
	runuser -u "$SN_USER" -- cat "/proc/$helper/environ" >/dev/null ||
		sn_fail "the control failed: the user cannot read its own helper"
	wait || sn_fail "srun failed: $(cat "$SN_CLUSTER_DIR/tmp/priv-$BATS_TEST_NUMBER.out")"
	sn_assert_no_leftovers 20
}

@test "privilege: --nccl-warmup cannot name an executable" {
	local before
	sn_fake_env ok
	before=$(sn_jobs_snapshot)
	for v in "$EVIL_DIR/evil" "comm,$EVIL_DIR/evil" \
		 "warmup_helper=$EVIL_DIR/evil" "comm,warmup_helper=$EVIL_DIR/evil"; do
		EXTRA_ENV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
		run --separate-stderr user_srun -n1 --gres=gpu:1 \
			--nccl-warmup="$v" true
		sn_assert_status 255
		sn_assert_msg 'nccl-warmup'
	done
	sn_assert_no_new_jobs "$before"
	assert_evil_never_ran
}

@test "privilege: SPANK_NCCL_WARMUP and the sbatch pass-through cannot name an executable" {
	sn_fake_env ok
	EXTRA_ENV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" SPANK_NCCL_WARMUP="$EVIL_DIR/evil")
	run --separate-stderr user_srun -n1 --gres=gpu:1 true
	sn_assert_failed
	sn_assert_msg 'SPANK_NCCL_WARMUP'
	# What sbatch hands to the steps of a job, forged by the user.
	EXTRA_ENV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH"
		   "_SLURM_SPANK_OPTION_spank_nccl_nccl_warmup=$EVIL_DIR/evil"
		   "SLURM_SPANK__SLURM_SPANK_OPTION_spank_nccl_nccl_warmup=$EVIL_DIR/evil")
	run --separate-stderr user_srun -n1 --gres=gpu:1 true
	sn_assert_failed
	sn_assert_msg "[-]-nccl-warmup: unknown word \"$EVIL_DIR/evil\""
	assert_evil_never_ran
}

@test "privilege: an nccl-warmup first in PATH is never run; the admin's path is" {
	sn_fake_env ok
	EXTRA_ENV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" FAKE_CUDA_LOG="$FAKE_CUDA_LOG"
		   PATH="$EVIL_DIR:/usr/bin:/bin")
	run --separate-stderr user_srun -n1 --gres=gpu:1 --nccl-warmup=comm true
	sn_assert_status 0
	assert_evil_never_ran
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the real helper did not run"
}

@test "privilege: a profile cannot choose the executable" {
	local conf="$SN_CLUSTER_DIR/etc/priv-profiles.conf"
	cat >"$conf" <<EOF
[profile sneaky]
description = tries to point the warmup elsewhere
set SPANK_NCCL_WARMUP=$EVIL_DIR/evil
set PATH=$EVIL_DIR:/usr/bin:/bin
EOF
	chmod 0644 "$conf"
	sn_plugstack_set "profiles=$conf"
	sn_fake_env ok
	EXTRA_ENV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" FAKE_CUDA_LOG="$FAKE_CUDA_LOG")
	run --separate-stderr user_srun -n1 --gres=gpu:1 --nccl-profile=sneaky \
		--nccl-warmup=comm true
	assert_evil_never_ran
	if [ "$status" -eq 0 ]; then
		[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the real helper did not run"
	else
		sn_assert_msg 'sneaky|SPANK_NCCL_WARMUP|PATH'
	fi
	# A profile file the user could write is refused outright.
	chown "$SN_USER" "$conf"
	run --separate-stderr user_srun -n1 --gres=gpu:1 --nccl-profile=sneaky \
		--nccl-warmup=comm true
	sn_assert_failed
	sn_assert_msg 'owned by root|owner|owned'
	assert_evil_never_ran
}

@test "privilege: LD_PRELOAD reaches the helper, which runs it as the user (by design)" {
	local f
	sn_use_fake_helper
	sn_fake_mode ids
	EXTRA_ENV=(LD_PRELOAD=/nonexistent/libuser.so)
	run --separate-stderr user_srun -n1 --gres=gpu:1 --nccl-warmup=comm true
	sn_assert_status 0
	f="$SN_FAKE_DIR/ids-$SN_FAKE_TAG-n1"
	grep -qx 'preload=/nonexistent/libuser.so' "$f" ||
		sn_fail "the job's LD_PRELOAD did not reach the helper: $(cat "$f")"
	grep -qx "uid=$USER_UID $USER_UID $USER_UID" "$f" ||
		sn_fail "$(grep ^uid= "$f")"
}

@test "privilege: source audit: exec calls in the plugin only in helper_child.c, each after its switch of ids" {
	local src="$SN_SRC_DIR/src/plugin" hits
	[ -d "$src" ] || sn_fail "no sources at $src"
	hits=$(grep -nE '\b(exec[lv]p?e?|execvpe|fexecve|system|popen|posix_spawnp?|vfork|clone3?)[[:space:]]*\(' \
		"$src"/*.c | grep -vE '^\S+:[0-9]+:\s*(/\*|\*)')
	# Two: the job's helper (as the job user) and the step key's
	# derivation (root for good, no environment).
	[ "$(wc -l <<<"$hits")" -eq 2 ] &&
		grep -q '^.*/helper_child\.c:[0-9]*:[[:space:]]*execve(spec->path, spec->argv, spec->envp);' <<<"$hits" &&
		grep -q '^.*/helper_child\.c:[0-9]*:[[:space:]]*execve(argv\[0\], argv, no_env);' <<<"$hits" ||
		sn_fail "exec calls in src/plugin: $hits"
	# The helper's exec only after the switch to the job user.
	awk '/^void sn_helper_child_run\(/ { f = 1 }
	     f && /child_drop_privileges/ { d = NR }
	     f && /execve\(/ { e = NR; exit } END { exit !(d && e && d < e) }' \
		"$src/helper_child.c" || sn_fail "execve before the privilege drop"
	# The root exec only once root for good, with no environment.
	awk '/^void sn_exec_as_root\(/ { f = 1 }
	     f && /sn_switch_ids_for_good\(0, 0, NULL, 0\) == 0/ { d = NR }
	     f && /execve\(/ { e = NR; exit } END { exit !(d && e && d < e) }' \
		"$src/helper_child.c" || sn_fail "the root exec before its switch of ids"
}

@test "privilege: source audit: ids change only in the privileged section and the helper's child" {
	local src="$SN_SRC_DIR/src/plugin" f hits calls
	[ -d "$src" ] || sn_fail "no sources at $src"
	# Calls, not comments or message text.
	for f in "$src"/*.c; do
		sed 's/"\([^"\\]\|\\.\)*"/""/g' "$f" |
			grep -nE '\b(set(e|re|res|fs)?[ug]id|setgroups)[[:space:]]*\(' |
			grep -vE '^[0-9]+:\s*(/\*|\*)' | sed "s|^|${f##*/}:|"
	done >"$BATS_TEST_TMPDIR/ids"
	hits=$(cat "$BATS_TEST_TMPDIR/ids")
	# spank_wrap.c: the two calls behind sn_proc_set_euid/egid;
	# helper_child.c: sn_switch_ids_for_good (the helper's drop, the
	# hang sampler's, the derivation's root) and regain_euid_root.
	[ "$(grep -c '^spank_wrap\.c:' <<<"$hits")" -eq 2 ] &&
		! grep -vE '^(spank_wrap|helper_child)\.c:' <<<"$hits" >/dev/null ||
		sn_fail "id calls in src/plugin: $hits"
	awk '/^(int sn_switch_ids_for_good|static int regain_euid_root)\(/ { f = 1 }
	     f && /^}/ { f = 0 }
	     /(set(e|re|res|fs)?[ug]id|setgroups)[ \t]*\(/ && !f &&
	     !/^[ \t]*(\/\*|\*)/ { bad = 1 }
	     END { exit bad }' "$src/helper_child.c" ||
		sn_fail "id calls in helper_child.c outside sn_switch_ids_for_good"
	# Only the privileged section calls the wrappers.
	calls=$(grep -lE '\bsn_proc_set_e[ug]id[[:space:]]*\(' "$src"/*.c)
	[ "$(printf '%s\n' "$calls" | sed 's|.*/||' | sort | tr '\n' ' ')" = \
	  "as_root.c spank_wrap.c " ] || sn_fail "sn_proc_set_* used in: $calls"
}
