/* SPDX-License-Identifier: MIT */
/*
 * The option values' words (src/core/config/options.c's table, which srun --help
 * is written from) against the documents that list them: spank-nccl(8)
 * SYNOPSIS and OPTIONS and the user guide.
 * A word added to the parser and not to the docs, or the reverse, fails
 * here (issue 25: the man page's SYNOPSIS had nccl= but not fresh, its
 * OPTIONS the reverse, the user guide no nccl=).
 */
#include <stdlib.h>

#include "core_testutil.h"

#include "config/options.h"

/* A copy of the text from START up to END (exclusive) or the end. */
static char *section(const char *text, const char *start, const char *end)
{
	const char *s = strstr(text, start), *e;
	char *copy;

	if (!s)
		fail_msg("no \"%s\" in the document", start);
	e = strstr(s + strlen(start), end);
	copy = strndup(s, e ? (size_t)(e - s) : strlen(s));
	assert_non_null(copy);
	return copy;
}

/* Appends S without troff's escapes: fonts dropped, \- as -. */
static void unescape(char **out, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n && s[i + 1] == 'f') {
			i += i + 2 < n && s[i + 2] == '(' ? 4 : 2;
			continue;
		}
		if (s[i] == '\\' && i + 1 < n && (s[i + 1] == '-' ||
						  s[i + 1] == '&')) {
			if (s[i + 1] == '-')
				*(*out)++ = '-';
			i++;
			continue;
		}
		if (s[i] != '"')
			*(*out)++ = s[i];
	}
}

/*
 * The man page TEXT as a reader sees it, line by line: ".B x" is x, the
 * alternating-font macros (.BR, .BI, .RB, ...) join their arguments,
 * other requests are empty lines.
 */
static char *man_plain(const char *text)
{
	char *plain = malloc(strlen(text) + 2), *out = plain;
	char joined[1024];
	const char *line, *eol, *arg;
	bool quoted;
	size_t n;

	assert_non_null(plain);
	for (line = text; *line; line = *eol ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		if (line[0] != '.') {
			unescape(&out, line, (size_t)(eol - line));
		} else if (strncmp(line, ".B ", 3) == 0 ||
			   strncmp(line, ".I ", 3) == 0) {
			unescape(&out, line + 3, (size_t)(eol - line - 3));
		} else if (strchr("BIR", line[1]) && line[1] &&
			   strchr("BIR", line[2]) && line[2] && line[3] == ' ') {
			/* Arguments run together; "quoted" ones keep spaces. */
			quoted = false;
			n = 0;
			for (arg = line + 4; arg < eol && n < sizeof(joined);
			     arg++) {
				if (*arg == '"')
					quoted = !quoted;
				else if (*arg != ' ' || quoted)
					joined[n++] = *arg;
			}
			unescape(&out, joined, n);
		}
		*out++ = '\n';
	}
	*out = '\0';
	return plain;
}

/* "--nccl-warmup[=MODE[,verbose][,fresh][,nccl=PATH]]" */
static void warmup_synopsis(char *buf, size_t len, const char *before,
			    const char *after)
{
	char value[128];

	assert_int_equal(sn_warmup_value_synopsis(value, sizeof(value)), 0);
	snprintf(buf, len, "%s%s%s", before, value, after);
}

static void test_man_page(void **state)
{
	const struct sn_option_word *w;
	char *text = slurp(SN_SRCDIR "/man/spank-nccl.8.in");
	char *raw, *syn, *opts, *modes, *line;
	char want[256];
	size_t i, n, listed = 0;

	raw = section(text, "\n.SH SYNOPSIS", "\n.SH ");
	syn = man_plain(raw);
	free(raw);
	raw = section(text, "\n.SH OPTIONS", "\n.SH ");
	opts = man_plain(raw);
	/* The modes: the .TP list after "MODE is one of:", up to its .RE. */
	modes = section(raw, "is one of:", "\n.RE");
	free(raw);

	warmup_synopsis(want, sizeof(want), "[--nccl-warmup[=", "]]");
	assert_contains(syn, want);
	warmup_synopsis(want, sizeof(want), "\n--nccl-warmup[=", "]\n");
	assert_contains(opts, want);
	w = sn_warmup_words(&n);
	for (i = 0; i < n; i++) {
		if (w[i].kind == SN_WORD_MODE) {
			snprintf(want, sizeof(want), "\n.B %s\n", w[i].word);
			assert_contains(modes, want);
		} else {
			snprintf(want, sizeof(want), "\n,%s%s\n", w[i].word,
				 w[i].arg ? w[i].arg : "");
			assert_contains(opts, want);
		}
	}
	for (line = strstr(modes, "\n.TP"); line;
	     line = strstr(line + 1, "\n.TP"))
		listed++;
	for (i = 0; i < n; i++)
		listed -= w[i].kind == SN_WORD_MODE;
	assert_int_equal(listed, 0);	/* no mode the parser lacks */

	w = sn_profile_words(&n);
	assert_contains(syn, "[--nccl-profile=NAME[,NAME...]");
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "|%s", w[i].word);
		assert_contains(syn, want);
		snprintf(want, sizeof(want), "\n--nccl-profile=%s\n", w[i].word);
		assert_contains(opts, want);
	}
	free(modes);
	free(opts);
	free(syn);
	free(text);
}

static void test_user_guide(void **state)
{
	const struct sn_option_word *w;
	char *text = slurp(SN_SRCDIR "/docs/user-guide.md");
	char *table, *row;
	char want[256];
	size_t i, n, rows = 0;

	warmup_synopsis(want, sizeof(want), "`--nccl-warmup[=", "]`");
	assert_contains(text, want);
	warmup_synopsis(want, sizeof(want), "| `" SN_ENV_WARMUP "=", "` |");
	assert_contains(text, want);
	/* The mode table of "## Warmup": one row a mode, no other. */
	table = section(text, "\n| Mode |", "\n\n");
	w = sn_warmup_words(&n);
	for (i = 0; i < n; i++) {
		if (w[i].kind != SN_WORD_MODE)
			continue;
		snprintf(want, sizeof(want), "\n| `%s` |", w[i].word);
		assert_contains(table, want);
		rows++;
	}
	for (row = strstr(table, "\n| `"); row; row = strstr(row + 1, "\n| `"))
		rows--;
	assert_int_equal(rows, 0);
	free(table);

	w = sn_profile_words(&n);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "--nccl-profile=%s", w[i].word);
		assert_contains(text, want);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_man_page),
		cmocka_unit_test(test_user_guide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
