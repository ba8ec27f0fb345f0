/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include "config/config.h"

static int parse1(struct sn_config *cfg, const char *arg, struct sn_error *err)
{
	char *argv[] = { (char *)arg, NULL };

	return sn_config_parse(cfg, 1, argv, err);
}

static void test_defaults(void **state)
{
	struct sn_config cfg;
	struct sn_error err = { "" };

	sn_config_defaults(&cfg);
	assert_string_equal(cfg.profiles_path, SYSCONFDIR "/nccl-profiles.conf");
	assert_string_equal(cfg.warmup_helper, LIBEXECDIR "/nccl-warmup");
	assert_int_equal(cfg.warmup_timeout_s, 60);
	assert_int_equal(cfg.warmup_mode, SN_WARMUP_MODE_COMM);
	assert_int_equal(cfg.warmup_policy, SN_POLICY_FAIL);
	assert_true(cfg.warmup_min_busbw_gbps == 0.0);
	assert_int_equal(cfg.warmup_bytes, 64UL << 20);
	assert_true(cfg.warmup_teardown_exit);
	assert_true(cfg.warmup_reuse);
	assert_string_equal(cfg.warmup_reuse_dir, "/run/spank-nccl");
	assert_false(cfg.default_profiles.given);
	assert_int_equal(cfg.default_profiles.count, 0);
	assert_int_equal(cfg.fabric_ports.lo, 29400);
	assert_int_equal(cfg.fabric_ports.hi, 29499);
	assert_false(cfg.fabric_refuse_socket);
	assert_true(cfg.fabric_min_busbw_gbps == 0.0);
	assert_string_equal(cfg.fabric_munge_socket, "");
	assert_int_equal(cfg.ras, SN_RAS_STEP);
	assert_int_equal(cfg.ras_ports.lo, 28100);
	assert_int_equal(cfg.ras_ports.hi, 28999);
	assert_int_equal(cfg.ras_sample_s, 30);
	assert_int_equal(parse1(&cfg, "ras_sample=OFF", &err), 0);
	assert_int_equal(cfg.ras_sample_s, 0);
	assert_int_equal(parse1(&cfg, "ras_sample=3600", &err), 0);
	assert_int_equal(cfg.ras_sample_s, 3600);
	assert_false(cfg.health_given);
	assert_int_equal(cfg.health.busy_mib, 1024);
	assert_string_equal(cfg.confirm_env, "");
	/* No arguments: defaults stay. */
	assert_int_equal(sn_config_parse(&cfg, 0, NULL, &err), 0);
	assert_int_equal(cfg.warmup_timeout_s, 60);
}

static void test_every_key(void **state)
{
	char *argv[] = {
		"profiles=/etc/slurm/nccl-profiles.conf",
		"default_profiles=quiet-logs,nccl-cumem-off",
		"warmup_helper=/opt/spank-nccl/libexec/nccl-warmup",
		"warmup_timeout=540",
		"warmup_mode=bandwidth",
		"warmup_policy=warn",
		"warmup_min_busbw=37.5",
		"warmup_bytes=256M",
		"warmup_teardown=clean",
		"warmup_reuse=no",
		"warmup_reuse_dir=/var/spool/slurmd/spank-nccl",
		"warmup_nccl=/opt/nccl/2.28/lib",
		"fabric_ports=31000-31007",
		"fabric_transport=no-socket",
		"fabric_min_busbw=12.5",
	};
	struct sn_config cfg;
	struct sn_error err = { "" };

	sn_config_defaults(&cfg);
	assert_string_equal(cfg.warmup_nccl, "");
	if (sn_config_parse(&cfg, sizeof(argv) / sizeof(argv[0]), argv,
			    &err) != 0)
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.profiles_path, "/etc/slurm/nccl-profiles.conf");
	assert_true(cfg.default_profiles.given);
	assert_int_equal(cfg.default_profiles.count, 2);
	assert_string_equal(cfg.default_profiles.names[0], "quiet-logs");
	assert_string_equal(cfg.default_profiles.names[1], "nccl-cumem-off");
	assert_string_equal(cfg.warmup_helper, "/opt/spank-nccl/libexec/nccl-warmup");
	assert_int_equal(cfg.warmup_timeout_s, 540);
	assert_int_equal(cfg.warmup_mode, SN_WARMUP_MODE_BANDWIDTH);
	assert_int_equal(cfg.warmup_policy, SN_POLICY_WARN);
	assert_true(cfg.warmup_min_busbw_gbps == 37.5);
	assert_int_equal(cfg.warmup_bytes, 256UL << 20);
	assert_false(cfg.warmup_teardown_exit);
	assert_false(cfg.warmup_reuse);
	assert_string_equal(cfg.warmup_reuse_dir, "/var/spool/slurmd/spank-nccl");
	assert_string_equal(cfg.warmup_nccl, "/opt/nccl/2.28/lib");
	assert_int_equal(cfg.fabric_ports.lo, 31000);
	assert_int_equal(cfg.fabric_ports.hi, 31007);
	assert_true(cfg.fabric_refuse_socket);
	assert_true(cfg.fabric_min_busbw_gbps == 12.5);
}

