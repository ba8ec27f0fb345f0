/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fabric_addr.h"
#include "config/ras.h"

unsigned int sn_fabric_port(const struct sn_port_range *range,
			    uint32_t jobid, uint32_t stepid,
			    unsigned int attempt)
{
	return sn_step_port(range, jobid, stepid, attempt);
}

int sn_fabric_endpoint(char *out, size_t len, const char *addr,
		       unsigned int port, struct sn_error *err)
{
	unsigned char bin[sizeof(struct in6_addr)];
	int n;

	if (port == 0 || port > 65535) {
		sn_error_set(err, "port %u is out of range", port);
		return -1;
	}
	if (addr && inet_pton(AF_INET, addr, bin) == 1)
		n = snprintf(out, len, "%s:%u", addr, port);
	else if (addr && inet_pton(AF_INET6, addr, bin) == 1)
		n = snprintf(out, len, "[%s]:%u", addr, port);
	else {
		sn_error_set(err, "\"%.64s\" is not a numeric IPv4 or IPv6 address",
			     addr ? addr : "");
		return -1;
	}
	if (n < 0 || (size_t)n >= len) {
		sn_error_set(err, "the endpoint of %.64s does not fit", addr);
		return -1;
	}
	return 0;
}

int sn_nccl_id_endpoint(const unsigned char *id, size_t len, char *out,
			size_t outlen)
{
	/* After the 8-byte magic; memcpy: the id has no alignment. */
	const size_t at = sizeof(uint64_t);
	struct sockaddr_in6 in6;
	struct sockaddr_in in4;
	sa_family_t family;
	char addr[INET6_ADDRSTRLEN];
	struct sn_error ignored;

	if (len < at + sizeof(in6))
		return -1;
	memcpy(&family, id + at, sizeof(family));
	if (family == AF_INET) {
		memcpy(&in4, id + at, sizeof(in4));
		if (!inet_ntop(AF_INET, &in4.sin_addr, addr, sizeof(addr)))
			return -1;
		return sn_fabric_endpoint(out, outlen, addr,
					  ntohs(in4.sin_port), &ignored);
	}
	if (family == AF_INET6) {
		memcpy(&in6, id + at, sizeof(in6));
		if (!inet_ntop(AF_INET6, &in6.sin6_addr, addr, sizeof(addr)))
			return -1;
		return sn_fabric_endpoint(out, outlen, addr,
					  ntohs(in6.sin6_port), &ignored);
	}
	return -1;
}
