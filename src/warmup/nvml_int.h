/* SPDX-License-Identifier: MIT */
/*
 * What nvml.c (loading, the boot thread, matching the step's GPUs) and
 * nvml_read.c (one GPU's readings) share: the resolved NVML entry points.
 */
#ifndef WU_NVML_INT_H
#define WU_NVML_INT_H

#include "nvml_api.h"
#include "warmup.h"

#define WU_LIBNVML "libnvidia-ml.so.1"

struct wu_nvml {
	void *handle;
	nvml_init_fn init;
	nvml_error_string_fn error_string;
	nvml_count_fn count;
	nvml_by_index_fn by_index;
	nvml_uuid_fn uuid;
	nvml_by_busid_fn by_busid;
	nvml_by_uuid_fn by_uuid;
	nvml_memory_fn memory;
	nvml_procs_fn compute_procs, graphics_procs;
	nvml_remapped_fn remapped_rows;
	nvml_state_fn retired_pending, persistence;
	nvml_ecc_fn ecc;
	nvml_compute_mode_fn compute_mode;
	nvml_uint_fn pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	nvml_nvlink_state_fn nvlink_state;
	nvml_ull_fn clock_reasons;
};

/* Every reading of DEV into H (H->read set); the holders' users are
 * left to wu_nvml_name_holders, for the step's GPUs only. */
void wu_nvml_read(const struct wu_nvml *n, nvmlDevice_t dev,
		  struct sn_gpu_health *h);

/* The user of each process in H->procs, from /proc (NSS may be slow:
 * only for the GPUs a verdict can name). */
void wu_nvml_name_holders(struct sn_gpu_health *h);

#endif