static void test_good_values(void **state)
{
	static const struct {
		const char *arg;
		unsigned long bytes;
		unsigned int timeout;
		double busbw;
	} cases[] = {
		{ "warmup_bytes=1K", 1024, 60, 0 },
		{ "warmup_bytes=1k", 1024, 60, 0 },
		{ "warmup_bytes=1024", 1024, 60, 0 },
		{ "warmup_bytes=16G", 16UL << 30, 60, 0 },
		{ "warmup_bytes=16384M", 16UL << 30, 60, 0 },
		{ "warmup_bytes=2g", 2UL << 30, 60, 0 },
		{ "warmup_timeout=1", 64UL << 20, 1, 0 },
		{ "warmup_timeout=007", 64UL << 20, 7, 0 },
		{ "warmup_min_busbw=0", 64UL << 20, 60, 0 },
		{ "warmup_min_busbw=.5", 64UL << 20, 60, 0.5 },
		{ "warmup_min_busbw=400.", 64UL << 20, 60, 400 },
		{ "warmup_min_busbw=100000", 64UL << 20, 60, 100000 },
	};
	struct sn_config cfg;
	struct sn_error err = { "" };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sn_config_defaults(&cfg);
		if (parse1(&cfg, cases[i].arg, &err) != 0)
			fail_msg("rejected %s: %s", cases[i].arg, err.msg);
		assert_int_equal(cfg.warmup_bytes, cases[i].bytes);
		assert_int_equal(cfg.warmup_timeout_s, cases[i].timeout);
		assert_true(cfg.warmup_min_busbw_gbps == cases[i].busbw);
	}
	sn_config_defaults(&cfg);
	assert_int_equal(parse1(&cfg, "warmup_mode=off", &err), 0);
	assert_int_equal(cfg.warmup_mode, SN_WARMUP_MODE_OFF);
	assert_int_equal(parse1(&cfg, "warmup_mode=check", &err), 0);
	assert_int_equal(cfg.warmup_mode, SN_WARMUP_MODE_CHECK);
	assert_int_equal(parse1(&cfg, "warmup_mode=fabric", &err), 0);
	assert_int_equal(cfg.warmup_mode, SN_WARMUP_MODE_FABRIC);
	assert_int_equal(parse1(&cfg, "fabric_ports=30000", &err), 0);
	assert_int_equal(cfg.fabric_ports.lo, 30000);
	assert_int_equal(cfg.fabric_ports.hi, 30000);
	assert_int_equal(parse1(&cfg, "fabric_transport=ANY", &err), 0);
	assert_false(cfg.fabric_refuse_socket);
	assert_int_equal(parse1(&cfg, "warmup_policy=fail", &err), 0);
	assert_int_equal(cfg.warmup_policy, SN_POLICY_FAIL);
	assert_int_equal(parse1(&cfg, "default_profiles=none", &err), 0);
	assert_true(cfg.default_profiles.none);
	assert_int_equal(cfg.default_profiles.count, 0);
}

struct bad_case {
	const char *arg;
	const char *expect;
};

