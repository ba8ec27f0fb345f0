#!/usr/bin/perl
# SPDX-License-Identifier: MIT
#
# A stranger on the cluster network, against a step's fabric warmup
# (tests/integration/fabric_hostile.bats; issue 20).  Runs until SIGTERM,
# then writes "connected=N answered=M" to STATS (answered: connections on
# which the step's coordinator said anything back).  hello and idle create
# STATS.started once their first round is done (the test waits for it).
#
#   hello ADDR LO-HI JOB STEP STATS [SEAL]
#       connects to every port of LO-HI at ADDR again and again, claiming
#       node index 1 and 2 with a wrapping GPU count: plain lines, a forged
#       AUTH line and, with SEAL, a HELLO correctly sealed for the
#       connection: SEAL a munged socket (by the stranger's own uid, munge
#       -s), or key:HEX (with a key not this step's: the step key's format,
#       src/warmup/fabric/fabric_key.h)
#   idle ADDR LO-HI COUNT STATS
#       holds COUNT silent connections on every port of LO-HI
#   bootstrap UID LO-HI STATS
#       watches /proc/net/tcp for a new listening socket of UID (the job
#       user's: NCCL's bootstrap root, which ncclGetUniqueId opens on an
#       ephemeral port; the coordinator's ports LO-HI aside), connects to
#       each at once and never sends a byte
#   silent STATS READY PORT...
#       listens on each PORT before the step, takes every connection and
#       never answers
#   fakeroot PORT JOB STEP STATS READY [SEAL]
#       listens on PORT before the step (the first candidate on node 0)
#       and answers each member as its root would: WELCOME (plain, or
#       sealed by the stranger's uid), GO, then a VERDICT that would pass
#       a failed node (status=256) and frame node 2
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Digest::SHA qw(hmac_sha256_hex);
use MIME::Base64 qw(encode_base64);

my ($mode, @a) = @ARGV;
my ($connected, $answered, $stats) = (0, 0, undef);
my $stop = 0;
$SIG{TERM} = sub { $stop = 1 };
# A member that hangs up on us mid-answer is no reason to stop.
$SIG{PIPE} = 'IGNORE';

sub finish {
	open(my $f, '>', "$stats.tmp") or die "$stats: $!";
	print $f "connected=$connected answered=$answered\n";
	close($f);
	rename("$stats.tmp", $stats);
	exit 0;
}

sub range { my ($lo, $hi) = split /-/, shift; return ($lo .. $hi); }

sub started {
	return if -e "$stats.started";
	open(my $f, '>', "$stats.started") or die "$stats.started: $!";
	close($f);
}

