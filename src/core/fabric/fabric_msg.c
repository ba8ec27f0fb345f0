/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fabric_msg.h"
#include "fabric/fabric_addr.h"
#include "protocol/helper_protocol.h"
#include "base/strutil.h"

#define SEAL_TAG SN_FABRIC_MAGIC " SEAL "
#define AUTH_TAG SN_FABRIC_MAGIC " AUTH "

/* Which fields each type carries, in wire order (text always last). */
enum field {
	F_INDEX = 1 << 0, F_NODES = 1 << 1, F_GPUS = 1 << 2,
	F_STATUS = 1 << 3, F_RANK_BASE = 1 << 4, F_NRANKS = 1 << 5,
	F_ID = 1 << 6, F_BLAME = 1 << 7, F_BUSBW = 1 << 8,
	F_NODE = 1 << 9, F_TEXT = 1 << 10,
};

static const struct {
	const char *name;
	unsigned int fields;
} msg_types[] = {
	[SN_FMSG_HELLO] = { "HELLO", F_INDEX | F_NODES | F_GPUS | F_STATUS |
				     F_NODE | F_TEXT },
	[SN_FMSG_WELCOME] = { "WELCOME", 0 },
	[SN_FMSG_REFUSE] = { "REFUSE", F_TEXT },
	[SN_FMSG_GO] = { "GO", F_RANK_BASE | F_NRANKS | F_ID },
	[SN_FMSG_ABORT] = { "ABORT", F_BLAME | F_TEXT },
	[SN_FMSG_DONE] = { "DONE", F_STATUS | F_BUSBW | F_TEXT },
	[SN_FMSG_VERDICT] = { "VERDICT", F_STATUS | F_BLAME | F_TEXT },
};

#define N_TYPES (sizeof(msg_types) / sizeof(msg_types[0]))

/* Numeric fields in wire order, with where each lives. */
static const struct {
	unsigned int bit;
	const char *key;
	size_t offset;
} u32_fields[] = {
	{ F_INDEX, "index", offsetof(struct sn_fabric_msg, index) },
	{ F_NODES, "nodes", offsetof(struct sn_fabric_msg, nodes) },
	{ F_GPUS, "gpus", offsetof(struct sn_fabric_msg, gpus) },
	{ F_STATUS, "status", offsetof(struct sn_fabric_msg, status) },
	{ F_RANK_BASE, "rank_base", offsetof(struct sn_fabric_msg, rank_base) },
	{ F_NRANKS, "nranks", offsetof(struct sn_fabric_msg, nranks) },
	{ F_BLAME, "blame", offsetof(struct sn_fabric_msg, blame) },
};

#define N_U32 (sizeof(u32_fields) / sizeof(u32_fields[0]))

const char *sn_fabric_msg_name(enum sn_fabric_msg_type type)
{
	return (unsigned int)type < N_TYPES ? msg_types[type].name : "?";
}

static uint32_t *u32_at(struct sn_fabric_msg *m, size_t offset)
{
	return (uint32_t *)((char *)m + offset);
}

static bool node_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

static bool text_char(char c)
{
	return c >= 0x20 && c < 0x7f;
}

/* Appends with snprintf semantics; *POS stays past LEN on overflow. */
static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	*pos += n < 0 ? len : (size_t)n;
}

