/* SPDX-License-Identifier: MIT */
/*
 * sn-config-doc: fills the templates of spank-nccl(8) and
 * plugstack.conf.example with the plugstack.conf keys of config.c's table,
 * at build time.  A build tool, never installed.
 *
 *   sn-config-doc man|example TEMPLATE  TEMPLATE on stdout, its "@KEYS@"
 *                                       line replaced by the key list
 *   sn-config-doc keys                  the key names, one a line
 *
 * Every mode first checks that each key's default parses: exit 1 if not,
 * which fails the build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/textbuf.h"

#define MARK "@KEYS@"
#define EXAMPLE_COL 29		/* where the example's help starts */
#define EXAMPLE_WIDTH 78
#define FILE_MAX (256 * 1024)	/* the man page is 40 KiB */

static char list_buf[FILE_MAX], file_buf[FILE_MAX];

/* Roff of TEXT: `literal` bold with its minus signs escaped, a sentence
 * a line. */
static void man_text(struct sn_text *t, const char *s)
{
	bool lit = false;
	char prev = '\0';

	for (; *s; prev = *s++) {
		if (*s == '`') {
			sn_text_add(t, "%s", lit ? "\\fR" : "\\fB");
			lit = !lit;
		} else if (*s == '\\') {
			sn_text_add(t, "\\e");
		} else if (*s == '-' && (lit || s[1] == '-' || prev == '-')) {
			sn_text_add(t, "\\-");
		} else if (*s == ' ' && prev == '.' && !lit && s[1] != '.' &&
			   s[1] != '\'') {
			/* a sentence a line; no line starts a request */
			sn_text_add(t, "\n");
		} else {
			sn_text_add(t, "%c", *s);
		}
	}
}

static void man_default(struct sn_text *t, const char *def)
{
	static const char *const dirs[] = { "SYSCONFDIR", "LIBEXECDIR" };
	size_t i;

	if (!def) {
		sn_text_add(t, "Default: none.\n");
		return;
	}
	for (i = 0; i < 2; i++)
		if (strncmp(def, dirs[i], strlen(dirs[i])) == 0) {
			sn_text_add(t, "Default: \\fI%s\\fR", dirs[i]);
			def += strlen(dirs[i]);
			break;
		}
	sn_text_add(t, "%s", i < 2 ? "" : "Default: \\fB");
	man_text(t, def);
	sn_text_add(t, "%s", i < 2 ? ".\n" : "\\fR.\n");
}

static void man(struct sn_text *t, const struct sn_config_key *k)
{
	const char *v;
	bool metavar = true;

	for (v = k->value; *v; v++)
		metavar = metavar && !(*v >= 'a' && *v <= 'z');
	sn_text_add(t, ".TP\n");
	if (metavar) {
		sn_text_add(t, ".BI %s= ", k->name);
		man_text(t, k->value);
	} else {
		sn_text_add(t, ".B \"%s=", k->name);
		man_text(t, k->value);
		sn_text_add(t, "\"");
	}
	sn_text_add(t, "\n");
	man_text(t, k->help);
	sn_text_add(t, "\n");
	man_default(t, k->def);
}

/* TEXT without backquotes, wrapped from EXAMPLE_COL, after COL. */
static void example_words(struct sn_text *t, const char *s, size_t col)
{
	char word[256];

	while (*s) {
		size_t n = strcspn(s, " "), w = 0, i;

		for (i = 0; i < n && w < sizeof(word) - 1; i++)
			if (s[i] != '`')
				word[w++] = s[i];
		word[w] = '\0';
		if (col > EXAMPLE_COL && col + 1 + w > EXAMPLE_WIDTH) {
			sn_text_add(t, "\n#%*s", EXAMPLE_COL - 1, "");
			col = EXAMPLE_COL;
		}
		sn_text_add(t, "%s%s", col > EXAMPLE_COL ? " " : "", word);
		col += (col > EXAMPLE_COL) + w;
		s += n;
		s += strspn(s, " ");
	}
}

