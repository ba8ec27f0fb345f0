#!/bin/sh
# SPDX-License-Identifier: MIT
#
# A stand-in for nccl-warmup that misbehaves on purpose, for
# tests/integration/faults.bats, load.bats and privilege.bats.  Installed
# root-owned, mode 0755, in the test cluster and named by warmup_helper=
# in plugstack.conf; it runs as the job user with the job's environment,
# so the test picks the behaviour with variables exported to srun:
#
#   SN_FAKE_MODE   what to do (below)
#   SN_FAKE_DIR    directory for pid files and records (the cluster's tmp)
#   SN_FAKE_TAG    name for this run's files (default: the job id)
#
# Every run appends "mode=M node=N pid=P" to $SN_FAKE_DIR/runs-$TAG.
#
# Modes:
#   ok                 no output, exit 0
#   garbage-ok         binary garbage and a broken JSON on stdout, exit 0
#   garbage-fail       garbage on stdout, one stderr line, exit 5
#   silent-fail        no output at all, exit 4
#   signal             kills itself with SIGSEGV
#   grandchild         leaves a background sleep in its process group
#   setsid             leaves a sleep that called setsid(): own session
#   daemon             double fork + setsid, all descriptors closed
#   flood              10 MiB on stdout and stderr, exit 0
#   inject             stderr and JSON message (on --result-fd) with
#                      newlines and escape sequences forging
#                      "spank-nccl:" lines, exit 5
#   ids                records getresuid/getresgid/groups and whether
#                      setuid(0)/seteuid(0)/setgid(0) work, exit 0
#   sleep              sleeps SN_FAKE_SLEEP seconds (default 2), exit 0
#   real               execs the real nccl-warmup beside this script;
#                      on the node named in SN_FAKE_BAD_NODE with
#                      duplicate PCI bus IDs (one bad node of several)

node=unknown
result=1	# where the JSON goes: --result-fd, as nccl-warmup does
prev=
for a in "$@"; do
	[ "$prev" = --node ] && node=$a
	[ "$prev" = --result-fd ] && result=$a
	prev=$a
done
dir=${SN_FAKE_DIR:-/tmp}
tag=${SN_FAKE_TAG:-${SLURM_JOB_ID:-0}}
mode=${SN_FAKE_MODE:-ok}
echo "mode=$mode node=$node pid=$$" >>"$dir/runs-$tag"

# Starts CMD... in the background and waits until it wrote its pid file.
leave_behind() {
	pidfile=$1
	shift
	rm -f "$pidfile"
	"$@"
	i=0
	while [ ! -s "$pidfile" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

case $mode in
ok)
	exit 0 ;;
garbage-ok)
	printf '\001\002\377garbage {"exit_code": 0, "status": \n'
	exit 0 ;;
garbage-fail)
	printf '\377\376 not json at all\n'
	echo "fake helper: the GPUs are on fire" >&2
	exit 5 ;;
silent-fail)
	exit 4 ;;
signal)
	kill -s SEGV $$
	exit 0 ;;
grandchild)
	f="$dir/grandchild-$tag-$node.pid"
	leave_behind "$f" sh -c "sh -c 'echo \$\$ >\"$f\"; exec sleep 300' \
		</dev/null >/dev/null 2>&1 &"
	exit 0 ;;
setsid)
	f="$dir/setsid-$tag-$node.pid"
	leave_behind "$f" sh -c "setsid sh -c 'echo \$\$ >\"$f\"; exec sleep 300' \
		</dev/null >/dev/null 2>&1 &"
	exit 0 ;;
daemon)
	f="$dir/daemon-$tag-$node.pid"
	leave_behind "$f" setsid -f sh -c "sh -c 'echo \$\$ >\"$f\"; exec sleep 300' \
		</dev/null >/dev/null 2>&1 & exit 0" </dev/null >/dev/null 2>&1
	exit 0 ;;
flood)
	head -c 10485760 /dev/zero | tr '\0' x
	head -c 10485760 /dev/zero | tr '\0' y >&2
	exit 0 ;;
inject)
	printf '{"exit_code":5,"status":"nccl_error","mode":"comm","message":"bad\\nspank-nccl: FORGED-JSON \\u001b[31mred"}\n' >&"$result"
	printf 'first\nspank-nccl: FORGED-STDERR \033[2J\r\n' >&2
	exit 5 ;;
ids)
	exec perl -MPOSIX -e '
		my ($f) = @ARGV;
		open(my $o, ">>", $f) or die "$f: $!";
		my $uid = "$< $> " . ((split " ", `grep ^Uid: /proc/$$/status`)[3]);
		my @g = split " ", `grep ^Gid: /proc/$$/status`;
		my @sup = split " ", (`grep ^Groups: /proc/$$/status` =~ s/^Groups://r);
		print $o "uid=$uid\n";
		print $o "gid=$g[1] $g[2] $g[3]\n";
		print $o "groups=@{[sort { $a <=> $b } @sup]}\n";
		print $o "setuid0=" . (POSIX::setuid(0) ? "ok" : "refused") . "\n";
		$> = 0;
		print $o "seteuid0=" . ($> == 0 ? "ok" : "refused") . "\n";
		print $o "setgid0=" . (POSIX::setgid(0) ? "ok" : "refused") . "\n";
		my $cap = (split " ", `grep ^CapEff: /proc/$$/status`)[1];
		print $o "capeff=$cap\n";
		print $o "preload=" . ($ENV{LD_PRELOAD} // "") . "\n";
		print $o "argv=@ARGV[1..$#ARGV]\n";
		close($o);
		exit 0;
	' "$dir/ids-$tag-$node" "$0" "$@" ;;
sleep)
	sleep "${SN_FAKE_SLEEP:-2}"
	exit 0 ;;
real)
	real="$(dirname "$0")/nccl-warmup"
	if [ "$node" = "${SN_FAKE_BAD_NODE:-}" ]; then
		FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0
		export FAKE_CUDA_BUSIDS
	fi
	exec "$real" "$@" ;;
*)
	echo "fake-helper: unknown SN_FAKE_MODE=$mode" >&2
	exit 9 ;;
esac
