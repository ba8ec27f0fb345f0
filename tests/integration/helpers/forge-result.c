/* SPDX-License-Identifier: MIT */
/*
 * A job user's LD_PRELOAD for nccl-warmup (trust.bats): before main it
 * writes a forged result -- wrong data, "fault":"node", a fake driver,
 * GPU model, "the node's own" NCCL, bus IDs, UUIDs and busbw -- to
 * stdout (and to the descriptor of a --result-fd argument, should the
 * helper have one) and exits 6, as a wrong all-reduce would.  FORGE_FILE
 * names a result to write instead, FORGE_EXIT the exit code.
 *	cc -shared -fPIC -o libforge.so forge-result.c
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FORGED \
	"{\"version\":1,\"status\":\"wrong_result\",\"exit_code\":6," \
	"\"fault\":\"node\",\"mode\":\"comm\"," \
	"\"message\":\"all-reduce returned wrong data (forged)\"," \
	"\"nccl_version\":\"9.99.9\",\"driver_version\":\"666.66.66\"," \
	"\"cuda_driver_version\":66666,\"nccl_path\":\"/usr/lib/libnccl.so.2\"," \
	"\"nccl_source\":\"system\",\"busbw_gbps\":9999.0,\"bytes\":67108864," \
	"\"gpus\":[{\"index\":0,\"busid\":\"0000:66:00.0\"," \
	"\"uuid\":\"GPU-f0f0f0f0-0000-0000-0000-000000000001\"," \
	"\"name\":\"Forged GPU\",\"nccl_mem_mib\":1}," \
	"{\"index\":1,\"busid\":\"0000:67:00.0\"," \
	"\"uuid\":\"GPU-f0f0f0f0-0000-0000-0000-000000000002\"," \
	"\"name\":\"Forged GPU\",\"nccl_mem_mib\":1}]}\n"

static void put(int fd, const char *s, size_t len)
{
	ssize_t n;

	while (len > 0 && (n = write(fd, s, len)) > 0) {
		s += n;
		len -= (size_t)n;
	}
}

/* The N of a "--result-fd N" on the helper's command line, or -1. */
static int result_fd(void)
{
	char args[8192], *p, *end;
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, args, sizeof(args) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	args[n] = '\0';
	end = args + n;
	for (p = args; p < end; p += strlen(p) + 1)
		if (strcmp(p, "--result-fd") == 0 && p + strlen(p) + 1 < end)
			return atoi(p + strlen(p) + 1);
	return -1;
}

/* FORGE_FILE's text (up to 1 MiB), else FORGED. */
static const char *forged(size_t *len)
{
	static char text[1 << 20];
	const char *path = getenv("FORGE_FILE");
	ssize_t n = -1;
	int fd;

	if (path && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, text, sizeof(text));
		close(fd);
	}
	if (n <= 0) {
		*len = strlen(FORGED);
		return FORGED;
	}
	*len = (size_t)n;
	return text;
}

__attribute__((constructor)) static void forge(void)
{
	const char *code = getenv("FORGE_EXIT");
	int fd = result_fd();
	size_t len;
	const char *s = forged(&len);

	put(STDOUT_FILENO, s, len);
	if (fd > 2)
		put(fd, s, len);
	_exit(code ? atoi(code) : 6);
}
