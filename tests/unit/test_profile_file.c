/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiles/profile_file.h"

static const char good_text[] =
	"# site profiles\n"
	"\n"
	"[profile ppo-tree]\n"
	"description = Tree all-reduce for PPO\n"
	"set NCCL_ALGO=Tree\n"
	"  default NCCL_DEBUG = WARN  \n"
	"\tmerge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n"
	"merge PYTORCH_CUDA_ALLOC_CONF max_split_size_mb:128\n"
	"unset NCCL_PROTO\n"
	"force set NCCL_CUMEM_ENABLE=0\n"
	"force merge PYTORCH_ALLOC_CONF expandable_segments:True\n"
	"force unset NCCL_GRAPH_FILE\n"
	"set EMPTY=\n"
	"set WITH_EQ=a=b=c\n"
	"set UTF8=caf\xc3\xa9\tx\n"
	"   # indented comment\n"
	"[profile second]\r\n"
	"set X=1\r\n"
	"[rule vllm-expandable]\n"
	"level = error\n"
	"message = expandable segments break vLLM sleep mode\n"
	"when PYTORCH_CUDA_ALLOC_CONF,PYTORCH_ALLOC_CONF has expandable_segments:True\n"
	"when VLLM_SLEEP , OTHER = 1|true | yes\n"
	"when NCCL_ALGO!=Ring\n"
	"when A set\n"
	"when B,C unset\n"
	"[rule defaults-to-warning]\n"
	"message=hello\n"
	"when X=1\n";

static void test_parse_good(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	const struct sn_profile *p;
	const struct sn_rule *r;

	if (sn_profile_set_parse(&set, good_text, "test.conf", &err) != 0)
		fail_msg("%s", err.msg);
	assert_string_equal(set.path, "test.conf");
	assert_int_equal(set.n_profiles, 2);
	assert_int_equal(set.n_rules, 2);
	p = sn_profile_set_find(&set, "ppo-tree");
	assert_non_null(p);
	assert_int_equal(p->line, 3);
	assert_string_equal(p->description, "Tree all-reduce for PPO");
	assert_int_equal(p->n_ops, 11);
	assert_int_equal(p->ops[0].kind, SN_OP_SET);
	assert_false(p->ops[0].force);
	assert_string_equal(p->ops[0].var, "NCCL_ALGO");
	assert_string_equal(p->ops[0].value, "Tree");
	assert_string_equal(p->ops[0].profile, "ppo-tree");
	assert_int_equal(p->ops[0].line, 5);
	assert_int_equal(p->ops[1].kind, SN_OP_DEFAULT);
	assert_string_equal(p->ops[1].var, "NCCL_DEBUG");
	assert_string_equal(p->ops[1].value, "WARN");
	assert_int_equal(p->ops[2].kind, SN_OP_MERGE);
	assert_string_equal(p->ops[2].var, "PYTORCH_CUDA_ALLOC_CONF");
	assert_string_equal(p->ops[2].value, "expandable_segments:True");
	assert_string_equal(p->ops[3].value, "max_split_size_mb:128");
	assert_int_equal(p->ops[4].kind, SN_OP_UNSET);
	assert_null(p->ops[4].value);
	assert_int_equal(p->ops[5].kind, SN_OP_SET);
	assert_true(p->ops[5].force);
	assert_string_equal(p->ops[5].value, "0");
	assert_int_equal(p->ops[6].kind, SN_OP_MERGE);
	assert_true(p->ops[6].force);
	assert_int_equal(p->ops[7].kind, SN_OP_UNSET);
	assert_true(p->ops[7].force);
	assert_string_equal(p->ops[8].value, "");
	assert_string_equal(p->ops[9].value, "a=b=c");
	assert_string_equal(p->ops[10].value, "caf\xc3\xa9\tx");
	p = sn_profile_set_find(&set, "second");
	assert_non_null(p);
	assert_null(p->description);
	assert_string_equal(p->ops[0].value, "1");
	assert_null(sn_profile_set_find(&set, "missing"));

	r = &set.rules[0];
	assert_string_equal(r->name, "vllm-expandable");
	assert_int_equal(r->level, SN_RULE_ERROR);
	assert_string_equal(r->message, "expandable segments break vLLM sleep mode");
	assert_int_equal(r->n_conds, 5);
	assert_int_equal(r->conds[0].kind, SN_COND_HAS);
	assert_int_equal(r->conds[0].n_vars, 2);
	assert_string_equal(r->conds[0].vars[1], "PYTORCH_ALLOC_CONF");
	assert_int_equal(r->conds[0].n_values, 1);
	assert_string_equal(r->conds[0].values[0], "expandable_segments:True");
	assert_int_equal(r->conds[1].kind, SN_COND_EQ);
	assert_int_equal(r->conds[1].n_vars, 2);
	assert_string_equal(r->conds[1].vars[0], "VLLM_SLEEP");
	assert_string_equal(r->conds[1].vars[1], "OTHER");
	assert_int_equal(r->conds[1].n_values, 3);
	assert_string_equal(r->conds[1].values[0], "1");
	assert_string_equal(r->conds[1].values[1], "true");
	assert_string_equal(r->conds[1].values[2], "yes");
	assert_int_equal(r->conds[2].kind, SN_COND_NE);
	assert_string_equal(r->conds[2].values[0], "Ring");
	assert_int_equal(r->conds[3].kind, SN_COND_SET);
	assert_int_equal(r->conds[3].n_values, 0);
	assert_int_equal(r->conds[4].kind, SN_COND_UNSET);
	assert_int_equal(r->conds[4].n_vars, 2);
	assert_int_equal(set.rules[1].level, SN_RULE_WARNING);
	assert_string_equal(set.rules[1].message, "hello");
	sn_profile_set_free(&set);
	assert_null(set.profiles);
	assert_int_equal(set.n_profiles, 0);
	/* Freeing twice is harmless. */
	sn_profile_set_free(&set);
}

