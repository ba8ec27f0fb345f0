/* SPDX-License-Identifier: MIT */
/*
 * Fleet records read back by spank-nccl-report (record_read.c, json.c)
 * and the .prom file read back under the lock (prom.c): files an admin
 * may hand over from anywhere.
 *
 * Invariants: a rejection says why; an accepted record has a node, a
 * finite time and a known class.  Any accepted .prom state renders to
 * lines that are all ours.  Independently, a record written with the
 * input as its message and NCCL version is one line that the reader
 * accepts, giving the same text back (ASCII printable input).
 */
#include <math.h>
#include <stdbool.h>

#include "fuzz_util.h"
#include "fleet/prom.h"
#include "fleet/record.h"
#include "fleet/record_read.h"

static struct sn_json doc;
static struct sn_record_view view;
static char out[SN_RECORD_MAX_BYTES];
static char prom[65536];

static void check_prom(const char *text, size_t len)
{
	static struct sn_prom_state st;
	struct sn_error err = { { 0 } };
	struct sn_record r = { .source = "spank", .node = "n1", .pass = true };
	size_t n;

	if (sn_prom_state_parse(text, len, &st, &err) != 0) {
		FUZZ_CHECK(fuzz_error_set(err.msg));
		return;
	}
	FUZZ_CHECK(st.n <= SN_PROM_MAX_SAMPLES);
	for (size_t i = 0; i < st.n; i++)
		FUZZ_CHECK(st.s[i].v >= 0 && isfinite(st.s[i].v) &&
			   !strchr(st.s[i].key, '\n'));
	/* Adding a record keeps within the table or says it cannot. */
	if (sn_prom_state_add(&st, &r) < 0)
		return;
	n = sn_prom_render(&st, &r, prom, sizeof(prom));
	FUZZ_CHECK(n > 0);
	for (char *l = prom; l < prom + n;) {
		char *nl = memchr(l, '\n', (size_t)(prom + n - l));

		FUZZ_CHECK(nl);
		FUZZ_CHECK(strncmp(l, "# ", 2) == 0 ||
			   strncmp(l, "spank_nccl_warmup_", 18) == 0);
		l = nl + 1;
	}
}

static void write_and_read(const char *text)
{
	static struct sn_warmup_result res;
	struct sn_record r = { .source = "spank", .node = "n1", .job = 1,
			       .class = SN_CLASS_NCCL_ERROR, .exit_code = 5 };
	struct sn_error err = { { 0 } };
	size_t n;
	bool printable = true;

	memset(&res, 0, sizeof(res));
	snprintf(res.nccl_version, sizeof(res.nccl_version), "%s", text);
	snprintf(r.message, sizeof(r.message), "%s", text);
	r.result = &res;
	n = sn_record_format(&r, out, sizeof(out));
	FUZZ_CHECK(n > 0 && out[n - 1] == '\n');
	FUZZ_CHECK(memchr(out, '\n', n) == out + n - 1);
	if (sn_record_read(out, n, &doc, &view, &err) != 0) {
		fprintf(stderr, "own record rejected: %s\n", err.msg);
		abort();
	}
	for (const char *p = r.message; *p; p++)
		printable &= (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f;
	if (printable)
		FUZZ_CHECK(strcmp(view.message, r.message) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_error err = { { 0 } };
	char *text;

	if (size > SN_RECORD_MAX_BYTES)
		return 0;
	if (sn_record_read((const char *)data, size, &doc, &view, &err) != 0) {
		FUZZ_CHECK(fuzz_error_set(err.msg));
	} else {
		FUZZ_CHECK(view.node[0] && isfinite(view.ts));
		FUZZ_CHECK(memchr(view.message, '\0', sizeof(view.message)));
	}
	check_prom((const char *)data, size);
	text = fuzz_strndup(data, size);
	write_and_read(text);
	free(text);
	return 0;
}
