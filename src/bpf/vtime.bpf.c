/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who runs next on a CPU: the kernel's vruntime (update_curr(),
 * place_entity()), kept per CPU, and what sched_ext needs beyond it.
 *
 * Virtual time is a task's runtime x 100 / its weight, measured against
 * the clock of the CPU whose queue it is in. A CPU's clock follows the
 * smallest virtual time among the tasks it runs and queues, and never
 * goes back (the runqueue's min_vruntime): it moves when a task starts,
 * and at every slice boundary to the smaller of the running task's
 * (charged so far) and the queue's first. A task that slept comes back at
 * most one slice behind the clock, so sleepers cannot hoard credit; a new
 * task starts half a slice ahead of it, so that a stream of new tasks
 * moves the clock on (as the kernel's START_DEBIT does) instead of
 * holding back a task that is ahead; a task moving to another CPU keeps
 * how far ahead or behind the old CPU's clock it was. One clock for all
 * CPUs would not do: it moves as fast as all CPUs together consume time
 * while each queue drains at one CPU's pace, so a task that waited would
 * be owed far more than a slice.
 *
 * Under saturation this clock stands still while sleepers keep coming
 * back a slice behind it, so a woken task goes before every task queued
 * and a task ahead of the clock can wait until the starvation guard runs
 * it (hundreds a run at hackbench 16 groups). Two faster clocks were
 * measured against it. Moved by every task's run time, it all but ended
 * the 1 s waits but ran ahead of every task, so waiters took turns
 * whatever their weights: nice -5 and nice 0 shared a CPU 1:1
 * (results/20261207-2x4-clock-pace; the faults VM test holds 3:1). Moved
 * as the kernel's average (run time x 100 over the weight on the CPU), it
 * kept the weights and halved the 1 s waits, but a woken task queued on a
 * busy CPU waited twice as long (median 426 against 213 us) and tbench at
 * 32 clients lost 20 % (results/20261207-2x4-clock-weight). A guard
 * that ran a task after 100 ms instead of 1 s was ahead at hackbench 16
 * groups and behind on the wakeup benchmark's p99, where it ran no task
 * (results/20261207-2x4-wait-bound, results/20261208-2x4-wait-bound-light).
 * So this clock stays, with the tail its wakers-first order costs.
 *
 * Beyond the kernel's rule: a kernel thread preempted inside an RCU
 * reader queues as nice 0, a task waiting past STARVE_NS runs next,
 * before sched_ext's watchdog would unload the scheduler, and the
 * scheduler's own threads go first within a budget (own_first()).
 */

#include "sisutil.bpf.h"

/* @p's virtual time against @cpu's clock. */
__hidden u64 rebase(struct task_struct *p, s32 cpu)
{
	struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	u64 vtime = p->scx.dsq_vtime;

	if (tctx && tctx->frame != cpu) {
		vtime = vtime - vclock_of(tctx->frame) + vclock_of(cpu);
		tctx->frame = cpu;
	}
	return vtime;
}

/* At most one slice of credit for the time @p slept. */
__hidden u64 bound_credit(u64 vtime, s32 cpu)
{
	u64 floor = vclock_of(cpu) - slice_ns;

	return time_before(vtime, floor) ? floor : vtime;
}

/* @cpu's clock moves to @vtime, if that is ahead. */
__hidden void advance_clock(s32 cpu, u64 vtime)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);

	if (c && time_before(c->vclock, vtime))
		c->vclock = vtime;
}