static void test_parse_empty(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };

	assert_int_equal(sn_profile_set_parse(&set, "", "e.conf", &err), 0);
	assert_int_equal(set.n_profiles, 0);
	assert_int_equal(set.n_rules, 0);
	sn_profile_set_free(&set);
	assert_int_equal(sn_profile_set_parse(&set, "# only\n\n   \n", "e.conf",
					      &err), 0);
	sn_profile_set_free(&set);
}

struct bad_case {
	const char *text;
	unsigned int line;
	const char *expect;
};

#define P "[profile p]\n"
#define R "[rule r]\nmessage = m\n"

static const struct bad_case bad_cases[] = {
	/* Outside sections, headers. */
	{ "set X=1\n", 1, "\"set X=1\" is outside any section: start one with [profile NAME] or [rule NAME]" },
	{ "# c\n[profile p\nset X=1\n", 2, "malformed section header \"[profile p\": use [profile NAME] or [rule NAME]" },
	{ "[profile]\n", 1, "malformed section header" },
	{ "[]\n", 1, "malformed section header" },
	{ "[profiles p]\n", 1, "malformed section header" },
	{ "[profile a b]\nset X=1\n", 1, "invalid profile name \"a b\"" },
	{ "[profile -a]\nset X=1\n", 1, "invalid profile name \"-a\"" },
	{ "[rule bad/name]\n", 1, "invalid rule name" },
	{ "[profile list]\nset X=1\n", 1, "\"list\" is reserved (--nccl-profile=list): choose another profile name" },
	{ "[profile none]\nset X=1\n", 1, "\"none\" is reserved" },
	{ P "set X=1\n" P "set Y=1\n", 3, "profile \"p\" is already defined at line 1: rename one" },
	{ R "when X set\n" R "when X set\n", 4, "rule \"r\" is already defined at line 1" },
	/* Profiles. */
	{ P, 1, "profile \"p\" has no settings: add set, default, merge or unset lines" },
	{ P "\n# nothing\n[profile q]\nset X=1\n", 1, "profile \"p\" has no settings" },
	{ P "description = d\n", 1, "has no settings" },
	{ P "frobnicate X=1\n", 2, "unknown directive \"frobnicate\" in [profile p] (valid: description, set, default, merge, unset, force)" },
	{ P "SET X=1\n", 2, "unknown directive \"SET\"" },
	{ P "message = m\n", 2, "unknown directive \"message\" in [profile p]" },
	{ P "=1\n", 2, "unknown directive \"\"" },
	{ P "setX=1\n", 2, "unknown directive \"setX\"" },
	{ P "set=1\n", 2, "missing variable name" },
	{ P "set X\n", 2, "expected \"set VAR=VALUE\"" },
	{ P "default X\n", 2, "expected \"default VAR=VALUE\"" },
	{ P "force set X\n", 2, "expected \"force set VAR=VALUE\"" },
	{ P "set =1\n", 2, "missing variable name" },
	{ P "set 1X=1\n", 2, "invalid variable name \"1X\": use letters, digits and '_', not starting with a digit" },
	{ P "set A-B=1\n", 2, "invalid variable name \"A-B\"" },
	{ P "set A B=1\n", 2, "invalid variable name \"A B\"" },
	{ P "set X=a\rb\n", 2, "value contains a control character" },
	{ P "set X=a\x1b[31m\n", 2, "control character" },
	{ P "set X=a\x7f\n", 2, "control character" },
	{ P "description = a\x01\n", 2, "description contains a control character" },
	{ P "description\n", 2, "expected \"description = TEXT\"" },
	{ P "description =  \n", 2, "empty description" },
	{ P "description = a\ndescription = b\nset X=1\n", 3, "profile \"p\" already has a description" },
	{ P "merge X\n", 2, "expected \"merge VAR KEY:VALUE\"" },
	{ P "merge X=1\n", 2, "invalid variable name \"X=1\"" },
	{ P "merge X nocolon\n", 2, "expected KEY:VALUE, got \"nocolon\"" },
	{ P "merge X :v\n", 2, "expected KEY:VALUE, got \":v\"" },
	{ P "merge X k:\n", 2, "expected KEY:VALUE, got \"k:\"" },
	{ P "merge X k:v,w\n", 2, "\"k:v,w\" is not a single KEY:VALUE" },
	{ P "merge X k,j:v\n", 2, "is not a single KEY:VALUE" },
	{ P "merge X k:v:w\n", 2, "is not a single KEY:VALUE" },
	{ P "merge X k: v\n", 2, "is not a single KEY:VALUE" },
	{ P "unset\n", 2, "missing variable name" },
	{ P "unset \n", 2, "missing variable name" },
	{ P "merge\n", 2, "missing variable name" },
	{ P "unset X Y\n", 2, "expected \"unset VAR\" with one variable per line" },
	{ P "unset X=1\n", 2, "invalid variable name \"X=1\"" },
	{ P "force default X=1\n", 2, "\"force default\" is contradictory: default never overrides the user; use \"force set\"" },
	{ P "force\n", 2, "expected \"force set VAR=VALUE\", \"force merge VAR KEY:VALUE\" or \"force unset VAR\"" },
	{ P "force frob X=1\n", 2, "expected \"force set" },
	{ P "force setX=1\n", 2, "expected \"force set" },
	{ P "set X=1\nset X=2\n", 3, "profile \"p\" already has a line for X (line 2): give one operation per variable" },
	{ P "set X=1\nunset X\n", 3, "already has a line for X (line 2)" },
	{ P "set X=1\nforce set X=1\n", 3, "already has a line for X" },
	{ P "merge X k:1\nset X=2\n", 3, "already has a line for X" },
	{ P "set X=2\nmerge X k:1\n", 3, "already has a line for X" },
	{ P "merge X k:1\nmerge X k:2\n", 3, "profile \"p\" already merges key \"k\" into X (line 2): give each key once" },
	/* Rules. */
	{ "[rule r]\nwhen X set\n", 1, "rule \"r\" has no message: add \"message = TEXT\"" },
	{ "[rule r]\nmessage = m\n", 1, "rule \"r\" has no condition: add at least one \"when\" line" },
	{ R "when X set\n[profile p]\nset X=1\n[rule s]\nmessage = m\n", 6, "rule \"s\" has no condition" },
	{ R "level = fatal\n", 3, "unknown level: use \"level = warning\" or \"level = error\"" },
	{ R "level = Error\n", 3, "unknown level" },
	{ R "level = error\nlevel = warning\n", 4, "rule \"r\" already has a level" },
	{ R "message = again\n", 3, "rule \"r\" already has a message" },
	{ "[rule r]\nmessage\n", 2, "expected \"message = TEXT\"" },
	{ "[rule r]\nmessage =\n", 2, "empty message" },
	{ R "set X=1\n", 3, "unknown directive \"set\" in [rule r] (valid: level, message, when)" },
	{ R "when\n", 3, "expected \"when VAR" },
	{ R "whenever X set\n", 3, "unknown directive \"whenever\"" },
	{ R "when X\n", 3, "expected \"when VAR[,VAR...] = V1[|V2...]\", \"!= V1[|V2...]\", \"has KEY:VALUE\", \"set\" or \"unset\"" },
	{ R "when = 1\n", 3, "expected \"when VAR" },
	{ R "when X ~ 1\n", 3, "expected \"when VAR" },
	{ R "when X is 1\n", 3, "expected \"when VAR" },
	{ R "when X sets\n", 3, "expected \"when VAR" },
	{ R "when X =\n", 3, "missing value after \"=\"" },
	{ R "when X != \n", 3, "missing value after \"!=\"" },
	{ R "when X = a||b\n", 3, "empty value in the list: separate them with a single '|'" },
	{ R "when X = a|\n", 3, "empty value in the list" },
	{ R "when X,,Y = a\n", 3, "empty variable name in the list: separate them with a single ','" },
	{ R "when ,X = a\n", 3, "empty variable name" },
	{ R "when 1X = a\n", 3, "invalid variable name \"1X\"" },
	{ R "when X = a\x02\n", 3, "value contains a control character" },
	{ R "when X has\n", 3, "expected \"has KEY:VALUE\"" },
	{ R "when X has k\n", 3, "expected KEY:VALUE, got \"k\"" },
	{ R "when X has k:v|k:w\n", 3, "is not a single KEY:VALUE" },
	{ R "when X set now\n", 3, "unexpected text after \"set\": write \"when VAR[,VAR...] set\"" },
	{ R "when X unset 1\n", 3, "unexpected text after \"unset\"" },
	{ "[rule r]\nmessage = m\nwhen X set\nmessage = n\n", 4, "already has a message" },
};

