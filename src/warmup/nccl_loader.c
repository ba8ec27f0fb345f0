/* SPDX-License-Identifier: MIT */
/*
 * Finds and loads the job's NCCL (order in nccl_loader.h).  The helper
 * runs with the job's own environment, so LD_PRELOAD has already put a
 * preloaded NCCL into this process and LD_LIBRARY_PATH is the job's.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container_nccl.h"
#include "nccl_loader.h"

#define WU_LIBNCCL "libnccl.so.2"
/* ncclCommInitRankConfig, ncclCommFinalize: NCCL 2.14. */
#define WU_NCCL_MIN "2.14"

struct sym {
	const char *name;
	size_t offset;
};

#define SYM(field, name) { name, offsetof(struct wu_nccl, field) }

static const struct sym syms[] = {
	SYM(get_version, "ncclGetVersion"),
	SYM(get_unique_id, "ncclGetUniqueId"),
	SYM(comm_init_rank_config, "ncclCommInitRankConfig"),
	SYM(group_start, "ncclGroupStart"),
	SYM(group_end, "ncclGroupEnd"),
	SYM(comm_get_async_error, "ncclCommGetAsyncError"),
	SYM(all_reduce, "ncclAllReduce"),
	SYM(broadcast, "ncclBroadcast"),
	SYM(all_gather, "ncclAllGather"),
	SYM(reduce_scatter, "ncclReduceScatter"),
	SYM(send, "ncclSend"),
	SYM(recv, "ncclRecv"),
	SYM(comm_finalize, "ncclCommFinalize"),
	SYM(comm_destroy, "ncclCommDestroy"),
	SYM(comm_abort, "ncclCommAbort"),
	SYM(get_error_string, "ncclGetErrorString"),
	SYM(get_last_error, "ncclGetLastError"),
};

const char *wu_nccl_source_name(enum wu_nccl_source src)
{
	switch (src) {
	case WU_NCCL_PRELOAD: return "preload";
	case WU_NCCL_USER: return "user";
	case WU_NCCL_LD_LIBRARY_PATH: return "ld_library_path";
	case WU_NCCL_ADMIN: return "admin";
	case WU_NCCL_SYSTEM: return "system";
	case WU_NCCL_CONTAINER: return "container";
	case WU_NCCL_NONE: break;
	}
	return NULL;
}