/*
 * The scheduler's own threads (the loop that publishes the depths, the
 * stats socket's) run first. The kernel folds SIS_UTIL's sums in load
 * balancing, never late; a loop that took its turn in a saturated
 * machine's queues would publish them late by the length of the queue.
 * The precedence is a budget of run time, refilled at a quarter of one
 * CPU's time up to OWN_BURST_NS and spent by whatever the threads run
 * (own_ran()): the loop, which sleeps between intervals, stays well
 * inside it, and threads that kept running would fall back into the
 * queues like any task once it is spent, so they cannot starve the
 * others. The budget stops at zero: what the threads run once it is
 * spent, they run in the queues like any task, which is no precedence
 * and owes none (as debt, it would keep the loop out of its turn for
 * four times as long as they ran there). Precedence taken stays within
 * the budget, since each grant's slice is at most what is left of it.
 *
 * What the threads run is charged to their virtual time too, though the
 * budget already limits it. Charged twice, a thread that runs more than
 * its share drifts ahead of the CPUs' clocks: it pulls up the clock of
 * each CPU it runs on (a task that starts moves its CPU's clock), and
 * once the budget is spent it queues that far above the clock. Paid from
 * the budget alone, util was behind this at hackbench 8 groups by 41 %
 * and ahead at 16 by 18 %, with more and then fewer tasks waiting 1 s
 * (results/20261207-2x4-own-vtime): how fast the clocks move under
 * saturation weighs that much (the header says what other rules did).
 */
#define OWN_BURST_NS		(20ULL * 1000 * 1000)
#define OWN_SHARE_SHIFT		2
s64 own_budget_ns = OWN_BURST_NS;
u64 own_refilled_at;

static __always_inline bool is_own(const struct task_struct *p)
{
	return own_tgid && p->tgid == own_tgid;
}

/* The budget at @now, refilled for the time since it last was. */
static s64 own_budget(u64 now)
{
	u64 last = own_refilled_at;
	s64 b;

	if (now > last && __sync_bool_compare_and_swap(&own_refilled_at, last, now)) {
		/* Spent below zero is not owed (see above). */
		b = own_budget_ns > 0 ? own_budget_ns : 0;
		b += (s64)((now - last) >> OWN_SHARE_SHIFT);
		own_budget_ns = b > (s64)OWN_BURST_NS ? (s64)OWN_BURST_NS : b;
	}
	return own_budget_ns;
}

/* @p ran for @ns (charge()): one of the scheduler's threads spends its budget. */
static void own_ran(const struct task_struct *p, u64 ns)
{
	if (is_own(p))
		__sync_fetch_and_sub(&own_budget_ns, (s64)ns);
}

__hidden bool own_first(struct task_struct *p, u64 enq_flags)
{
	struct sisu_stats *st;
	s64 b;

	if (!is_own(p))
		return false;
	b = own_budget(bpf_ktime_get_ns());
	if (b <= 0)
		return false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, (u64)b < slice_ns ? (u64)b : slice_ns,
			   enq_flags | SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
	st = stats_of(active_policy());
	if (st)
		st->own_first++;
	return true;
}

/* Charges the running @p's time on @c so far; returns its virtual time. */
__hidden u64 charge(struct task_struct *p, struct sisu_cpu_ctx *c, u64 now)
{
	if (now > c->run_start) {
		p->scx.dsq_vtime += (now - c->run_start) * 100 / p->scx.weight;
		own_ran(p, now - c->run_start);
		c->run_start = now;
	}
	return p->scx.dsq_vtime;
}

/*
 * Whether @p is a kernel thread inside an RCU read-side critical section.
 * A task cannot sleep there, so one being queued was preempted there, and
 * every RCU grace period now waits until it runs again and leaves the
 * section. User tasks are left out: their sections end within a system
 * call (path walks, fd lookups), and they are inside one so often that
 * treating them as nice 0 there would undo nice for them. Kernel threads
 * do bulk work in long ones (a huge-page copy, say).
 */
__hidden bool in_rcu_reader(const struct task_struct *p)
{
	if (!(p->flags & PF_KTHREAD) || !bpf_core_field_exists(p->rcu_read_lock_nesting))
		return false;
	return p->rcu_read_lock_nesting > 0;
}

