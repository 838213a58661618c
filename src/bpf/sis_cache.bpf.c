/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIS_CACHE: a CPU whose task sleeps only briefly is kept for that task,
 * for about as long as it sleeps, so that it wakes to its own cache
 * instead of finding its CPU taken by another wakee and moving.
 *
 * The rule of Chen Yu's series "Introduce SIS_CACHE to choose previous CPU
 * during task wakeup" (LKML, 2023), which the kernel did not take:
 *
 *  - a task's average sleep counts only its short sleeps;
 *  - when a task with such an average goes to sleep, its CPU is cache-hot
 *    until now + that average, a mark that only ever moves forward;
 *  - select_idle_cpu() passes over an idle CPU while it is cache-hot, so
 *    that other wakees leave it to its sleeper, whose wakeup finds its
 *    previous CPU idle before any scan;
 *  - if every idle CPU the scan examined was cache-hot, it takes the first
 *    of them rather than queue the wakee on a busy CPU.
 *
 * What is short is ours to say: a sleep under the kernel's migration cost
 * (sysctl_sched_migration_cost, migration_cost_ns: 500 us unless tuned),
 * the time within which the kernel holds a task cache-hot on its CPU
 * (task_hot()). The average moves as the
 * kernel's update_avg() moves its averages (sis_avg_update()). Only the active scan skips, CPU by CPU (the idle-core search
 * takes whole idle cores as before), while cfg.sis_cache is on; the
 * shadow rules judge the idle mask as it is. The counters, in struct
 * sisu_stats: cache_kept (sleeps that kept their CPU), cache_skipped (idle
 * CPUs a scan passed over), cache_fallback (scans that took a kept CPU),
 * cache_reclaimed (wakeups onto the CPU kept for them).
 */
#include "sisutil.bpf.h"

/* @p goes to sleep on the CPU of @c, at @now: keep the CPU for it. */
__hidden void cache_keep(struct task_struct *p, struct sisu_cpu_ctx *c, u64 now)
{
	struct task_ctx *tctx;
	struct sisu_stats *st;
	u64 until;

	if (!cfg.sis_cache || !c)
		return;
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx)
		return;
	tctx->slept_at = now;
	if (!tctx->sleep_avg)
		return;
	until = now + tctx->sleep_avg;
	if (until > c->cache_hot_until)
		c->cache_hot_until = until;
	c->cache_hot_pid = p->pid;
	st = stats_of(active_policy());
	if (st)
		st->cache_kept++;
}

/* Is @cpu kept, at @now, for another task than @p? */
__hidden bool cache_kept_from(const struct task_struct *p, s32 cpu, u64 now)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);

	return c && c->cache_hot_until > now && c->cache_hot_pid != p->pid;
}

/*
 * @p woke and was placed (@pk): its sleep, if short, moves its average,
 * and a CPU kept for it that it got back is counted.
 */
__hidden void cache_woke(struct task_struct *p, const struct pick *pk, struct sisu_stats *st)
{
	struct task_ctx *tctx;
	struct sisu_cpu_ctx *c;
	u64 now, slept;

	if (!cfg.sis_cache)
		return;
	now = bpf_ktime_get_ns();
	if (pk->outcome != SISU_OUT_BUSY) {
		c = cpu_ctx(pk->cpu);
		if (st && c && c->cache_hot_pid == p->pid && c->cache_hot_until > now)
			st->cache_reclaimed++;
	}
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx || !tctx->slept_at)
		return;
	slept = now > tctx->slept_at ? now - tctx->slept_at : 0;
	tctx->slept_at = 0;
	if (slept < migration_cost_ns)
		sis_avg_update(&tctx->sleep_avg, slept);
}