/* FILE, or DIR/libnccl.so.2 when NAMED is a directory. */
static void named_file(const char *named, char *out, size_t len)
{
	struct stat st;

	if (stat(named, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(out, len, "%s/" WU_LIBNCCL, named);
	else
		snprintf(out, len, "%s", named);
}

/* Since 2.9 the code is MAJOR*10000 + MINOR*100 + PATCH. */
static void version_text(int v, char *out, size_t len)
{
	out[0] = '\0';
	if (v >= 20900)
		snprintf(out, len, "%d.%d.%d", v / 10000, (v % 10000) / 100,
			 v % 100);
	else if (v > 0)
		snprintf(out, len, "%d.%d.%d", v / 1000, (v % 1000) / 100,
			 v % 100);
}

/* An NCCL that would not load or lacks entry points: a container
 * image's is the image's (15), any other NCCL's code is 5. */
static int nccl_unusable(enum wu_nccl_source src)
{
	return src == WU_NCCL_CONTAINER ? SN_WARMUP_CONTAINER_NCCL :
	       SN_WARMUP_NCCL_ERROR;
}

/* Records path, source and version; resolves every entry point. */
static int resolve(struct wu_run *run, struct wu_nccl *nc, void *handle,
		   enum wu_nccl_source src)
{
	char path[PATH_MAX] = "", version[32] = "";
	Dl_info info;
	void *probe = dlsym(handle, "ncclGetVersion");
	int v = 0;

	nc->handle = handle;
	/* dladdr names the object the symbol came from: the file the
	 * loader actually opened, wherever the search found it. */
	if (probe && dladdr(probe, &info) && info.dli_fname) {
		if (info.dli_fname[0] == '/' ||
		    !realpath(info.dli_fname, path))
			snprintf(path, sizeof(path), "%s", info.dli_fname);
	}
	if (probe && ((ncclResult_t (*)(int *))probe)(&v) == ncclSuccess)
		version_text(v, version, sizeof(version));
	if (src == WU_NCCL_CONTAINER)
		wu_container_path(run, path);
	pthread_mutex_lock(&run->lock);
	snprintf(run->nccl_path, sizeof(run->nccl_path), "%s", path);
	snprintf(run->nccl_version, sizeof(run->nccl_version), "%s", version);
	run->nccl_source = src;
	pthread_mutex_unlock(&run->lock);

	/* Present in this NCCL, bound from the global scope as a linked
	 * program binds it (an LD_PRELOAD interposer comes first). */
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *fn = dlsym(handle, syms[i].name) ?
			   dlsym(RTLD_DEFAULT, syms[i].name) : NULL;

		if (!fn)
			return wu_fail(run, nccl_unusable(src),
				       "NCCL %s (%s) lacks %s: NCCL " WU_NCCL_MIN " or newer is needed; point the step at another NCCL (--nccl-warmup=...,nccl=PATH)" SN_DETAIL_SEP "the NCCL at %s",
				       version[0] ? version : "(unknown version)",
				       wu_nccl_source_name(src), syms[i].name,
				       path[0] ? path : "(unknown path)");
		memcpy((char *)nc + syms[i].offset, &fn, sizeof(fn));
	}
	run->nc = nc;
	return SN_WARMUP_OK;
}

/* An NCCL the user or admin named, or the job's LD_LIBRARY_PATH holds,
 * must load: falling through to another one would warm the wrong NCCL. */
static int open_named(struct wu_run *run, struct wu_nccl *nc,
		      const char *file, enum wu_nccl_source src,
		      const char *how)
{
	void *h;
	const char *why;

	pthread_mutex_lock(&run->lock);
	run->nccl_tried = src;
	pthread_mutex_unlock(&run->lock);
	h = dlopen(file, RTLD_NOW | RTLD_GLOBAL);
	if (h)
		return resolve(run, nc, h, src);
	why = dlerror();
	/* dlerror() names FILE itself. */
	return wu_fail(run, nccl_unusable(src),
		       "cannot load the NCCL named by %s: %s", how,
		       why ? why : file);
}

/* The first LD_LIBRARY_PATH directory holding libnccl.so.2. */
static bool find_in_path(const char *list, char *out, size_t len)
{
	const char *p = list;

	while (p && *p) {
		size_t n = strcspn(p, ":;");

		/* ld.so reads an empty entry as the current directory. */
		snprintf(out, len, "%.*s/" WU_LIBNCCL, (int)n,
			 n ? p : ".");
		if (access(out, R_OK) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

int wu_nccl_load(struct wu_run *run, struct wu_nccl *nc)
{
	const struct wu_options *opt = &run->opt;
	const char *ldpath = getenv("LD_LIBRARY_PATH");
	const char *preload = getenv("LD_PRELOAD");
	char file[PATH_MAX + 32], how[320];
	void *probe, *h;
	Dl_info info;
	const char *why;

	memset(nc, 0, sizeof(*nc));
	wu_doing(run, "loading NCCL");
	/* 0. A container's: what its tasks load, whatever the host has. */
	if (opt->container_pid > 0) {
		int code = wu_container_find_nccl(run, file, sizeof(file));

		if (code || !file[0])
			return code;
		snprintf(how, sizeof(how), "the container image %s",
			 wu_container_image(run));
		return open_named(run, nc, file, WU_NCCL_CONTAINER, how);
	}
	/* 1. Preloaded: already mapped, so its symbols are global. */
	probe = dlsym(RTLD_DEFAULT, "ncclGetVersion");
	if (probe && dladdr(probe, &info) && info.dli_fname) {
		h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
		if (h)
			return resolve(run, nc, h, WU_NCCL_PRELOAD);
	}
	if (opt->nccl_user[0]) {
		struct stat st;

		/* What the user typed, once: --nccl-warmup=...,nccl=PATH. */
		if (stat(opt->nccl_user, &st) < 0) {
			pthread_mutex_lock(&run->lock);
			run->nccl_tried = WU_NCCL_USER;
			pthread_mutex_unlock(&run->lock);
			return wu_fail(run, nccl_unusable(WU_NCCL_USER),
				       "--nccl-warmup=...,nccl=%s: %s does not exist",
				       opt->nccl_user,
				       opt->nccl_user[strlen(opt->nccl_user) - 1] == '/' ?
				       "directory" : "file or directory");
		}
		named_file(opt->nccl_user, file, sizeof(file));
		snprintf(how, sizeof(how), "--nccl-warmup=...,nccl=%s",
			 opt->nccl_user);
		return open_named(run, nc, file, WU_NCCL_USER, how);
	}
	if (ldpath && find_in_path(ldpath, file, sizeof(file)))
		return open_named(run, nc, file, WU_NCCL_LD_LIBRARY_PATH,
				  "the job's LD_LIBRARY_PATH");
	if (opt->nccl_admin[0]) {
		named_file(opt->nccl_admin, file, sizeof(file));
		return open_named(run, nc, file, WU_NCCL_ADMIN,
				  "--nccl-default (warmup_nccl= in plugstack.conf)");
	}
	h = dlopen(WU_LIBNCCL, RTLD_NOW | RTLD_GLOBAL);
	if (h)
		return resolve(run, nc, h, WU_NCCL_SYSTEM);
	why = dlerror();
	/* Check mode checks the GPUs: a node whose jobs bring their own
	 * NCCL (a container image) passes, and says so. */
	if (opt->mode == SN_WARMUP_MODE_CHECK) {
		wu_note(run, "no NCCL on the node");
		return SN_WARMUP_OK;
	}
	return wu_fail(run, SN_WARMUP_NCCL_ERROR,
		       "no NCCL found: looked in LD_PRELOAD (%s), the step's nccl= (not given), LD_LIBRARY_PATH (%s), warmup_nccl= in plugstack.conf (not set) and the system's library path (%s); point the step at the job's NCCL with --nccl-warmup=...,nccl=/path/to/libnccl.so.2 or put its directory in LD_LIBRARY_PATH",
		       preload && *preload ? "no libnccl in it" : "unset",
		       ldpath && *ldpath ? ldpath : "unset",
		       why ? why : WU_LIBNCCL " not found");
}
