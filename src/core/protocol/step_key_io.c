/* SPDX-License-Identifier: MIT */
/* The step key's site read and line (step_key_io.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protocol/step_key_io.h"

int sn_step_key_site_read(const char *path, unsigned char *site, size_t *n,
			  char *why, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t r = 0;

	*n = 0;
	if (fd < 0) {
		snprintf(why, len, "cannot read the site key %s: %s", path,
			 strerror(errno));
		return -1;
	}
	while (*n < SN_STEP_KEY_SITE_MAX &&
	       ((r = read(fd, site + *n, SN_STEP_KEY_SITE_MAX - *n)) > 0 ||
		(r < 0 && errno == EINTR)))
		*n += r > 0 ? (size_t)r : 0;
	close(fd);
	if (r < 0 || *n < SN_STEP_KEY_BYTES) {
		snprintf(why, len, "the site key %s: %s", path,
			 r < 0 ? strerror(errno) : "shorter than 32 bytes");
		return -1;
	}
	return 0;
}

int sn_step_key_write(int fd, const unsigned char key[SN_STEP_KEY_BYTES],
		      char *why, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char line[2 * SN_STEP_KEY_BYTES + 1];
	ssize_t w;

	for (size_t i = 0; i < SN_STEP_KEY_BYTES; i++) {
		line[2 * i] = digits[key[i] >> 4];
		line[2 * i + 1] = digits[key[i] & 15];
	}
	line[sizeof(line) - 1] = '\n';
	/* 65 bytes into an empty pipe: whole, never blocking. */
	while ((w = write(fd, line, sizeof(line))) < 0 && errno == EINTR)
		;
	explicit_bzero(line, sizeof(line));
	if (w != (ssize_t)sizeof(line)) {
		snprintf(why, len, "cannot write the step key: %s",
			 w < 0 ? strerror(errno) : "a short write");
		return -1;
	}
	return 0;
}
