/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's ncclGetUniqueId without NCCL_COMM_ID, as NCCL's
 * (src/bootstrap.cc, bootstrapGetUniqueId -> bootstrapCreateRoot): the
 * calling process opens a listening TCP socket on the bootstrap interface
 * and an ephemeral port, and the id is NCCL's
 *   struct ncclBootstrapHandle {
 *           uint64_t magic; union ncclSocketAddress addr; };
 * (src/include/bootstrap.h): a random magic, then the sockaddr_in or
 * sockaddr_in6 of that socket; the other 92 bytes stay zero.  The process
 * keeps the socket (NCCL: its bootstrap root thread); in the fake it
 * becomes the hub's listen socket (fake_nccl_net.c) when this process's
 * rank 0 of that id initialises, so the process that created the id must
 * hold rank 0 (with NCCL the root thread serves whichever process holds
 * it; the fake's rank 0 then fails its init, where NCCL would wait).
 *
 * The bootstrap interface, as NCCL's ncclFindInterfaces (src/misc/
 * socket.cc): NCCL_SOCKET_IFNAME (a comma list of name prefixes; a
 * leading '^' excludes them, then '=' makes them exact names), else the
 * first of "ib*", anything but "docker*,lo*,virbr*", "docker*", "lo*",
 * "virbr*" that has an address; IPv4 or IPv6 (not ::1), forced by
 * NCCL_SOCKET_FAMILY=AF_INET/AF_INET6.  The fake also wants the
 * interface up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_nccl.h"

#define MAX_IFS 16		/* NCCL_SOCKET_IFNAME items looked at */
#define MAX_ROOTS 256		/* ids of this process not yet used */

/* NCCL's union ncclSocketAddress and struct ncclBootstrapHandle. */
union uid_addr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

struct uid_handle {
	uint64_t magic;
	union uid_addr addr;
};

_Static_assert(sizeof(struct uid_handle) <= NCCL_UNIQUE_ID_BYTES,
	       "the bootstrap handle fits in ncclUniqueId");
_Static_assert(offsetof(struct uid_handle, addr) == 8,
	       "the address follows the 8-byte magic, as in NCCL");

/* The bootstrap roots this process opened: id's handle -> listening fd. */
static struct {
	pthread_mutex_t mu;
	int n;
	struct {
		struct uid_handle h;
		int fd;
	} root[MAX_ROOTS];
} roots = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* The handle in ID, if it names an address (family and port set). */
static bool uid_handle(const ncclUniqueId *id, struct uid_handle *h)
{
	memcpy(h, id->internal, sizeof(*h));
	if (h->addr.sa.sa_family == AF_INET)
		return h->addr.sin.sin_port != 0;
	if (h->addr.sa.sa_family == AF_INET6)
		return h->addr.sin6.sin6_port != 0;
	return false;
}

unsigned long long fake_uid_clique(const ncclUniqueId *id)
{
	unsigned long long h = 1469598103934665603ULL;	/* FNV-1a */
	struct uid_handle hd;

	if (!uid_handle(id, &hd)) {
		/* NCCL_COMM_ID's ids (COMM_ID_BIT) and ids of no address:
		 * the first 8 bytes, as the fake has always taken them. */
		memcpy(&h, id->internal, sizeof(h));
		return h & COMM_ID_BIT ? h : h & ~UID_ADDR_BIT;
	}
	for (size_t i = 0; i < sizeof(hd); i++)
		h = (h ^ (unsigned char)id->internal[i]) * 1099511628211ULL;
	return (h & ~(COMM_ID_BIT | UID_ADDR_BIT)) | UID_ADDR_BIT;
}

