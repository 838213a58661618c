/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIS_CURRENT: a short wakee of a short waker that wakes only it goes to
 * the waker's CPU instead of a scan, when the LLC is busy.
 *
 * The rule of Chen Yu's series "sched/fair: Introduce SIS_CURRENT to wake
 * up short task on current CPU" (LKML, 2023), which the kernel did not
 * take. Its case: many
 * pairs of tasks that ping-pong through pipes or sockets, on a machine
 * about as busy as it has CPUs. A scan then finds an idle CPU for the
 * wakee, but several wakers race to the same one, and the wakee runs
 * later than if it had simply waited for its waker, which is about to
 * sleep anyway. The rule, as this file keeps it (sis_current.h has the
 * pure decision, which the unit tests run):
 *
 *  - a task's duration is how long it ran from switching in until it went
 *    to sleep; its average moves an eighth of the way to each (the
 *    kernel's update_avg()); short is under the series' bound,
 *    sysctl_sched_migration_cost (migration_cost_ns, read from the kernel
 *    at load: 500 us unless tuned);
 *  - waker and wakee are both short, each woke the other last and neither
 *    switched partners lately (wakee_flips 0);
 *  - the wake target is the waker's own CPU, which runs only the waker;
 *  - the LLC is busy: SIS_UTIL's depth under 60 % of its width, and no
 *    idle core known (a gate the series' later versions dropped, kept
 *    here because its case is a busy machine).
 *
 * Then the wakee waits in the waker's queue instead of a scan. Its author
 * reported large gains on context-switch-heavy loads (will-it-scale,
 * netperf) on a 224-CPU machine, neutral hackbench and schbench.
 *
 * It applies under every policy but builtin, to wakeups with a waker
 * (select_cpu; a queued wakeup's enqueue does not know its waker). The
 * counters, in struct sisu_stats: current_cut (wakeups put on the waker's
 * CPU) and current_idle_left (... while an idle CPU of the LLC stood
 * idle, which the scan would have found at its full depth).
 */
#include "sisutil.bpf.h"
#include "sis_current.h"

/* @p switches in at @now: its run begins (only timed with the option on). */
__hidden void current_run(struct task_struct *p, u64 now)
{
	struct task_ctx *tctx;

	if (!cfg.sis_current)
		return;
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (tctx)
		tctx->ran_at = now;
}

/*
 * @p switches out at @now; if it goes to sleep (!@runnable), what it ran
 * since it last slept is one duration.
 */
__hidden void current_stop(struct task_struct *p, bool runnable, u64 now)
{
	struct task_ctx *tctx;

	if (!cfg.sis_current)
		return;
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx || !tctx->ran_at)
		return;
	if (now > tctx->ran_at)
		tctx->run_acc += now - tctx->ran_at;
	tctx->ran_at = 0;
	if (runnable)
		return;
	sis_avg_update(&tctx->dur_avg, tctx->run_acc);
	tctx->run_acc = 0;
}

/*
 * Whether the rule sends @p, woken by the running task towards @target,
 * to the waker's CPU (then @pk says so and it is counted under @st);
 * @util_nr is SIS_UTIL's depth for the target's LLC.
 */
__hidden bool current_pick(struct task_struct *p, s32 target, u32 util_nr, struct pick *pk,
			   struct sisu_stats *st)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	s32 this = bpf_get_smp_processor_id();
	struct task_ctx *w, *e;
	struct sisu_llc_ctx *lc;
	const struct cpumask *idle, *mask;
	u32 llc;
	bool ok;

	if (!cfg.sis_current || !pk->waker || target != this || !waker->pid)
		return false;
	w = bpf_task_storage_get(&task_ctxs, waker, 0, 0);
	e = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	llc = llc_of(target);
	lc = llc_ctx(llc);
	if (!w || !e || !lc)
		return false;
	ok = sis_current_ok(true, nr_running(this, true), w->dur_avg, e->dur_avg,
			    migration_cost_ns,
			    sis_current_pair(waker->pid, p->pid, w->last_wakee, e->last_wakee,
					     w->wakee_flips, e->wakee_flips),
			    sis_current_busy(util_nr, width_of(llc),
					     smt_on && lc->has_idle_cores));
	if (!ok)
		return false;
	pick_idle(pk, target, SISU_OUT_BUSY);
	pk->wait = SISU_WAIT_CURRENT;
	if (!st)
		return true;
	st->current_cut++;
	mask = llc_cpumask(llc);
	idle = scx_bpf_get_idle_cpumask();
	if (mask && bpf_cpumask_intersects(mask, idle))
		st->current_idle_left++;
	scx_bpf_put_idle_cpumask(idle);
	return true;
}
