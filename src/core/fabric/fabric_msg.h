/* SPDX-License-Identifier: MIT */
/*
 * The fabric warmup's coordination messages: one line of text each,
 * exchanged between the helper on the step's first node (the root) and
 * the helpers on the other nodes.  NCCL alone cannot say which node is
 * at fault: a rank that never arrives leaves the others waiting in
 * bootstrap until a timeout.  These messages let the root name the node
 * that never joined, failed its own checks, or failed a collective, and
 * carry NCCL's unique id (GO) so that NCCL keeps its random bootstrap
 * magic instead of NCCL_COMM_ID's constant one.
 *
 *   SNFB2 HELLO job=J step=S index=I nodes=N gpus=G status=C node=NAME text=…
 *   SNFB2 WELCOME job=J step=S
 *   SNFB2 REFUSE job=J step=S text=…
 *   SNFB2 GO job=J step=S rank_base=B nranks=R id=HEX(ncclUniqueId)
 *   SNFB2 ABORT job=J step=S blame=I text=…
 *   SNFB2 DONE job=J step=S status=C busbw=X text=…
 *   SNFB2 VERDICT job=J step=S status=C blame=I text=…
 *
 * Keys appear in exactly this order; "text" is last and runs to the end
 * of the line (printable ASCII; anything else is replaced by '?' on
 * encode and refused on decode).  blame is a node index, or "none".
 * Every number is bounded on decode (a node's GPUs, the step's nodes, a
 * known exit code), so no peer can wrap the rank arithmetic or turn a
 * status into another exit code.
 *
 * HELLO, WELCOME and REFUSE never travel as such: each is sealed in a
 * MUNGE credential (src/warmup/fabric/fabric_auth.c) and sent as
 *
 *   SNFB2 AUTH MUNGE:…:      (or SNFB2 AUTH SNK1:…, the step key's: fabric_key.h)
 *
 * whose payload (sn_fabric_seal_text) binds the message to the TCP
 * connection it travels on: "SNFB2 SEAL FROM TO\n" + the message line,
 * FROM and TO the sender's and the receiver's ADDR:PORT.  A credential
 * replayed on, or relayed to, another connection names other endpoints
 * and is refused.  GO, ABORT, DONE and VERDICT follow on the connection
 * the sealed HELLO/WELCOME authenticated in both directions.
 */
#ifndef SN_FABRIC_MSG_H
#define SN_FABRIC_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "fabric/hostlist.h"

#define SN_FABRIC_MAGIC "SNFB2"
/* One line, newline included: an AUTH line carries a MUNGE credential. */
#define SN_FABRIC_MSG_MAX 2048
#define SN_FABRIC_CRED_MAX 1800		/* the credential's text, NUL included */
#define SN_FABRIC_PAYLOAD_MAX 1024	/* a sealed payload, NUL included */
/* NCCL_UNIQUE_ID_BYTES in nccl.h (128 since NCCL 2.0); core has no nccl.h. */
#define SN_FABRIC_NCCL_ID_BYTES 128
/* Upper bounds of what a peer may claim: far above real hardware. */
#define SN_FABRIC_GPUS_MAX 1024		/* GPUs (or MIG instances) of a node */
#define SN_FABRIC_NODES_MAX 65536	/* nodes of a step */
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
	unsigned char nccl_id[SN_FABRIC_NCCL_ID_BYTES];	/* GO: ncclUniqueId */
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

/*
 * The payload to seal for MSG sent from endpoint FROM to endpoint TO
 * ("ADDR:PORT", sn_fabric_endpoint in fabric_addr.h): into BUF (SN_FABRIC_PAYLOAD_MAX).
 */
int sn_fabric_seal_text(const struct sn_fabric_msg *msg, const char *from,
			const char *to, char *buf, size_t len,
			struct sn_error *err);
/*
 * The message sealed in PAYLOAD (LEN bytes, from a credential: not
 * NUL-terminated, may hold anything), which must have been sent from
 * FROM to TO as this side of the connection sees them.  -1 (ERR set) on
 * anything else.
 */
int sn_fabric_unseal_text(const void *payload, size_t len, const char *from,
			  const char *to, struct sn_fabric_msg *msg,
			  struct sn_error *err);
/* "SNFB2 AUTH CRED\n" into BUF; CRED must be a credential's text. */
int sn_fabric_auth_line(const char *cred, char *buf, size_t len,
			struct sn_error *err);
/* The credential of an AUTH LINE (without its '\n') into CRED. */
int sn_fabric_auth_cred(const char *line, char *cred, size_t len,
			struct sn_error *err);

#endif