static void test_parse_errors(void **state)
{
	struct sn_profile_set set;
	struct sn_error err;
	char where[64];
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		err.msg[0] = '\0';
		memset(&set, 0x5a, sizeof(set));
		if (sn_profile_set_parse(&set, c->text, "/etc/x.conf", &err) != -1)
			fail_msg("case %zu accepted: %s", i, c->text);
		snprintf(where, sizeof(where), "/etc/x.conf:%u: ", c->line);
		if (strncmp(err.msg, where, strlen(where)) != 0)
			fail_msg("case %zu: expected \"%s\" at the start of \"%s\"",
				 i, where, err.msg);
		assert_contains(err.msg, c->expect);
		/* Nothing kept. */
		assert_null(set.path);
		assert_null(set.profiles);
		assert_null(set.rules);
		assert_int_equal(set.n_profiles, 0);
		assert_int_equal(set.n_rules, 0);
	}
}

static void test_long_values(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	size_t head = strlen(P "set X=");
	char *text = malloc(head + SN_VALUE_MAX + 2);

	assert_non_null(text);
	memcpy(text, P "set X=", head);
	/* The longest value that fits. */
	memset(text + head, 'v', SN_VALUE_MAX - 1);
	strcpy(text + head + SN_VALUE_MAX - 1, "\n");
	if (sn_profile_set_parse(&set, text, "l.conf", &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(strlen(set.profiles[0].ops[0].value), SN_VALUE_MAX - 1);
	sn_profile_set_free(&set);
	/* One more byte is refused. */
	memset(text + head, 'v', SN_VALUE_MAX);
	strcpy(text + head + SN_VALUE_MAX, "\n");
	assert_int_equal(sn_profile_set_parse(&set, text, "l.conf", &err), -1);
	assert_contains(err.msg, "l.conf:2: value is too long: at most 4095 bytes");
	free(text);
}

static void test_long_lines(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	size_t n = 200000;
	char *text = malloc(n + 64);

	assert_non_null(text);
	/* A very long variable name. */
	strcpy(text, P "set ");
	memset(text + strlen(text), 'A', n);
	strcpy(text + strlen(P "set ") + n, "=1\n");
	assert_int_equal(sn_profile_set_parse(&set, text, "l.conf", &err), -1);
	assert_contains(err.msg, "l.conf:2: variable name \"AAAA");
	assert_contains(err.msg, "is too long: at most 127 characters");
	assert_true(strlen(err.msg) < 300);
	/* A very long section name. */
	strcpy(text, "[profile ");
	memset(text + 9, 'p', n);
	strcpy(text + 9 + n, "]\n");
	assert_int_equal(sn_profile_set_parse(&set, text, "l.conf", &err), -1);
	assert_contains(err.msg, "l.conf:1: invalid profile name");
	/* A very long unknown directive. */
	strcpy(text, P);
	memset(text + strlen(P), 'z', n);
	text[strlen(P) + n] = '\0';
	assert_int_equal(sn_profile_set_parse(&set, text, "l.conf", &err), -1);
	assert_contains(err.msg, "l.conf:2: unknown directive \"zzz");
	free(text);
}

static void test_many_profiles(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	size_t i, used = 0;
	char *text = malloc(500 * 64);

	assert_non_null(text);
	for (i = 0; i < 500; i++)
		used += (size_t)sprintf(text + used,
					"[profile p%zu]\nset V%zu=%zu\n", i, i, i);
	if (sn_profile_set_parse(&set, text, "m.conf", &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(set.n_profiles, 500);
	assert_string_equal(sn_profile_set_find(&set, "p499")->ops[0].var, "V499");
	/* ops keep a valid pointer to their profile after the array grew. */
	assert_string_equal(set.profiles[0].ops[0].profile, "p0");
	sn_profile_set_free(&set);
	free(text);
}

/* ---- loading from disk ---------------------------------------------- */

static char tmpdir[] = "/tmp/sn-test-profile-XXXXXX";

static int make_tmpdir(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const void *data, size_t len,
		       mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void test_load_ok(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256], link[256];

	tmp_path(path, sizeof(path), "ok.conf");
	write_file(path, good_text, strlen(good_text), 0644);
	if (sn_profile_set_load(&set, path, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(set.n_profiles, 2);
	assert_string_equal(set.path, path);
	sn_profile_set_free(&set);
	/* Symlinks are normal for admin files (/etc/alternatives). */
	tmp_path(link, sizeof(link), "link.conf");
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(sn_profile_set_load(&set, link, &err), 0);
	sn_profile_set_free(&set);
}

static void test_load_errors_name_path(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256], expect[512];

	tmp_path(path, sizeof(path), "bad.conf");
	write_file(path, "[profile p]\nset X=1\nbogus\n", 26, 0600);
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	snprintf(expect, sizeof(expect), "%s:3: unknown directive \"bogus\"", path);
	assert_contains(err.msg, expect);
	assert_null(set.profiles);
}

static void test_load_missing(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256], expect[512];

	tmp_path(path, sizeof(path), "missing.conf");
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	snprintf(expect, sizeof(expect), "%s: cannot open profile file: No such file or directory (set profiles= in plugstack.conf)",
		 path);
	assert_string_equal(err.msg, expect);
	assert_null(set.path);
}

static void test_load_unreadable(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256];
	int rc;

	/* root reads any file: drop to another euid for the check. */
	tmp_path(path, sizeof(path), "unreadable.conf");
	write_file(path, good_text, strlen(good_text), 0000);
	if (geteuid() == 0) {
		assert_int_equal(chmod(tmpdir, 0755), 0);
		assert_int_equal(seteuid(65534), 0);
	}
	rc = sn_profile_set_load(&set, path, &err);
	if (geteuid() != 0 && getuid() == 0)
		assert_int_equal(seteuid(0), 0);
	assert_int_equal(rc, -1);
	assert_contains(err.msg, "cannot open profile file: Permission denied (make it readable by every user: chmod a+r)");
	assert_null(set.path);
}

static void test_load_directory(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };

	assert_int_equal(sn_profile_set_load(&set, tmpdir, &err), -1);
	assert_contains(err.msg, tmpdir);
	assert_contains(err.msg, "is a directory");
	assert_null(set.path);
}

static void test_load_fifo(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256];

	/* Must be refused, not block waiting for a writer. */
	tmp_path(path, sizeof(path), "fifo.conf");
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	assert_contains(err.msg, "is a special file, not a regular file");
}

static void test_load_writable(void **state)
{
	static const mode_t modes[] = { 0664, 0646, 0666, 0620, 0602 };
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256], expect[600];
	size_t i;

	tmp_path(path, sizeof(path), "writable.conf");
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		write_file(path, good_text, strlen(good_text), modes[i]);
		assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
		snprintf(expect, sizeof(expect), "%s: is writable by group/others; run chmod go-w %s",
			 path, path);
		assert_string_equal(err.msg, expect);
	}
	write_file(path, good_text, strlen(good_text), 0400);
	assert_int_equal(sn_profile_set_load(&set, path, &err), 0);
	sn_profile_set_free(&set);
}

