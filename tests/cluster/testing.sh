# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Helpers for the tests (sourced by cluster.sh): client commands under a
# deadline, the job user, job ids and this cluster's slurmstepds.

# srun/sbatch/salloc/squeue under a deadline (seconds in SN_TIMEOUT,
# default 30): an impossible request would otherwise wait forever.
sn_timeout() {
	timeout -k 5 "${SN_TIMEOUT:-30}" "$@"
}

# Runs a command as the unprivileged job user from a directory it can
# use, keeping SLURM_CONF (and whatever else the caller exported with
# `env`).
sn_as_user() {
	(cd "$SN_CLUSTER_DIR/tmp" &&
	 runuser -u "$SN_USER" -- env SLURM_CONF="$SLURM_CONF" "$@")
}

# sbatch --wait without its sleeps: sbatch checks the job 2 s, then 8 s,
# then 32 s after submitting it (src/sbatch/sbatch.c _job_wait, 22.05 to
# 26.05), so a job of one second costs 2 s and one of three 10 s.  This
# submits with sbatch ARGS, prints sbatch's line, polls until the job has
# left the queue (at most a second late) and exits as sbatch --wait does:
# the batch script's exit code, 1 when a signal ended it; sbatch's own
# status when it refused the job or submitted none (--nccl-profile=list);
# 124 after SN_TIMEOUT seconds (as under timeout).
sn_sbatch_wait() {
	local out id code sig rc pause=0.1 deadline=$((SECONDS + ${SN_TIMEOUT:-30}))
	out=$(sn_timeout sbatch --parsable "$@" </dev/null) || {
		rc=$?
		[ -z "$out" ] || printf '%s\n' "$out"
		return "$rc"
	}
	# --parsable: the job id ("ID" or "ID;CLUSTER") is the last line.
	id=${out##*$'\n'}
	if ! [[ $id =~ ^[0-9]+(;.*)?$ ]]; then
		[ -z "$out" ] || printf '%s\n' "$out"
		return 0
	fi
	[ "$id" = "$out" ] || printf '%s\n' "${out%$'\n'*}"
	id=${id%%;*}
	echo "Submitted batch job $id"
	# Polls after 0.1, 0.2, 0.4, 0.8 s, then every second: a squeue costs
	# ~30 ms of CPU, and the matrix waits for four jobs at once on 2 cores.
	while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; do
		((SECONDS < deadline)) || return 124
		sleep "$pause"
		case $pause in 0.1) pause=0.2 ;; 0.2) pause=0.4 ;; 0.4) pause=0.8 ;; *) pause=1 ;; esac
	done
	read -r code sig < <(sn_timeout scontrol show job "$id" |
		sed -n 's/.*[^a-zA-Z]ExitCode=\([0-9]*\):\([0-9]*\).*/\1 \2/p')
	[ -n "$code" ] && [ "$sig" -eq 0 ] || return 1
	return "$code"
}

# IDs of every job the controller knows (any state), one per line.
sn_all_job_ids() {
	sn_timeout squeue -h -t all -o %i 2>/dev/null | sort -n
}