int sn_fabric_msg_encode(const struct sn_fabric_msg *msg, char *buf,
			 size_t len, struct sn_error *err)
{
	unsigned int fields, i;
	size_t pos = 0;
	const char *c;

	if ((unsigned int)msg->type >= N_TYPES) {
		sn_error_set(err, "fabric message type %d is unknown",
			     (int)msg->type);
		return -1;
	}
	if (len > SN_FABRIC_MSG_MAX)
		len = SN_FABRIC_MSG_MAX;
	fields = msg_types[msg->type].fields;
	put(buf, len, &pos, "%s %s job=%u step=%u", SN_FABRIC_MAGIC,
	    msg_types[msg->type].name, msg->jobid, msg->stepid);
	for (i = 0; i < N_U32; i++) {
		uint32_t v;

		if (!(fields & u32_fields[i].bit))
			continue;
		v = *u32_at((struct sn_fabric_msg *)msg, u32_fields[i].offset);
		if (u32_fields[i].bit == F_BLAME && v == SN_FABRIC_NO_BLAME)
			put(buf, len, &pos, " blame=none");
		else
			put(buf, len, &pos, " %s=%u", u32_fields[i].key, v);
	}
	if (fields & F_ID) {
		put(buf, len, &pos, " id=");
		for (i = 0; i < SN_FABRIC_NCCL_ID_BYTES; i++)
			put(buf, len, &pos, "%02x", msg->nccl_id[i]);
	}
	if (fields & F_BUSBW) {
		if (!isfinite(msg->busbw) || msg->busbw < 0 ||
		    msg->busbw > 1e9) {
			sn_error_set(err, "busbw %g is not a bandwidth",
				     msg->busbw);
			return -1;
		}
		put(buf, len, &pos, " busbw=%.3f", msg->busbw);
	}
	if (fields & F_NODE) {
		if (msg->node[0] == '\0')
			goto bad_node;
		for (c = msg->node; *c; c++)
			if (!node_char(*c))
				goto bad_node;
		put(buf, len, &pos, " node=%s", msg->node);
	}
	if (fields & F_TEXT) {
		put(buf, len, &pos, " text=");
		for (c = msg->text; *c && pos + 1 < len; c++)
			buf[pos++] = text_char(*c) ? *c : '?';
		if (*c)
			pos = len;
	}
	put(buf, len, &pos, "\n");
	if (pos >= len) {
		sn_error_set(err, "fabric %s message is longer than %d bytes",
			     msg_types[msg->type].name, SN_FABRIC_MSG_MAX);
		return -1;
	}
	return 0;
bad_node:
	sn_error_set(err, "node name \"%.64s\" is not a Slurm node name",
		     msg->node);
	return -1;
}

/* Reads "KEY=" at *P; advances past it. */
static bool take_key(const char **p, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(*p, key, n) != 0 || (*p)[n] != '=')
		return false;
	*p += n + 1;
	return true;
}

/* A decimal uint32 ending at ' ' or the end of the line. */
static bool take_u32(const char **p, uint32_t *v)
{
	unsigned long long x;
	const char *s = *p, *end;

	/* One spelling per number: no leading zeros. */
	if ((s[0] == '0' && s[1] >= '0' && s[1] <= '9') ||
	    sn_parse_u64_prefix(s, UINT32_MAX, &x, &end) < 0 ||
	    (*end != ' ' && *end != '\0'))
		return false;
	*v = (uint32_t)x;
	*p = end;
	return true;
}

/*
 * What no honest peer sends: a node with more GPUs than any has, a step
 * of more nodes, an index outside the step, ranks that do not fit an
 * int (NCCL's rank type), a status that is no exit code of the helper
 * (exit(256) would be exit 0).
 */
static bool within_bounds(const struct sn_fabric_msg *m)
{
	switch (m->type) {
	case SN_FMSG_HELLO:
		return m->nodes > 0 && m->nodes <= SN_FABRIC_NODES_MAX &&
		       m->index < m->nodes && m->gpus <= SN_FABRIC_GPUS_MAX &&
		       m->status <= SN_WARMUP_EXIT_LAST;
	case SN_FMSG_GO:
		return m->nranks > 0 &&
		       m->nranks <= (uint32_t)SN_FABRIC_NODES_MAX * SN_FABRIC_GPUS_MAX &&
		       m->rank_base < m->nranks;
	case SN_FMSG_DONE:
		return m->status <= SN_WARMUP_EXIT_LAST;
	case SN_FMSG_ABORT:
		return m->blame == SN_FABRIC_NO_BLAME ||
		       m->blame < SN_FABRIC_NODES_MAX;
	case SN_FMSG_VERDICT:
		return m->status <= SN_WARMUP_EXIT_LAST &&
		       (m->blame == SN_FABRIC_NO_BLAME ||
			m->blame < SN_FABRIC_NODES_MAX);
	default:
		return true;
	}
}

