/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIS_CURRENT's decision, as pure functions on what the wakeup knows, so
 * that BPF (sis_current.bpf.c) and the host unit tests (host.c) run the
 * same code. The series and its rule are in sis_current.bpf.c's comment.
 */
#ifndef __SISUTIL_SIS_CURRENT_H
#define __SISUTIL_SIS_CURRENT_H

#include "intf.h"

/*
 * A task is short when it runs, on average, less than @limit between
 * switching in and going to sleep: the series' bound is
 * sysctl_sched_migration_cost (500 us unless tuned), the span within
 * which the kernel holds a task's cache footprint worth keeping
 * (task_hot()). A task never seen to sleep (an average of 0) is not short.
 */
static inline bool sis_current_short(u64 dur_avg, u64 limit)
{
	return dur_avg && dur_avg < limit;
}

/*
 * The LLC is busy when SIS_UTIL would scan less than 60 % of it, which its
 * parabola gives at about 50 % utilisation (the series' "a half-busy LLC
 * domain"), and no idle core is known: below that, spreading wakees over
 * idle CPUs is what they need.
 */
static inline bool sis_current_busy(u32 nr_idle_scan, u32 width, bool idle_core)
{
	return !idle_core && 5ULL * nr_idle_scan < 3ULL * width;
}

/*
 * A pair that only wakes each other: each woke the other last, and
 * neither has switched partners lately (wakee_flips decays to 0 in a
 * second or two of faithful ping-pong). A waker of many would otherwise
 * stack its wakees on its own CPU.
 */
static inline bool sis_current_pair(s32 waker, s32 wakee, s32 waker_last, s32 wakee_last,
				    u32 waker_flips, u32 wakee_flips)
{
	return waker_last == wakee && wakee_last == waker && !waker_flips && !wakee_flips;
}

/*
 * The whole rule: the wake target is the waker's own CPU, which runs
 * nothing but the waker; both tasks are short and a faithful pair; and
 * the LLC is busy.
 */
static inline bool sis_current_ok(bool target_is_waker_cpu, u32 nr_running, u64 waker_dur,
				  u64 wakee_dur, u64 limit, bool pair, bool busy)
{
	return target_is_waker_cpu && nr_running <= 1 && sis_current_short(waker_dur, limit) &&
	       sis_current_short(wakee_dur, limit) && pair && busy;
}

#endif /* __SISUTIL_SIS_CURRENT_H */
