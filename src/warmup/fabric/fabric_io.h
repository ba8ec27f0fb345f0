/* SPDX-License-Identifier: MIT */
/* Internal to the fabric coordination: sockets, lines, the root's side. */
#ifndef WU_FABRIC_IO_H
#define WU_FABRIC_IO_H

#include <sys/socket.h>

#include "fabric_auth.h"
#include "fabric_coord.h"

#define TRY_CONNECT_MS 1000	/* one candidate port, then the next */
#define TRY_REPLY_MS 2000	/* a listener that does not answer HELLO */
/*
 * A connection must say who it is (a sealed HELLO) this soon after the
 * root accepted it, or it is closed: idle strangers cannot hold the root.
 */
#define FIRST_LINE_MS 1000
/* Connections not yet identified; past it the oldest is closed. */
#define PENDING_MAX 1024

enum conn_state { CONN_NONE, CONN_JOINED, CONN_DONE, CONN_LOST };

struct fabric_conn {
	int fd;
	enum conn_state state;
	struct sn_fabric_msg hello;
	struct sn_fabric_msg done;
	unsigned int done_order;	/* arrival order of DONE */
	bool told;			/* the VERDICT was sent to it */
	char rbuf[SN_FABRIC_MSG_MAX];
	size_t rlen;
};

/*
 * The candidate ports of the plan's step as text: "LO-HI" when they are
 * the whole range, else "A-B" (or "A-HI and LO-B" where they wrap).
 */
void fabric_candidates(const struct fabric_plan *p, char *out, size_t len);
/* The longest single poll of the coordination (sn_deadline_poll_ms). */
#define FABRIC_POLL_MAX_MS 60000
/* ADDR (numeric) and PORT into SS; 0 if ADDR is not numeric. */
socklen_t fabric_make_addr(const char *addr, unsigned int port,
			   struct sockaddr_storage *ss);
void fabric_node_name(const struct fabric_plan *p, uint32_t index,
		      char *out, size_t len);
int fabric_send_msg(int fd, struct sn_fabric_msg *m,
		    const struct fabric_plan *p, struct sn_error *err);
/* The numeric address and port of FD's two ends ("ADDR:PORT"). */
int fabric_endpoints(int fd, char *local, char *peer, size_t len);
/* The numeric address of FD's peer (for the log and the address check). */
void fabric_peer_addr(int fd, char *addr, size_t len);
/* M sealed for this connection (fabric_msg.h), as one AUTH line. */
int fabric_send_sealed(int fd, struct sn_fabric_msg *m,
		       const struct fabric_plan *p, struct sn_error *err);
/*
 * The sealed message of AUTH line LINE received on FD into M:
 * FABRIC_UNSEAL_OK only when a process of the job's user sealed it for
 * this very connection; ERR says why not.
 */
enum fabric_unseal fabric_open_sealed(int fd, const char *line,
				      const struct fabric_plan *p,
				      struct sn_fabric_msg *m,
				      struct sn_error *err);
int fabric_take_line(char *buf, size_t *blen, char *line);
int fabric_fill(int fd, char *buf, size_t *blen);
/* Waits for one line on FD: 1 got LINE, 0 timeout, -1 EOF/too long. */
int fabric_recv_line(int fd, char *buf, size_t *blen,
		     struct sn_deadline deadline, char *line,
		     struct sn_error *err);
int fabric_recv_msg(int fd, char *buf, size_t *blen,
		    struct sn_deadline deadline, struct sn_fabric_msg *msg,
		    struct sn_error *err);
/*
 * A connection from ADDR that was not the step's (WHY): counted, and
 * logged to syslog (LOG_AUTHPRIV) once per address for the first
 * FABRIC_LOG_PEERS addresses; never shown to the job as a node's fault.
 */
void fabric_stranger(struct fabric_coord *c, const char *addr,
		     const char *why);
void fabric_set_outcome(struct fabric_outcome *out, uint32_t status,
			uint32_t blame, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The root's side (fabric_root.c). */
int fabric_root_listen(struct fabric_coord *c, struct sn_error *err);
void fabric_root_gather(struct fabric_coord *c, struct sn_deadline deadline);
int fabric_root_decide(struct fabric_coord *c, uint32_t local_status,
		       const char *local_text, const unsigned char *nccl_id,
		       struct fabric_go *go,
		       struct fabric_outcome *out, struct sn_error *err);
struct sn_deadline fabric_root_join_deadline(struct sn_deadline deadline);
void fabric_root_collect(struct fabric_coord *c, struct sn_deadline deadline);
void fabric_root_verdict(struct fabric_coord *c, uint32_t status,
			 const char *text, struct fabric_outcome *out);
/* Reads what member I sent (a DONE, or EOF); true if it failed or died. */
bool fabric_root_read_done(struct fabric_coord *c, uint32_t i);
/* Sends c->verdict to every member not yet told. */
void fabric_root_tell(struct fabric_coord *c);

#endif