static void example(struct sn_text *t, const struct sn_config_key *k)
{
	char def[512];
	int head = snprintf(NULL, 0, "#   %s=%s", k->name, k->value);

	sn_text_add(t, "#   %s=%s", k->name, k->value);
	if (head >= EXAMPLE_COL - 1)
		sn_text_add(t, "\n#%*s", EXAMPLE_COL - 1, "");
	else
		sn_text_add(t, "%*s", EXAMPLE_COL - head, "");
	example_words(t, k->help, EXAMPLE_COL);
	snprintf(def, sizeof(def), "default: %s", k->def ? k->def : "none");
	sn_text_add(t, "\n#%*s%s\n", EXAMPLE_COL - 1, "", def);
}

static void name(struct sn_text *t, const struct sn_config_key *k)
{
	sn_text_add(t, "%s\n", k->name);
}

/* The list KIND ("man", "example" or "keys"); -1 for another word. */
static int list(struct sn_text *t, const char *kind)
{
	void (*entry)(struct sn_text *, const struct sn_config_key *);
	const struct sn_config_key *keys;
	size_t n, i;

	if (strcmp(kind, "man") == 0)
		entry = man;
	else if (strcmp(kind, "example") == 0)
		entry = example;
	else if (strcmp(kind, "keys") == 0)
		entry = name;
	else
		return -1;
	keys = sn_config_keys(&n);
	for (i = 0; i < n; i++)
		entry(t, &keys[i]);
	return t->full ? -1 : 0;
}

/* Each default, as "KEY=DEFAULT", parses over the defaults. */
static int defaults_parse(void)
{
	const struct sn_config_key *keys;
	struct sn_config cfg;
	struct sn_error err;
	char arg[4200];
	char *argv[1] = { arg };
	size_t n, i;
	int rc = 0;

	keys = sn_config_keys(&n);
	for (i = 0; i < n; i++) {
		if (!keys[i].def || strncmp(keys[i].def, "SYSCONFDIR/", 11) == 0 ||
		    strncmp(keys[i].def, "LIBEXECDIR/", 11) == 0)
			continue;
		sn_config_defaults(&cfg);
		snprintf(arg, sizeof(arg), "%s=%s", keys[i].name, keys[i].def);
		if (sn_config_parse(&cfg, 1, argv, &err) < 0) {
			fprintf(stderr, "spank-nccl: config.c: the default of %s does not parse: %s\n",
				keys[i].name, err.msg);
			rc = -1;
		}
	}
	return rc;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(file_buf, 1, sizeof(file_buf) - 1, f);
	fclose(f);
	if (n == sizeof(file_buf) - 1)
		return NULL;
	file_buf[n] = '\0';
	return file_buf;
}

/* PATH's text on stdout with its MARK line replaced by LIST. */
static int fill(const char *path, const char *text, const char *list)
{
	const char *mark = strstr(text, MARK);
	const char *begin, *end;

	if (!mark || strstr(mark + 1, MARK)) {
		fprintf(stderr, "spank-nccl: %s: expected one \"%s\" line\n",
			path, MARK);
		return -1;
	}
	for (begin = mark; begin > text && begin[-1] != '\n'; begin--)
		;
	end = strchr(mark, '\n');
	end = end ? end + 1 : mark + strlen(mark);
	if (printf("%.*s%s%s", (int)(begin - text), text, list, end) < 0 ||
	    fflush(stdout) != 0) {
		perror("spank-nccl: stdout");
		return -1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	const char *kind = argc > 1 ? argv[1] : "";
	struct sn_text t = { list_buf, sizeof(list_buf), 0, false };
	char *text;

	if (argc != 2 + (strcmp(kind, "keys") != 0) || list(&t, kind) < 0) {
		fprintf(stderr, "spank-nccl: usage: sn-config-doc man|example TEMPLATE, or sn-config-doc keys\n");
		return 2;
	}
	if (defaults_parse() < 0)
		return 1;
	if (argc == 2) {
		fputs(t.buf, stdout);
		return 0;
	}
	text = slurp(argv[2]);
	if (!text) {
		fprintf(stderr, "spank-nccl: %s: cannot read it (or over %d KiB)\n",
			argv[2], FILE_MAX / 1024);
		return 1;
	}
	return fill(argv[2], text, t.buf) < 0;
}