# A step key's credential of PAYLOAD under KEY (hex), with MAC if given.
sub seal_key {
	my ($hex, $payload, $mac) = @_;
	my $nonce = join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
	my $text = "SNK1:$nonce:" . time() . ':' . encode_base64($payload, '');
	return "$text:" . ($mac // hmac_sha256_hex($text, pack('H*', $hex)));
}

# The credential of PAYLOAD made by this process's uid (SEAL: munged's
# socket) or under SEAL's key:HEX, or undef.
sub seal {
	my ($sock, $payload) = @_;
	return seal_key($1, $payload) if $sock =~ /^key:([0-9a-f]{64})$/;
	open(my $p, '-|', 'munge', '-S', $sock, '-s', $payload) or return;
	my $cred = <$p>;
	close($p);
	chomp $cred if defined $cred;
	return $cred;
}

sub endpoints {
	my $s = shift;
	return ($s->sockhost . ':' . $s->sockport,
		$s->peerhost . ':' . $s->peerport);
}

# Whatever the other side says within a moment counts as an answer.
sub heard {
	my $s = shift;
	my $buf;
	return IO::Select->new($s)->can_read(0.2) && sysread($s, $buf, 1) ? 1 : 0;
}

if ($mode eq 'hello') {
	my ($addr, $ports, $job, $step, $munge);
	($addr, $ports, $job, $step, $stats, $munge) = @a;
	until ($stop) {
		for my $port (range($ports)) {
			for my $kind ('plain', 'forged', 'sealed') {
				next if $kind eq 'sealed' && !$munge;
				my $s = IO::Socket::INET->new(PeerAddr => $addr,
					PeerPort => $port, Timeout => 1) or next;
				$connected++;
				my $idx = 1 + $connected % 2;
				my $hello = "SNFB2 HELLO job=$job step=$step index=$idx nodes=3 gpus=4294967294 status=0 node=n" . ($idx + 1) . " text=";
				if ($kind eq 'plain') {
					print $s "$hello\n";
				} elsif ($kind eq 'forged') {
					print $s "SNFB2 AUTH ", ($munge // '') =~ /^key:/ ?
						seal_key('00' x 32, $hello, 'ab' x 32) :
						'MUNGE:AwQDAAD3Uuch0d5pgnFjcgR5NzIi:', "\n";
				} else {
					(my $ok = $hello) =~ s/gpus=\d+/gpus=2/;
					my ($from, $to) = endpoints($s);
					my $cred = seal($munge, "SNFB2 SEAL $from $to\n$ok");
					print $s "SNFB2 AUTH $cred\n" if $cred;
				}
				$answered += heard($s);
				close($s);
			}
		}
		started();
		select(undef, undef, undef, 0.005);
	}
	finish();
} elsif ($mode eq 'idle') {
	my ($addr, $ports, $count);
	($addr, $ports, $count, $stats) = @a;
	my %held;
	until ($stop) {
		for my $port (range($ports)) {
			my $list = $held{$port} ||= [];
			# Closed by the coordinator: forget them, open more.
			@$list = grep { !IO::Select->new($_)->can_read(0) } @$list;
			while (@$list < $count && !$stop) {
				my $s = IO::Socket::INET->new(PeerAddr => $addr,
					PeerPort => $port, Timeout => 1) or last;
				$connected++;
				push @$list, $s;
			}
		}
		started();
		select(undef, undef, undef, 0.01);
	}
	finish();
} elsif ($mode eq 'bootstrap') {
	my ($uid, $ports, @held, %seen);
	($uid, $ports, $stats) = @a;
	my ($lo, $hi) = split /-/, $ports;
	# "ADDR PORT" of each listening TCP socket of $uid (IPv4).
	my $listeners = sub {
		open(my $t, '<', '/proc/net/tcp') or return ();
		my @l;
		while (<$t>) {
			my @f = split;
			next unless @f > 7 && $f[3] eq '0A' && $f[7] eq $uid;
			my ($a, $p) = split /:/, $f[1];
			$a = join('.', reverse map { hex } unpack('(A2)4', $a));
			$a = '127.0.0.1' if $a eq '0.0.0.0';
			push @l, "$a " . hex($p);
		}
		return @l;
	};
	$seen{$_} = 1 for $listeners->();
	started();
	until ($stop) {
		for my $l ($listeners->()) {
			next if $seen{$l}++;
			my ($addr, $port) = split / /, $l;
			next if $port >= $lo && $port <= $hi;
			my $s = IO::Socket::INET->new(PeerAddr => $addr,
				PeerPort => $port, Timeout => 1) or next;
			$connected++;
			push @held, $s;
		}
		select(undef, undef, undef, 0.001);
	}
	finish();
} elsif ($mode eq 'silent') {
	my ($ready, @ports, @held);
	($stats, $ready, @ports) = @a;
	my $sel = IO::Select->new(map {
		IO::Socket::INET->new(LocalAddr => '0.0.0.0', LocalPort => $_,
			Listen => 64, ReuseAddr => 1) or die "listen $_: $!\n"
	} @ports);
	open(my $f, '>', $ready) or die; close($f);
	until ($stop) {
		for my $l ($sel->can_read(0.1)) {
			my $c = $l->accept or next;
			$connected++;
			push @held, $c;
		}
	}
	finish();
} elsif ($mode eq 'fakeroot') {
	my ($port, $job, $step, $ready, $munge);
	($port, $job, $step, $stats, $ready, $munge) = @a;
	my $l = IO::Socket::INET->new(LocalAddr => '0.0.0.0', LocalPort => $port,
		Listen => 64, ReuseAddr => 1) or die "listen $port: $!\n";
	open(my $f, '>', $ready) or die; close($f);
	my $id = '0' x 256;
	my $sel = IO::Select->new($l);
	until ($stop) {
		next unless $sel->can_read(0.1);
		my $c = $l->accept or next;
		$connected++;
		my $line = <$c>;
		my $welcome = "SNFB2 WELCOME job=$job step=$step";
		if ($munge) {
			my ($from, $to) = endpoints($c);
			my $cred = seal($munge, "SNFB2 SEAL $from $to\n$welcome");
			print $c "SNFB2 AUTH $cred\n" if $cred;
		} else {
			print $c "$welcome\n";
		}
		print $c "SNFB2 GO job=$job step=$step rank_base=0 nranks=1 id=$id\n";
		print $c "SNFB2 VERDICT job=$job step=$step status=256 blame=2 text=framed by a stranger\n";
		close($c);
	}
	finish();
}
die "usage: fabric-stranger.pl hello|idle|bootstrap|silent|fakeroot ...\n";
