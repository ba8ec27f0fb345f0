/* SPDX-License-Identifier: MIT */
/*
 * One whole syslog message to /dev/log (record.h, sn_syslog_send), as
 * glibc's syslog(3) sends it (datagram, else stream), but without
 * openlog(): the caller picks its own ident in the message.  Alone in its
 * file so that unit tests can replace it.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fleet/record.h"

int sn_syslog_send(const char *msg, size_t len)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int e = 0;

	strcpy(addr.sun_path, "/dev/log");
	for (size_t i = 0; i < 2; i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		ssize_t n = -1;

		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			/* A stream ends each message with a NUL, as glibc. */
			n = send(fd, msg, len + (types[i] == SOCK_STREAM),
				 MSG_NOSIGNAL);
		e = errno;
		close(fd);
		if (n >= (ssize_t)len)
			return 0;
		if (e != EPROTOTYPE)
			break;
	}
	errno = e;
	return -1;
}