/* "ip<port>", as NCCL's ncclSocketToString writes an address. */
static void addr_string(const union uid_addr *a, char *out, size_t len)
{
	char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "0";
	socklen_t sl = a->sa.sa_family == AF_INET ? sizeof(a->sin) :
						    sizeof(a->sin6);

	getnameinfo(&a->sa, sl, host, sizeof(host), port, sizeof(port),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(out, len, "%s<%s>", host, port);
}

/* NCCL_SOCKET_IFNAME's syntax (NCCL: parseStringList, matchIfList). */
struct if_list {
	bool exclude, exact;
	int n;
	char name[MAX_IFS][IF_NAMESIZE + 1];
};

static void if_list_parse(const char *spec, struct if_list *l)
{
	memset(l, 0, sizeof(*l));
	if (*spec == '^') {
		l->exclude = true;
		spec++;
	}
	if (*spec == '=') {
		l->exact = true;
		spec++;
	}
	while (*spec && l->n < MAX_IFS) {
		size_t item = strcspn(spec, ",");
		/* "name:port": the port is for addresses, not interfaces */
		size_t name = strcspn(spec, ":,");

		if (name > 0 && name <= IF_NAMESIZE)
			snprintf(l->name[l->n++], sizeof(l->name[0]), "%.*s",
				 (int)name, spec);
		spec += item;
		if (*spec)
			spec++;
	}
}

static bool if_list_match(const struct if_list *l, const char *ifname)
{
	bool hit = l->n == 0;	/* NCCL: an empty list matches all */

	for (int i = 0; i < l->n && !hit; i++)
		hit = l->exact ? strcmp(ifname, l->name[i]) == 0 :
				 strncmp(ifname, l->name[i],
					 strlen(l->name[i])) == 0;
	return hit != l->exclude;
}

/* The first address of an interface SPEC allows: 1, else 0. */
static int find_if(const char *spec, int family, union uid_addr *out,
		   char *name, size_t name_len)
{
	struct ifaddrs *ifs, *i;
	struct if_list l;
	int found = 0;

	if (getifaddrs(&ifs) < 0)
		return 0;
	if_list_parse(spec, &l);
	for (i = ifs; i && !found; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;
		const union uid_addr *a = (const union uid_addr *)i->ifa_addr;

		if ((fam != AF_INET && fam != AF_INET6) ||
		    (family != AF_UNSPEC && fam != family) ||
		    !(i->ifa_flags & IFF_UP) || !if_list_match(&l, i->ifa_name))
			continue;
		/* NCCL skips IPv6 loopback addresses */
		if (fam == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a->sin6.sin6_addr))
			continue;
		memset(out, 0, sizeof(*out));
		memcpy(out, a, fam == AF_INET ? sizeof(a->sin) :
						sizeof(a->sin6));
		snprintf(name, name_len, "%s", i->ifa_name);
		found = 1;
	}
	freeifaddrs(ifs);
	return found;
}

/* The bootstrap interface and its address, as ncclFindInterfaces. */
static bool bootstrap_if(union uid_addr *out, char *name, size_t name_len)
{
	static const char *const automatic[] = {
		"ib", "^docker,lo,virbr", "docker", "lo", "virbr",
	};
	const char *env = getenv("NCCL_SOCKET_IFNAME");
	const char *fam = getenv("NCCL_SOCKET_FAMILY");
	int family = AF_UNSPEC;

	if (fam && strcmp(fam, "AF_INET") == 0)
		family = AF_INET;
	else if (fam && strcmp(fam, "AF_INET6") == 0)
		family = AF_INET6;
	/* NCCL: a value of one character counts as unset */
	if (env && strlen(env) > 1)
		return find_if(env, family, out, name, name_len);
	for (size_t i = 0; i < sizeof(automatic) / sizeof(automatic[0]); i++)
		if (find_if(automatic[i], family, out, name, name_len))
			return true;
	return false;
}

void fake_uid_bootstrap_name(char *out, size_t len)
{
	union uid_addr a;
	char name[IF_NAMESIZE + 1], addr[NI_MAXHOST + 16];

	if (!bootstrap_if(&a, name, sizeof(name))) {
		snprintf(out, len, "none");
		return;
	}
	a.sin.sin_port = 0;	/* same offset in sockaddr_in6 */
	addr_string(&a, addr, sizeof(addr));
	snprintf(out, len, "%s:%s", name, addr);
}

