/* SPDX-License-Identifier: MIT */
/*
 * Prints the parser's plugstack keys with their defaults, one
 * "KEY<TAB>DEFAULT" line each, for tests/unit/test_doc_keys.sh, which
 * compares them with every table of keys in the docs.  DEFAULT is written
 * as an admin would write the value ("60", "64M", "29400-29499"), or
 * "none" for a key that is off or empty unless given.  Lines starting
 * with '#' give the configured SYSCONFDIR and LIBEXECDIR, which the docs
 * write as placeholders.
 *
 * Exits 1 (after printing) when the table below and the parser disagree:
 * a key without a line here, a line for a key the parser does not know,
 * VALID_KEYS (its error message) not naming exactly the parser's keys, or
 * a default that does not parse back to the same configuration.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "helper_protocol.h"
#include "options.h"

typedef void (*show_fn)(const struct sn_config *c, char *out, size_t len);

static void show_path(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s", path[0] ? path : "none");
}

static void show_bool(bool v, char *out, size_t len)
{
	snprintf(out, len, "%s", v ? "yes" : "no");
}

static void show_gbps(double v, char *out, size_t len)
{
	snprintf(out, len, "%g", v);
}

static void s_profiles(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->profiles_path, o, n);
}

static void s_default_profiles(const struct sn_config *c, char *o, size_t n)
{
	size_t i, used = 0;

	if (c->default_profiles.count == 0) {
		snprintf(o, n, "none");
		return;
	}
	o[0] = '\0';
	for (i = 0; i < c->default_profiles.count && used < n; i++)
		used += (size_t)snprintf(o + used, n - used, "%s%s",
					 i ? "," : "",
					 c->default_profiles.names[i]);
}

static void s_helper(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->warmup_helper, o, n);
}

static void s_timeout(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%u", c->warmup_timeout_s);
}

static void s_mode(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%s", sn_warmup_mode_name(c->warmup_mode));
}

static void s_policy(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%s", c->warmup_policy == SN_POLICY_WARN ? "warn" : "fail");
}

static void s_min_busbw(const struct sn_config *c, char *o, size_t n)
{
	show_gbps(c->warmup_min_busbw_gbps, o, n);
}

static void s_bytes(const struct sn_config *c, char *o, size_t n)
{
	static const char units[] = "KMG";
	unsigned long v = c->warmup_bytes;
	int u = -1;

	while (u < 2 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(o, n, "%lu", v);
	else
		snprintf(o, n, "%lu%c", v, units[u]);
}

static void s_teardown(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%s", sn_teardown_name(c->warmup_teardown_exit));
}

static void s_reuse(const struct sn_config *c, char *o, size_t n)
{
	show_bool(c->warmup_reuse, o, n);
}

static void s_reuse_dir(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->warmup_reuse_dir, o, n);
}

static void s_nccl(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->warmup_nccl, o, n);
}

static void s_record_file(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->record_file, o, n);
}

static void s_record_syslog(const struct sn_config *c, char *o, size_t n)
{
	show_bool(c->record_syslog, o, n);
}

static void s_prom_dir(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->prom_dir, o, n);
}

static void s_ports(const struct sn_config *c, char *o, size_t n)
{
	if (c->fabric_ports.lo == c->fabric_ports.hi)
		snprintf(o, n, "%u", c->fabric_ports.lo);
	else
		snprintf(o, n, "%u-%u", c->fabric_ports.lo, c->fabric_ports.hi);
}

static void s_transport(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%s", sn_transport_policy_name(c->fabric_refuse_socket));
}

static void s_fabric_busbw(const struct sn_config *c, char *o, size_t n)
{
	show_gbps(c->fabric_min_busbw_gbps, o, n);
}

static void s_munge(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->fabric_munge_socket, o, n);
}

static void s_fabric_auth(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%s", sn_auth_choice_name(c->fabric_auth));
}

static void s_fabric_key(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->fabric_key, o, n);
}

static void s_ras(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%s", sn_ras_policy_name(c->ras));
}

static void s_ras_ports(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%u-%u", c->ras_ports.lo, c->ras_ports.hi);
}

static void s_health(const struct sn_config *c, char *o, size_t n)
{
	struct sn_health_policy def;

	sn_health_policy_defaults(&def);
	if (memcmp(def.level, c->health.level, sizeof(def.level)) == 0)
		snprintf(o, n, "default");
	else
		sn_health_policy_format(&c->health, o, n);
}

static void s_health_busy(const struct sn_config *c, char *o, size_t n)
{
	snprintf(o, n, "%llu", c->health.busy_mib);
}

static void s_confirm_env(const struct sn_config *c, char *o, size_t n)
{
	show_path(c->confirm_env, o, n);
}

static const struct {
	const char *key;
	show_fn show;
} shows[] = {
	{ "profiles", s_profiles },
	{ "default_profiles", s_default_profiles },
	{ "warmup_helper", s_helper },
	{ "warmup_timeout", s_timeout },
	{ "warmup_mode", s_mode },
	{ "warmup_policy", s_policy },
	{ "warmup_min_busbw", s_min_busbw },
	{ "warmup_bytes", s_bytes },
	{ "warmup_teardown", s_teardown },
	{ "warmup_reuse", s_reuse },
	{ "warmup_reuse_dir", s_reuse_dir },
	{ "warmup_nccl", s_nccl },
	{ "record_file", s_record_file },
	{ "record_syslog", s_record_syslog },
	{ "prom_dir", s_prom_dir },
	{ "fabric_ports", s_ports },
	{ "fabric_transport", s_transport },
	{ "fabric_min_busbw", s_fabric_busbw },
	{ "fabric_munge_socket", s_munge },
	{ "fabric_auth", s_fabric_auth },
	{ "fabric_key", s_fabric_key },
	{ "ras", s_ras },
	{ "ras_ports", s_ras_ports },
	{ "health", s_health },
	{ "health_busy_mib", s_health_busy },
	{ "confirm_env", s_confirm_env },
};

#define N_SHOWS (sizeof(shows) / sizeof(shows[0]))

static show_fn find_show(const char *key)
{
	size_t i;

	for (i = 0; i < N_SHOWS; i++)
		if (strcmp(shows[i].key, key) == 0)
			return shows[i].show;
	return NULL;
}

static size_t n_keys(void)
{
	size_t n = 0;

	while (sn_config_key_name(n))
		n++;
	return n;
}

/* "KEY=DEFAULT" parsed over the defaults changes no key's value. */
static int round_trip(const char *key, const char *shown)
{
	struct sn_config def, cfg;
	struct sn_error err = { 0 };
	char arg[PATH_MAX + 64];
	char *argv[1] = { arg };
	char a[PATH_MAX + 64], b[PATH_MAX + 64];
	size_t i;
	int rc = 0;

	sn_config_defaults(&def);
	sn_config_defaults(&cfg);
	snprintf(arg, sizeof(arg), "%s=%s", key, shown);
	if (sn_config_parse(&cfg, 1, argv, &err) < 0) {
		fprintf(stderr, "FAIL: the default of %s, \"%s\", does not parse: %s\n",
			key, shown, err.msg);
		return -1;
	}
	for (i = 0; sn_config_key_name(i); i++) {
		show_fn show = find_show(sn_config_key_name(i));

		show(&def, a, sizeof(a));
		show(&cfg, b, sizeof(b));
		if (strcmp(a, b) != 0) {
			fprintf(stderr, "FAIL: %s changes %s from \"%s\" to \"%s\"\n",
				arg, sn_config_key_name(i), a, b);
			rc = -1;
		}
	}
	return rc;
}

