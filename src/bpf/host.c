/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exports the pure functions of sis_util.h, sis_prop.h, depth.h,
 * sis_current.h and wait_hist.h for userspace (SIS_UTIL's published depth) and the host unit
 * tests (src/policy.rs, src/stats.rs): both run the very arithmetic the
 * BPF scheduler runs.
 */
#include <stdbool.h>
#include "sis_util.h"
#include "sis_prop.h"
#include "depth.h"
#include "sis_current.h"
#include "wait_hist.h"

u64 sisu_util_nr(u64 sum_util, u64 width)
{
	return sis_util_nr(sum_util, width);
}

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

void sisu_prop_charge_sampled(struct sisu_prop_books *b, u64 scan_ns, u32 shift)
{
	sis_prop_charge_sampled(b, scan_ns, shift);
}

u64 sisu_prop_share(u64 walk_ns, u32 examined, u32 walk_examined)
{
	return sis_prop_share(walk_ns, examined, walk_examined);
}

void sisu_prop_spend(struct sisu_prop_books *b, u64 ns)
{
	sis_prop_spend(b, ns);
}

bool sisu_current_ok(bool target_is_waker_cpu, u32 nr_running, u64 waker_dur, u64 wakee_dur,
		     u64 limit, bool pair, bool busy)
{
	return sis_current_ok(target_is_waker_cpu, nr_running, waker_dur, wakee_dur, limit, pair,
			      busy);
}

bool sisu_current_pair(s32 waker, s32 wakee, s32 waker_last, s32 wakee_last, u32 waker_flips,
		       u32 wakee_flips)
{
	return sis_current_pair(waker, wakee, waker_last, wakee_last, waker_flips, wakee_flips);
}

bool sisu_current_busy(u32 nr_idle_scan, u32 width, bool idle_core)
{
	return sis_current_busy(nr_idle_scan, width, idle_core);
}

u32 sisu_wait_slot(u64 ns)
{
	return wait_slot(ns);
}

void sisu_rule_depth(u32 pol, u32 width, u32 small, bool idle_core,
		     const struct sisu_prop_books *b, const struct sisu_llc_load *ld,
		     struct depth *d)
{
	rule_depth(pol, width, small, idle_core, b, ld, d);
}