static void test_load_foreign_owner(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256];

	/* Only root can give a file away; as a user this path is not testable. */
	if (geteuid() != 0) {
		/* Still check that an own file passes the owner test. */
		tmp_path(path, sizeof(path), "own.conf");
		write_file(path, good_text, strlen(good_text), 0644);
		assert_int_equal(sn_profile_set_load(&set, path, &err), 0);
		sn_profile_set_free(&set);
		return;
	}
	tmp_path(path, sizeof(path), "foreign.conf");
	write_file(path, good_text, strlen(good_text), 0644);
	assert_int_equal(chown(path, 12345, 12345), 0);
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	assert_contains(err.msg, "owned by uid 12345, not root");
	assert_contains(err.msg, "chown root");
}

static void test_load_too_big(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256];
	size_t n = SN_PROFILE_FILE_MAX_BYTES + 1;
	char *big = malloc(n);

	assert_non_null(big);
	memset(big, '\n', n);
	tmp_path(path, sizeof(path), "big.conf");
	write_file(path, big, n, 0644);
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	assert_contains(err.msg, "profile file is larger than 1048576 bytes");
	/* Exactly the limit is fine. */
	write_file(path, big, n - 1, 0644);
	assert_int_equal(sn_profile_set_load(&set, path, &err), 0);
	sn_profile_set_free(&set);
	free(big);
}