ncclResult_t fake_uid_create(ncclUniqueId *id)
{
	struct uid_handle h;
	char name[IF_NAMESIZE + 1];
	socklen_t sl;
	int fd, err;

	memset(&h, 0, sizeof(h));	/* padding too: the id is hashed */
	if (!bootstrap_if(&h.addr, name, sizeof(name)))
		return fake_nccl_error(ncclInvalidUsage,
				       "fake: Bootstrap : no socket interface found");
	if (getrandom(&h.magic, sizeof(h.magic), 0) != sizeof(h.magic))
		return fake_nccl_error(ncclSystemError, "fake: getrandom: %s",
				       strerror(errno));
	/* bootstrapCreateRoot -> ncclSocketListen: bind port 0, getsockname.
	 * CLOEXEC: an exec'd child must not hold the root's port. */
	sl = h.addr.sa.sa_family == AF_INET ? sizeof(h.addr.sin) :
					      sizeof(h.addr.sin6);
	h.addr.sin.sin_port = 0;	/* same offset in sockaddr_in6 */
	fd = socket(h.addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, &h.addr.sa, sl) < 0 ||
	    getsockname(fd, &h.addr.sa, &sl) < 0 || listen(fd, 16384) < 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		return fake_nccl_error(ncclSystemError,
				       "fake: bootstrap root cannot listen on %s: %s",
				       name, strerror(err));
	}
	pthread_mutex_lock(&roots.mu);
	if (roots.n == MAX_ROOTS) {
		pthread_mutex_unlock(&roots.mu);
		close(fd);
		return fake_nccl_error(ncclSystemError,
				       "fake: more than %d unique ids not yet used",
				       MAX_ROOTS);
	}
	roots.root[roots.n].h = h;
	roots.root[roots.n++].fd = fd;
	pthread_mutex_unlock(&roots.mu);
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, &h, sizeof(h));
	return ncclSuccess;
}

/* The listening fd kept for ID's handle, no longer kept; -1 if none. */
static int take_root(const struct uid_handle *h)
{
	int fd = -1;

	pthread_mutex_lock(&roots.mu);
	for (int i = 0; i < roots.n; i++) {
		if (memcmp(&roots.root[i].h, h, sizeof(*h)) != 0)
			continue;
		fd = roots.root[i].fd;
		roots.root[i] = roots.root[--roots.n];
		break;
	}
	pthread_mutex_unlock(&roots.mu);
	return fd;
}

void fake_uid_local_root(const ncclUniqueId *id)
{
	struct uid_handle h;
	int fd;

	/* Every rank connected to the root: its thread closes the socket. */
	if (uid_handle(id, &h) && (fd = take_root(&h)) >= 0)
		close(fd);
}

ncclResult_t fake_uid_root(const ncclUniqueId *id, bool hub,
			   struct sockaddr_storage *addr, socklen_t *addr_len,
			   int *listen_fd, char *label, size_t label_len)
{
	struct uid_handle h;

	if (!uid_handle(id, &h))
		return fake_nccl_error(ncclInvalidArgument,
				       "fake: the unique id names no bootstrap address");
	*addr_len = h.addr.sa.sa_family == AF_INET ? sizeof(h.addr.sin) :
						     sizeof(h.addr.sin6);
	memset(addr, 0, sizeof(*addr));
	memcpy(addr, &h.addr, *addr_len);
	addr_string(&h.addr, label, label_len);
	*listen_fd = hub ? take_root(&h) : -1;
	if (hub && *listen_fd < 0)
		return fake_nccl_error(ncclInvalidUsage,
				       "fake: rank 0 of unique id %s is not in the process whose ncclGetUniqueId opened that bootstrap root (the fake's root is rank 0's process): no rendezvous can happen",
				       label);
	return ncclSuccess;
}