/* VALID_KEYS, as the parser's error message gives it, is the key table. */
static int check_valid_keys(void)
{
	struct sn_config cfg;
	struct sn_error err = { 0 };
	char arg[] = "no-equals-sign";
	char *argv[1] = { arg };
	char want[2048];
	const char *msg, *list;
	size_t i, used = 0;

	for (i = 0; sn_config_key_name(i) && used < sizeof(want); i++)
		used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%s",
					 i ? ", " : "", sn_config_key_name(i));
	sn_config_defaults(&cfg);
	if (sn_config_parse(&cfg, 1, argv, &err) == 0) {
		fprintf(stderr, "FAIL: \"%s\" was accepted\n", arg);
		return -1;
	}
	msg = err.msg;
	list = strstr(msg, "KEY one of ");
	if (!list || strcmp(list + strlen("KEY one of "), want) != 0) {
		fprintf(stderr, "FAIL: VALID_KEYS in src/core/config/config.c differs from its key table:\n"
			"  message: %s\n  table:   %s\n", msg, want);
		return -1;
	}
	return 0;
}

int main(void)
{
	struct sn_config def;
	char shown[PATH_MAX + 64];
	size_t i;
	int rc = 0;

	printf("#SYSCONFDIR\t%s\n#LIBEXECDIR\t%s\n", SYSCONFDIR, LIBEXECDIR);
	sn_config_defaults(&def);
	for (i = 0; i < n_keys(); i++) {
		const char *key = sn_config_key_name(i);
		show_fn show = find_show(key);

		if (!show) {
			fprintf(stderr, "FAIL: plugstack key %s has no line in %s: add one (and document it)\n",
				key, __FILE__);
			rc = 1;
			continue;
		}
		show(&def, shown, sizeof(shown));
		printf("%s\t%s\n", key, shown);
	}
	for (i = 0; i < N_SHOWS; i++) {
		size_t k;

		for (k = 0; sn_config_key_name(k); k++)
			if (strcmp(sn_config_key_name(k), shows[i].key) == 0)
				break;
		if (!sn_config_key_name(k)) {
			fprintf(stderr, "FAIL: %s names %s, which the parser does not know\n",
				__FILE__, shows[i].key);
			rc = 1;
		}
	}
	if (rc)
		return rc;
	for (i = 0; i < n_keys(); i++) {
		const char *key = sn_config_key_name(i);

		find_show(key)(&def, shown, sizeof(shown));
		if (strcmp(shown, "none") != 0 && round_trip(key, shown) < 0)
			rc = 1;
	}
	if (check_valid_keys() < 0)
		rc = 1;
	return rc;
}