static void test_bad_values(void **state)
{
	static const struct bad_case cases[] = {
		{ "warmup_timeout=abc", "plugstack.conf argument \"warmup_timeout=abc\": expected whole seconds between 1 and 540" },
		{ "warmup_timeout=0", "between 1 and 540" },
		{ "warmup_timeout=541", "between 1 and 540" },
		{ "warmup_timeout=-5", "between 1 and 540" },
		{ "warmup_timeout=+5", "between 1 and 540" },
		{ "warmup_timeout= 5", "between 1 and 540" },
		{ "warmup_timeout=5s", "between 1 and 540" },
		{ "warmup_timeout=1.5", "between 1 and 540" },
		{ "warmup_timeout=99999999999999999999999", "between 1 and 540" },
		{ "warmup_timeout=", "empty value: remove the argument" },
		{ "profiles=relative/path.conf", "\"profiles=relative/path.conf\": expected an absolute path" },
		{ "profiles=", "empty value" },
		{ "profiles=/etc/x\x01y", "control characters" },
		{ "warmup_helper=nccl-warmup", "expected an absolute path" },
		{ "warmup_mode=fast", "expected one of off, check, comm, bandwidth, fabric" },
		{ "warmup_mode=comm,verbose", "expected one of off, check, comm, bandwidth, fabric" },
		{ "warmup_policy=ignore", "expected fail (refuse the step) or warn" },
		{ "warmup_min_busbw=-1", "expected a bus bandwidth in GB/s between 0 and 100000" },
		{ "warmup_min_busbw=abc", "GB/s" },
		{ "warmup_min_busbw=nan", "GB/s" },
		{ "warmup_min_busbw=inf", "GB/s" },
		{ "warmup_min_busbw=0x10", "GB/s" },
		{ "warmup_min_busbw=1e3", "GB/s" },
		{ "warmup_min_busbw=1.2.3", "GB/s" },
		{ "warmup_min_busbw=.", "GB/s" },
		{ "warmup_min_busbw=100001", "GB/s" },
		{ "warmup_bytes=1023", "expected a size from 1K to 16G" },
		{ "warmup_bytes=0K", "1K to 16G" },
		{ "warmup_bytes=17G", "1K to 16G" },
		{ "warmup_bytes=16385M", "1K to 16G" },
		{ "warmup_bytes=64MB", "1K to 16G" },
		{ "warmup_bytes=M", "1K to 16G" },
		{ "warmup_bytes=-1K", "1K to 16G" },
		{ "warmup_teardown=fast", "expected exit" },
		{ "warmup_nccl=lib/libnccl.so.2", "expected an absolute path" },
		{ "warmup_teardown=", "empty value" },
		{ "warmup_reuse=off", "\"warmup_reuse=off\": expected yes or no" },
		{ "warmup_reuse=", "empty value" },
		{ "warmup_reuse_dir=run/spank-nccl", "expected an absolute path" },
		{ "warmup_bytes=99999999999999999999G", "1K to 16G" },
		{ "default_profiles=list", "\"list\" is a user request" },
		{ "default_profiles=a,,b", "plugstack.conf argument \"default_profiles=a,,b\": empty profile name" },
		{ "default_profiles=a b", "invalid profile name \"a b\"" },
		{ "default_profiles=a,a", "given twice" },
		{ "nosuchkey=1", "unknown key \"nosuchkey\": valid keys are profiles, default_profiles, warmup_helper, warmup_timeout, warmup_mode, warmup_policy, warmup_min_busbw, warmup_bytes, warmup_teardown, warmup_reuse, warmup_reuse_dir, warmup_nccl, record_file, record_syslog, prom_dir, fabric_ports, fabric_transport, fabric_min_busbw" },
		{ "=1", "unknown key \"\"" },
		{ "PROFILES=/x", "unknown key \"PROFILES\"" },
		{ "warmup_timeout", "\"warmup_timeout\": expected KEY=VALUE" },
		{ "fabric_ports=80-90", "\"fabric_ports=80-90\": port range \"80-90\" is not PORT or LO-HI with ports 1024-65535, e.g. fabric_ports=29400-29499" },
		{ "fabric_ports=30000-29000", "runs backwards: write LO-HI" },
		{ "fabric_ports=29400-", "not PORT or LO-HI" },
		{ "fabric_ports=29400:29499", "not PORT or LO-HI" },
		{ "fabric_ports=", "empty value" },
		{ "fabric_min_busbw=fast", "\"fabric_min_busbw=fast\": expected a bus bandwidth in GB/s between 0 and 100000" },
		{ "fabric_min_busbw=-1", "GB/s" },
		{ "ras_sample=0", "\"ras_sample=0\": expected whole seconds between 1 and 3600, or off" },
		{ "ras_sample=3601", "between 1 and 3600, or off" },
		{ "ras_sample=1s", "between 1 and 3600, or off" },
		{ "ras_ports=80", "not PORT or LO-HI with ports 1024-65535, e.g. ras_ports=28100-28999" },
		{ "health_busy_mib=x", "e.g. health_busy_mib=1024" },
		{ "fabric_transport=ib", "\"fabric_transport=ib\": expected any (every network NCCL picks passes) or no-socket" },
	};
	struct sn_config cfg, before;
	struct sn_error err;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sn_config_defaults(&cfg);
		before = cfg;
		err.msg[0] = '\0';
		if (parse1(&cfg, cases[i].arg, &err) != -1)
			fail_msg("accepted %s", cases[i].arg);
		assert_contains(err.msg, "plugstack.conf argument \"");
		assert_contains(err.msg, cases[i].expect);
		/* Nothing half-applied. */
		assert_memory_equal(&cfg, &before, sizeof(cfg));
	}
}

