/* SPDX-License-Identifier: MIT */
/*
 * The fabric warmup's coordination messages: one line of text each,
 * exchanged between the helper on the step's first node (the root) and
 * the helpers on the other nodes, beside NCCL's own bootstrap.  NCCL
 * alone cannot say which node is at fault: a rank that never arrives
 * leaves the others waiting in bootstrap until a timeout.  These messages
 * let the root name the node that never joined, failed its own checks,
 * or failed a collective.
 *
 *   SNFB1 HELLO job=J step=S index=I nodes=N gpus=G status=C node=NAME text=…
 *   SNFB1 WELCOME job=J step=S
 *   SNFB1 REFUSE job=J step=S text=…
 *   SNFB1 GO job=J step=S rank_base=B nranks=R port=P
 *   SNFB1 ABORT job=J step=S blame=I text=…
 *   SNFB1 DONE job=J step=S status=C busbw=X text=…
 *   SNFB1 VERDICT job=J step=S status=C blame=I text=…
 *
 * Keys appear in exactly this order; "text" is last and runs to the end
 * of the line (printable ASCII; anything else is replaced by '?' on
 * encode and refused on decode).  blame is a node index, or "none".
 */
#ifndef SN_FABRIC_MSG_H
#define SN_FABRIC_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "hostlist.h"

#define SN_FABRIC_MAGIC "SNFB1"
#define SN_FABRIC_MSG_MAX 512		/* bytes, newline included */
#define SN_FABRIC_TEXT_MAX 320		/* bytes, NUL included */
#define SN_FABRIC_NO_BLAME UINT32_MAX

enum sn_fabric_msg_type {
	SN_FMSG_HELLO,
	SN_FMSG_WELCOME,
	SN_FMSG_REFUSE,
	SN_FMSG_GO,
	SN_FMSG_ABORT,
	SN_FMSG_DONE,
	SN_FMSG_VERDICT,
};

struct sn_fabric_msg {
	enum sn_fabric_msg_type type;
	uint32_t jobid;
	uint32_t stepid;
	uint32_t index;		/* HELLO: the sender's node index */
	uint32_t nodes;		/* HELLO: nodes in the step */
	uint32_t gpus;		/* HELLO: the sender's GPUs */
	uint32_t status;	/* HELLO, DONE, VERDICT: 0 ok, else exit code */
	uint32_t rank_base;	/* GO: the receiver's first NCCL rank */
	uint32_t nranks;	/* GO: ranks in the step's communicator */
	uint32_t port;		/* GO: NCCL bootstrap port */
	uint32_t blame;		/* ABORT, VERDICT: node at fault */
	double busbw;		/* DONE: GB/s, 0 when not measured */
	char node[SN_HOSTNAME_MAX];	/* HELLO */
	char text[SN_FABRIC_TEXT_MAX];	/* REFUSE, ABORT, DONE, VERDICT */
};

const char *sn_fabric_msg_name(enum sn_fabric_msg_type type);
/* One line, '\n'-terminated, into BUF; -1 (ERR set) if it does not fit. */
int sn_fabric_msg_encode(const struct sn_fabric_msg *msg, char *buf,
			 size_t len, struct sn_error *err);
/* LINE without its '\n'.  Strict: -1 (ERR set) on anything unexpected. */
int sn_fabric_msg_decode(const char *line, struct sn_fabric_msg *msg,
			 struct sn_error *err);

#endif
