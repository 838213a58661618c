/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exports sis_prop.h's functions for the host unit tests (src/policy.rs):
 * the tests run the very arithmetic the BPF scheduler runs.
 */
#include "sis_prop.h"

void sisu_avg_update(u64 *avg, u64 sample)
{
	sis_avg_update(avg, sample);
}

void sisu_prop_reset(struct sisu_cpu_ctx *c, u64 now_jiffies)
{
	sis_prop_reset(c, now_jiffies);
}

void sisu_prop_idle_end(struct sisu_cpu_ctx *c, u64 idle_ns, u64 now_jiffies)
{
	sis_prop_idle_end(c, idle_ns, now_jiffies);
}

void sisu_prop_age(struct sisu_prop_books *b, u64 now_jiffies)
{
	sis_prop_age(b, now_jiffies);
}

u64 sisu_prop_nr(u32 width, u64 wake_avg_idle, u64 avg_scan_cost)
{
	return sis_prop_nr(width, wake_avg_idle, avg_scan_cost);
}

void sisu_prop_charge(struct sisu_prop_books *b, u64 scan_ns)
{
	sis_prop_charge(b, scan_ns);
}

u64 sisu_prop_share(u64 walk_ns, u32 examined, u32 walk_examined)
{
	return sis_prop_share(walk_ns, examined, walk_examined);
}