static void test_duplicate_and_atomic(void **state)
{
	char *dup[] = { "warmup_timeout=30", "warmup_timeout=40" };
	char *partial[] = { "warmup_timeout=30", "warmup_mode=off",
			    "warmup_bytes=1" };
	struct sn_config cfg, before;
	struct sn_error err = { "" };

	sn_config_defaults(&cfg);
	before = cfg;
	assert_int_equal(sn_config_parse(&cfg, 2, dup, &err), -1);
	assert_contains(err.msg, "\"warmup_timeout=40\": warmup_timeout is given twice: keep one");
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	assert_int_equal(sn_config_parse(&cfg, 3, partial, &err), -1);
	assert_contains(err.msg, "warmup_bytes=1");
	assert_int_equal(cfg.warmup_timeout_s, 60);
	assert_int_equal(cfg.warmup_mode, SN_WARMUP_MODE_COMM);
}

static void test_hostile(void **state)
{
	struct sn_config cfg, before;
	struct sn_error err = { "" };
	static char huge[PATH_MAX + 64];

	sn_config_defaults(&cfg);
	before = cfg;
	memcpy(huge, "profiles=/", 10);
	memset(huge + 10, 'a', sizeof(huge) - 11);
	huge[sizeof(huge) - 1] = '\0';
	assert_int_equal(parse1(&cfg, huge, &err), -1);
	assert_contains(err.msg, "the path is too long");
	assert_true(strlen(err.msg) < SN_ERROR_MAX);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	/* An unknown key far longer than any real one is cut in the message. */
	memset(huge, 'k', 2000);
	strcpy(huge + 2000, "=1");
	assert_int_equal(parse1(&cfg, huge, &err), -1);
	assert_contains(err.msg, "unknown key");
	assert_contains(err.msg, "...");
}

/* The fleet sinks: absolute paths, %n only, yes/no. */
static void test_record_sinks(void **state)
{
	struct sn_config cfg;
	struct sn_error err = { "" };

	(void)state;
	sn_config_defaults(&cfg);
	assert_string_equal(cfg.record_file, "");
	assert_string_equal(cfg.prom_dir, "");
	assert_false(cfg.record_syslog);
	assert_int_equal(parse1(&cfg, "record_file=/var/log/sn/%n.jsonl", &err), 0);
	assert_string_equal(cfg.record_file, "/var/log/sn/%n.jsonl");
	assert_int_equal(parse1(&cfg, "prom_dir=/var/lib/prometheus/node-exporter", &err), 0);
	assert_string_equal(cfg.prom_dir, "/var/lib/prometheus/node-exporter");
	assert_int_equal(parse1(&cfg, "record_syslog=YES", &err), 0);
	assert_true(cfg.record_syslog);
	assert_int_equal(parse1(&cfg, "record_file=log.jsonl", &err), -1);
	assert_contains(err.msg, "\"record_file=log.jsonl\": expected an absolute path");
	assert_int_equal(parse1(&cfg, "prom_dir=/x/%j", &err), -1);
	assert_contains(err.msg, "\"prom_dir=/x/%j\": only %n (the node name) and %% may follow a '%'");
	assert_int_equal(parse1(&cfg, "record_syslog=maybe", &err), -1);
	assert_contains(err.msg, "\"record_syslog=maybe\": expected yes or no");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_sinks),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_good_values),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_duplicate_and_atomic),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