static bool take_sep(const char **p)
{
	if (**p != ' ')
		return false;
	(*p)++;
	return true;
}

int sn_fabric_msg_decode(const char *line, struct sn_fabric_msg *msg,
			 struct sn_error *err)
{
	const char *p = line;
	unsigned int t, i, fields;
	size_t n;

	memset(msg, 0, sizeof(*msg));
	msg->blame = SN_FABRIC_NO_BLAME;
	if (strlen(line) >= SN_FABRIC_MSG_MAX ||
	    strncmp(p, SN_FABRIC_MAGIC " ", sizeof(SN_FABRIC_MAGIC)) != 0) {
		sn_error_set(err, "not a spank-nccl fabric message");
		return -1;
	}
	p += sizeof(SN_FABRIC_MAGIC);
	for (t = 0; t < N_TYPES; t++) {
		n = strlen(msg_types[t].name);
		if (strncmp(p, msg_types[t].name, n) == 0 && p[n] == ' ')
			break;
	}
	if (t == N_TYPES)
		goto bad;
	msg->type = (enum sn_fabric_msg_type)t;
	fields = msg_types[t].fields;
	p += n + 1;
	if (!take_key(&p, "job") || !take_u32(&p, &msg->jobid) ||
	    !take_sep(&p) || !take_key(&p, "step") ||
	    !take_u32(&p, &msg->stepid))
		goto bad;
	for (i = 0; i < N_U32; i++) {
		uint32_t *v = u32_at(msg, u32_fields[i].offset);

		if (!(fields & u32_fields[i].bit))
			continue;
		if (!take_sep(&p) || !take_key(&p, u32_fields[i].key))
			goto bad;
		if (u32_fields[i].bit == F_BLAME &&
		    strncmp(p, "none", 4) == 0 && (p[4] == ' ' || !p[4])) {
			p += 4;
			continue;
		}
		if (!take_u32(&p, v) ||
		    (u32_fields[i].bit == F_BLAME && *v == SN_FABRIC_NO_BLAME))
			goto bad;
	}
	if (fields & F_ID) {
		if (!take_sep(&p) || !take_key(&p, "id"))
			goto bad;
		for (i = 0; i < SN_FABRIC_NCCL_ID_BYTES; i++) {
			int hi = sn_hex_digit(p[2 * i], false), lo;

			lo = hi < 0 ? -1 : sn_hex_digit(p[2 * i + 1], false);
			if (lo < 0)
				goto bad;
			msg->nccl_id[i] = (unsigned char)(hi << 4 | lo);
		}
		p += 2 * SN_FABRIC_NCCL_ID_BYTES;
	}
	if (fields & F_BUSBW) {
		char *end;

		if (!take_sep(&p) || !take_key(&p, "busbw") ||
		    *p < '0' || *p > '9')
			goto bad;
		errno = 0;
		msg->busbw = strtod(p, &end);
		if (errno || !isfinite(msg->busbw) || msg->busbw > 1e9 ||
		    (*end != ' ' && *end != '\0'))
			goto bad;
		p = end;
	}
	if (fields & F_NODE) {
		if (!take_sep(&p) || !take_key(&p, "node"))
			goto bad;
		for (n = 0; node_char(p[n]); n++)
			if (n + 1 >= sizeof(msg->node))
				goto bad;
		if (n == 0 || (p[n] != ' ' && p[n] != '\0'))
			goto bad;
		memcpy(msg->node, p, n);
		msg->node[n] = '\0';
		p += n;
	}
	if (fields & F_TEXT) {
		if (!take_sep(&p) || !take_key(&p, "text"))
			goto bad;
		for (n = 0; p[n]; n++)
			if (!text_char(p[n]) || n + 1 >= sizeof(msg->text))
				goto bad;
		memcpy(msg->text, p, n + 1);
		p += n;
	}
	if (*p != '\0' || !within_bounds(msg))
		goto bad;
	return 0;
bad:
	sn_error_set(err, "malformed fabric message \"%.80s\"", line);
	return -1;
}