static void test_load_nul_byte(void **state)
{
	static const char text[] = "[profile p]\nset X=1\0set Y=2\n";
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256], expect[300];

	tmp_path(path, sizeof(path), "nul.conf");
	write_file(path, text, sizeof(text) - 1, 0644);
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	snprintf(expect, sizeof(expect), "%s:2: NUL byte in the profile file", path);
	assert_contains(err.msg, expect);
	assert_null(set.profiles);
}

static void test_load_non_utf8(void **state)
{
	/* Bytes >= 0x80 are opaque text: accepted in values, never in names. */
	static const char ok[] = "[profile p]\ndescription = \xff\xfe latin1 \xe9\nset X=\xff\x80\n";
	static const char bad[] = "[profile p]\nset X\xe9=1\n";
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char path[256];

	tmp_path(path, sizeof(path), "bytes.conf");
	write_file(path, ok, sizeof(ok) - 1, 0644);
	if (sn_profile_set_load(&set, path, &err) != 0)
		fail_msg("%s", err.msg);
	assert_string_equal(set.profiles[0].ops[0].value, "\xff\x80");
	sn_profile_set_free(&set);
	write_file(path, bad, sizeof(bad) - 1, 0644);
	assert_int_equal(sn_profile_set_load(&set, path, &err), -1);
	assert_contains(err.msg, ":2: invalid variable name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_long_values),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_many_profiles),
		cmocka_unit_test(test_load_ok),
		cmocka_unit_test(test_load_errors_name_path),
		cmocka_unit_test(test_load_missing),
		cmocka_unit_test(test_load_unreadable),
		cmocka_unit_test(test_load_directory),
		cmocka_unit_test(test_load_fifo),
		cmocka_unit_test(test_load_writable),
		cmocka_unit_test(test_load_foreign_owner),
		cmocka_unit_test(test_load_too_big),
		cmocka_unit_test(test_load_nul_byte),
		cmocka_unit_test(test_load_non_utf8),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