/*
 * A kernel thread preempted inside an RCU read-side section queues as a
 * nice-0 task would: with a whole base slice, and no further back than one
 * slice past the clock. At its own weight a nice-19 reader runs 0.2 ms at
 * a time, behind every nice-0 task on the CPU, while every grace period
 * waits for it, for tens of seconds on a loaded CPU; sched_ext unloads the
 * scheduler after an RCU stall (EEVDF, which has the same wait, only
 * warns). The kernel's cure, RCU priority boosting, is left out of most
 * configs. This one is milder: a reader is owed a nice-0 task's share, no
 * more, until it leaves the section, so readers cannot crowd others out,
 * and a nice-0 task is seldom queued further back anyway.
 */
__hidden void queue_reader_as_nice0(s32 cpu, u64 *vtime, u64 *slice)
{
	u64 last = vclock_of(cpu) + slice_ns;
	bool behind = time_after(*vtime, last);
	struct sisu_stats *st;

	if (*slice >= slice_ns && !behind)
		return;
	*slice = slice_ns;
	if (behind)
		*vtime = last;
	st = stats_of(active_policy());
	if (st)
		st->rcu_readers++;
}

/*
 * @prev's slice ran out while it can still run. It is in no queue at this
 * point, so the queue's order alone would hand the CPU to the next task
 * whatever the two virtual times are (two tasks would simply take turns,
 * whatever their weights): charge @prev, keep it if it is still the more
 * entitled (as the kernel would pick it again), and move the clock.
 */
__hidden bool keep_prev(struct task_struct *prev, s32 cpu)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	struct task_struct *head;
	u64 vtime, first;

	if (!c)
		return false;
	vtime = charge(prev, c, bpf_ktime_get_ns());
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	first = head ? head->scx.dsq_vtime : vtime;
	advance_clock(cpu, time_before(first, vtime) ? first : vtime);
	return !time_before(first, vtime);
}

/* A task waiting longer than this runs next, whatever its virtual time. */
#define STARVE_NS	(1000ULL * 1000 * 1000)

/* How often a CPU looks for such tasks in its queue. */
#define RESCUE_EVERY_NS	(50ULL * 1000 * 1000)

#define RESCUE_MAX	4

/* How long the oldest task in @cpu's queue has waited (0 if none). */
static u64 oldest_wait(s32 cpu, u64 now)
{
	struct task_struct *p;
	u64 oldest = 0;

	bpf_for_each(scx_dsq, p, cpu, 0) {
		struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);

		if (tctx && now - tctx->queued_at > oldest)
			oldest = now - tctx->queued_at;
	}
	return oldest;
}

/*
 * Weighted fairness alone can leave a low-weight task waiting for tens of
 * seconds on a loaded CPU (the kernel's EEVDF would too), and sched_ext
 * unloads a scheduler that leaves any task runnable for its watchdog's
 * limit (30 s by default): a task that has waited STARVE_NS runs next.
 * The longest waiters go first, so that however many tasks starve at
 * once, every one is reached in turn. Under normal load nothing waits
 * that long, so weights stay as they are.
 */
__hidden bool rescue_starving(s32 cpu)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns(), oldest, cutoff;
	struct task_struct *p;
	u32 moved = 0;

	if (!c || now - c->rescue_at < RESCUE_EVERY_NS)
		return false;
	c->rescue_at = now;
	oldest = oldest_wait(cpu, now);
	if (oldest < STARVE_NS)
		return false;
	cutoff = oldest - RESCUE_EVERY_NS;
	if (cutoff < STARVE_NS)
		cutoff = STARVE_NS;
	bpf_for_each(scx_dsq, p, cpu, 0) {
		struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);

		if (!tctx || now - tctx->queued_at < cutoff)
			continue;
		/*
		 * A whole base slice, not task_slice()'s shrunk one, which
		 * would leave a nice-19 task 0.2 ms a second.
		 */
		scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, slice_ns);
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0) &&
		    ++moved >= RESCUE_MAX)
			break;
	}
	if (moved) {
		struct sisu_stats *st = stats_of(active_policy());

		if (st)
			st->rescued += moved;
	}
	return moved > 0;
}