int sn_fabric_seal_text(const struct sn_fabric_msg *msg, const char *from,
			const char *to, char *buf, size_t len,
			struct sn_error *err)
{
	char line[SN_FABRIC_MSG_MAX];
	int n;

	if (sn_fabric_msg_encode(msg, line, sizeof(line), err) < 0)
		return -1;
	line[strlen(line) - 1] = '\0';
	if (len > SN_FABRIC_PAYLOAD_MAX)
		len = SN_FABRIC_PAYLOAD_MAX;
	n = snprintf(buf, len, SEAL_TAG "%s %s\n%s", from, to, line);
	if (n < 0 || (size_t)n >= len) {
		sn_error_set(err, "sealed %s message is longer than %d bytes",
			     sn_fabric_msg_name(msg->type),
			     SN_FABRIC_PAYLOAD_MAX);
		return -1;
	}
	return 0;
}

int sn_fabric_unseal_text(const void *payload, size_t len, const char *from,
			  const char *to, struct sn_fabric_msg *msg,
			  struct sn_error *err)
{
	char text[SN_FABRIC_PAYLOAD_MAX], head[SN_FABRIC_PAYLOAD_MAX];
	const char *nl;
	int n;

	if (!payload || len == 0 || len >= sizeof(text) ||
	    memchr(payload, '\0', len)) {
		sn_error_set(err, "not a sealed fabric message");
		return -1;
	}
	memcpy(text, payload, len);
	text[len] = '\0';
	nl = strchr(text, '\n');
	n = snprintf(head, sizeof(head), SEAL_TAG "%s %s", from, to);
	if (!nl || n < 0 || (size_t)n != (size_t)(nl - text) ||
	    strncmp(text, head, (size_t)n) != 0) {
		sn_error_set(err, "sealed for another connection (not %s to %s)",
			     from, to);
		return -1;
	}
	if (sn_fabric_msg_decode(nl + 1, msg, err) < 0)
		return -1;
	if (msg->type != SN_FMSG_HELLO && msg->type != SN_FMSG_WELCOME &&
	    msg->type != SN_FMSG_REFUSE) {
		sn_error_set(err, "a sealed %s message", sn_fabric_msg_name(msg->type));
		return -1;
	}
	return 0;
}

/* What a credential's text is made of: "MUNGE:" base64 ":", or the
 * step key's "SNK1:" hex, digits, base64 and ':' (fabric_key.h). */
static bool cred_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=' ||
	       c == ':';
}

static bool cred_ok(const char *cred, size_t n)
{
	size_t i;

	if (n < 8 || n >= SN_FABRIC_CRED_MAX ||
	    (strncmp(cred, "MUNGE:", 6) != 0 && strncmp(cred, "SNK1:", 5) != 0))
		return false;
	for (i = 0; i < n; i++)
		if (!cred_char(cred[i]))
			return false;
	return true;
}

int sn_fabric_auth_line(const char *cred, char *buf, size_t len,
			struct sn_error *err)
{
	int n;

	if (!cred_ok(cred, strlen(cred))) {
		sn_error_set(err, "not a credential");
		return -1;
	}
	n = snprintf(buf, len, AUTH_TAG "%s\n", cred);
	if (n < 0 || (size_t)n >= len) {
		sn_error_set(err, "AUTH line longer than %zu bytes", len);
		return -1;
	}
	return 0;
}

int sn_fabric_auth_cred(const char *line, char *cred, size_t len,
			struct sn_error *err)
{
	size_t n;

	if (strncmp(line, AUTH_TAG, strlen(AUTH_TAG)) != 0) {
		sn_error_set(err, "not an AUTH line");
		return -1;
	}
	line += strlen(AUTH_TAG);
	n = strlen(line);
	if (!cred_ok(line, n) || n >= len) {
		sn_error_set(err, "an AUTH line without a credential");
		return -1;
	}
	memcpy(cred, line, n + 1);
	return 0;
}
