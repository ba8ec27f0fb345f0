/* SPDX-License-Identifier: MIT */
/*
 * The helper's JSON result (nccl-warmup --json): untrusted output of a
 * program that runs as the job user.
 *
 * Invariants: a rejection says why; an accepted result has bounded,
 * NUL-terminated strings, an exit code 0-255 and at most
 * SN_RESULT_MAX_GPUS GPUs.  Independently, sn_json_escape of the input
 * yields printable ASCII that the parser accepts as a string and, for
 * printable input, reads back unchanged.
 */
#include <stdbool.h>

#include "fuzz_util.h"
#include "protocol/json_write.h"
#include "protocol/warmup_result.h"

#define TERMINATED(field) FUZZ_CHECK(memchr((field), '\0', sizeof(field)))

static void check_result(const struct sn_warmup_result *r)
{
	size_t i;

	FUZZ_CHECK(r->exit_code >= 0 && r->exit_code <= 255);
	FUZZ_CHECK(r->n_gpus <= SN_RESULT_MAX_GPUS);
	TERMINATED(r->status);
	TERMINATED(r->message);
	TERMINATED(r->summary);
	TERMINATED(r->note);
	TERMINATED(r->nccl_version);
	for (i = 0; i < r->n_gpus; i++) {
		TERMINATED(r->gpus[i].busid);
		TERMINATED(r->gpus[i].uuid);
	}
	/* The explanations exist for every code (the plugin prints them). */
	FUZZ_CHECK(sn_warmup_exit_hint(r->exit_code) != NULL);
	FUZZ_CHECK(sn_warmup_exit_name(r->exit_code) != NULL);
}

static void escape_round_trip(const char *text)
{
	static const char head[] =
		"{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"message\":\"";
	char escaped[512];
	char doc[sizeof(head) + sizeof(escaped) + 4];
	struct sn_warmup_result r;
	struct sn_error err = { { 0 } };
	size_t n = sn_json_escape(escaped, sizeof(escaped), text);
	size_t i;

	FUZZ_CHECK(n < sizeof(escaped) && escaped[n] == '\0');
	for (i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)escaped[i] >= 0x20 &&
			   (unsigned char)escaped[i] < 0x7f);
	snprintf(doc, sizeof(doc), "%s%s\"}", head, escaped);
	if (sn_warmup_result_parse(doc, strlen(doc), &r, &err) != 0) {
		fprintf(stderr, "escaped text rejected: %s\n", err.msg);
		abort();
	}
	/* Printable ASCII that fit comes back byte for byte. */
	for (i = 0; text[i]; i++)
		if ((unsigned char)text[i] < 0x20 ||
		    (unsigned char)text[i] >= 0x7f)
			return;
	if (2 * i < sizeof(escaped) && i < sizeof(r.message))
		FUZZ_CHECK(strcmp(r.message, text) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_warmup_result r;
	struct sn_error err = { { 0 } };
	char *text;

	if (size > SN_RESULT_MAX_BYTES + 16)
		return 0;
	text = fuzz_strndup(data, size);
	/* The raw bytes, embedded NULs and all, as read from the pipe. */
	if (sn_warmup_result_parse((const char *)data, size, &r, &err) != 0)
		FUZZ_CHECK(fuzz_error_set(err.msg));
	else
		check_result(&r);
	escape_round_trip(text);
	free(text);
	return 0;
}
