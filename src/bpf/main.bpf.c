/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_sisutil: the fair scheduler's idle-CPU search at wakeup, SIS_UTIL and
 * SIS_PROP, as a sched_ext scheduler.
 *
 * A waking task is placed the way select_idle_sibling() places it: the
 * wake target, prev, the task's recently used CPU, an idle SMT sibling of
 * prev, then a scan of the target's LLC whose depth the active policy
 * limits; a new task instead starts in the idlest LLC near its parent, as
 * the kernel's fork balancing puts it. A CPU found idle gets the task
 * directly; otherwise the task waits in the target CPU's own queue,
 * ordered by weighted virtual time, like on a runqueue. A CPU that runs
 * out of work pulls from the busiest queue of its LLC, then of the LLCs
 * nearest to it: its node's, its package's, then other nodes' by NUMA
 * distance (newidle balancing, walking up the sched domains), and a busy
 * CPU's tick wakes an idle CPU when work waits (nohz idle balancing).
 * Across nodes it takes queued work only from a node with no CPU for it,
 * and periodic balancing looks farther less often, as the kernel's domains
 * grow their intervals and margins with distance. Running tasks, which no
 * queue holds, move between nodes that have CPUs to spare by the kernel's
 * rule for them (spread(), from the tick).
 *
 * SIS_UTIL's depth comes from userspace: BPF accounts each CPU's busy
 * time, userspace turns it into a PELT-like utilisation, sums it per LLC
 * and publishes nr_idle_scan per LLC every interval. SIS_PROP's state is
 * per CPU and kept in BPF (see sis_prop.h). Scan statistics are counted per
 * CPU and per policy.
 *
 * This file holds the state and the ops, in the order a task meets them;
 * what the ops call lives by concern (see sisutil.bpf.h): placement.bpf.c
 * (the wakeup and fork paths, the scan), migration.bpf.c (pulls, periodic
 * and NUMA balancing), vtime.bpf.c (virtual time, the rescues, the
 * scheduler's own threads first), the two
 * proposals (sis_cache.bpf.c, sis_current.bpf.c) and the trace
 * (trace.bpf.c).
 */
#include "sisutil.bpf.h"

char _license[] SEC("license") = "GPL";

/* The state sisutil.bpf.h describes. */
const volatile u32 nr_llcs = 1;
const volatile bool smt_on;
const volatile u32 cpu_llc[SISU_MAX_CPUS];
const volatile u32 cpu_pos[SISU_MAX_CPUS];
const volatile s32 llc_cpus[SISU_MAX_CPUS];
const volatile u32 llc_first[SISU_MAX_LLCS];
const volatile u32 llc_width[SISU_MAX_LLCS];
const volatile s32 cpu_sibs[SISU_MAX_CPUS][SISU_MAX_SMT];
const volatile u8 llc_span[SISU_MAX_LLCS][SISU_MAX_LLCS];
const volatile u8 llc_near[SISU_MAX_LLCS][SISU_MAX_LLCS];
const volatile u8 llc_affine[SISU_MAX_LLCS][SISU_MAX_LLCS];
const volatile u32 llc_node[SISU_MAX_LLCS];
const volatile s32 node_cpus[SISU_MAX_CPUS];
const volatile u32 node_first[SISU_MAX_LLCS];
const volatile u32 node_width[SISU_MAX_LLCS];
const volatile u32 llc_numa_imb[SISU_MAX_LLCS][SISU_NR_SPANS];
const volatile u32 nr_nodes = 1;
const volatile u32 nr_pkgs = 1;
const volatile u32 node_pkg[SISU_MAX_LLCS];
const volatile u32 pkg_width[SISU_MAX_LLCS];
const volatile u64 slice_ns = 3000000;
const volatile u64 migration_cost_ns = 500000;
const volatile bool stats_on = true;
const volatile bool detail_on;
const volatile bool wake_affine_on = true;
const volatile u64 depth_ttl_ns = 64000000;
const volatile u32 own_tgid;
struct sisu_cfg cfg = {
	.policy = SISU_POL_UTIL,
	.epoch = 1,
};
struct sisu_llc_ctx llcs[SISU_MAX_LLCS];
struct sisu_cpu_ctx cpus[SISU_MAX_CPUS];
u32 overloaded;
u32 may_queue[SISU_MAX_CPUS];
u32 nr_cpus = SISU_MAX_CPUS;

UEI_DEFINE(uei);

struct stats_map stats SEC(".maps");
struct llc_scans_map llc_scans SEC(".maps");
struct rule_stats_map rule_stats SEC(".maps");
struct task_ctx_map task_ctxs SEC(".maps");
struct idle_counts_map idle_counts SEC(".maps");
struct llc_mask_map llc_masks SEC(".maps");
struct verdicts_map verdicts_buf SEC(".maps");
struct trace_rb_map trace_rb SEC(".maps");

/*
 * A task wakes or starts. The built-in policy is a baseline arm; a new
 * task that may run anywhere starts in the idlest LLC near its parent
 * (fork_cpu()); any other goes through the wake target and
 * select_idle_sibling() (placement.bpf.c). A CPU found idle gets it at
 * once, without enqueue; whether it was still free then, the kernel tells
 * (note_placed()).
 */
s32 BPF_STRUCT_OPS(sisu_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u32 pol = active_policy();
	struct sisu_stats *st = stats_of(pol);
	struct pick pk = { .waker = true };
	s32 target, cpu;
	u64 immed;

	if (pol == SISU_POL_BUILTIN) {
		pick_builtin(p, prev_cpu, wake_flags, &pk);
		target = prev_cpu;
	} else if ((wake_flags & SCX_WAKE_FORK) && p->nr_cpus_allowed >= nr_cpus &&
		   (cpu = fork_cpu(prev_cpu)) >= 0) {
		pick_idle(&pk, cpu, SISU_OUT_FORK);
		target = prev_cpu;
	} else {
		target = wake_target(p, prev_cpu, wake_flags);
		select_idle_sibling(p, prev_cpu, target, pol, &pk);
		cache_woke(p, &pk, st);
	}
	count_wakeup(st, prev_cpu, target, &pk, false);
	note_wake(p, &pk, pol, prev_cpu, target);
	immed = note_placed(p, &pk);
	if (pk.outcome != SISU_OUT_BUSY)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(p), immed);
	return pk.cpu;
}

/*
 * A task that did not go straight to an idle CPU (a wakeup that found
 * none, a preempted task, a task whose slice ran out) waits in its CPU's
 * queue, ordered by virtual time.
 */
void BPF_STRUCT_OPS(sisu_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx;
	u64 vtime, slice;
	u32 *m;

	if (handed_back(p, enq_flags) || place_queued_wakeup(p, cpu, enq_flags) ||
	    push_running(p, cpu, enq_flags) || own_first(p, enq_flags))
		return;
	/*
	 * Nothing else to run here (SCX_OPS_ENQ_LAST, set for push_running()):
	 * @p goes on, as the kernel would keep it.
	 */
	if (enq_flags & SCX_ENQ_LAST) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(p), enq_flags);
		return;
	}
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	vtime = bound_credit(rebase(p, cpu), cpu);
	slice = task_slice(p);
	m = MEMBER_VPTR(may_queue, [cpu]);
	if (in_rcu_reader(p))
		queue_reader_as_nice0(cpu, &vtime, &slice);
	if (tctx)
		tctx->queued_at = bpf_ktime_get_ns();
	scx_bpf_dsq_insert_vtime(p, cpu, slice, vtime, enq_flags);
	if (m && !*m)
		*m = 1;
	if (!overloaded)
		overloaded = 1;
	/*
	 * The CPU may have gone idle since select_cpu looked. A kick costs an
	 * interrupt even when it finds the CPU busy, so look first.
	 */
	if (cpu != bpf_get_smp_processor_id() && cpu_idle_now(cpu))
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * A CPU needs work. Its own queue comes first (unless the task whose slice
 * just ran out is still the more entitled), but a much longer queue
 * elsewhere is drained first now and then (balance()). With nothing of its
 * own, an idle CPU pulls from the busiest queue of its LLC, then of the
 * nearest other LLCs (newidle balancing, pull()); a CPU whose task still wants to run
 * pulls only from a queue holding at least two tasks. Neither looks when
 * no queue holds anything (overloaded), and an idle CPU that finds
 * nothing goes idle (idle_enter()).
 */
void BPF_STRUCT_OPS(sisu_dispatch, s32 cpu, struct task_struct *prev)
{
	/* A task leaving for another node (spread()) does not keep the CPU. */
	bool busy = prev && (prev->scx.flags & SCX_TASK_QUEUED) && !push_marked(prev, cpu);
	s32 own = queue_len(cpu);
	u32 *m = MEMBER_VPTR(may_queue, [cpu]);

	if (!own && m && *m)
		*m = 0;

	if (own > 0 && rescue_starving(cpu))
		return;
	if (overloaded && balance(cpu, own))
		return;
	if (own > 0) {
		if (busy && keep_prev(prev, cpu)) {
			scx_bpf_task_set_slice(prev, task_slice(prev));
			return;
		}
		if (scx_bpf_dsq_move_to_local(cpu, 0))
			return;
	}
	if (overloaded && pull(cpu, busy ? 2 : 1))
		return;
	/*
	 * Nothing else to run: prev goes on, one slice at a time (left to
	 * itself, the kernel would give it a 20 ms default slice).
	 */
	if (busy) {
		keep_prev(prev, cpu);
		scx_bpf_task_set_slice(prev, task_slice(prev));
	} else {
		struct sisu_cpu_ctx *c = cpu_ctx(cpu);

		if (c)
			idle_enter(cpu, c);
	}
}

void BPF_STRUCT_OPS(sisu_running, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns();
	u64 vtime = bound_credit(rebase(p, cpu), cpu);

	/* A task sent straight to an idle CPU skipped enqueue's accounting. */
	p->scx.dsq_vtime = vtime;
	advance_clock(cpu, vtime);
	wait_end(p, now);
	current_run(p, now);
	if (c) {
		if (c->idle_stamp)
			idle_exit(c, now);
		c->acct_from = now;
		c->run_start = now;
		c->running = 1;
	}
}

/* Charge the busy time not yet accounted, up to @now. */
static void account_busy(struct sisu_cpu_ctx *c, u64 now)
{
	if (now > c->acct_from)
		c->busy_ns += now - c->acct_from;
	c->acct_from = now;
}

/*
 * Long-running tasks are charged at every tick, so userspace sees them.
 * The tick is also where a busy CPU looks at the other nodes (spread()),
 * as the kernel's tick starts its periodic balancing; a task marked to
 * move is preempted, and its enqueue moves it.
 */
void BPF_STRUCT_OPS(sisu_tick, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id(), llc;
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns();

	if (!c)
		return;
	account_busy(c, now);
	kick_idle_for_queue(cpu);
	/*
	 * Not p->migration_disabled, which BPF's own prologue raises for the
	 * current task: a task that may not migrate never reaches enqueue
	 * (SCX_OPS_ENQ_MIGRATION_DISABLED is off), and its mark expires.
	 */
	if (nr_nodes < 2 || p->nr_cpus_allowed < nr_cpus)
		return;
	llc = spread(cpu);
	if (llc < 0)
		return;
	c->push_pid = p->pid;
	c->push_llc = llc;
	c->push_at = now;
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
}

void BPF_STRUCT_OPS(sisu_stopping, struct task_struct *p, bool runnable)
{
	struct sisu_cpu_ctx *c = cpu_ctx(bpf_get_smp_processor_id());
	u64 now = bpf_ktime_get_ns();

	if (!c)
		return;
	account_busy(c, now);
	c->running = 0;
	charge(p, c, now);
	current_stop(p, runnable, now);
	if (!runnable)
		cache_keep(p, c, now);
}

/* A higher class took the CPU: its queue must not wait for it. */
void BPF_STRUCT_OPS(sisu_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	scx_bpf_reenqueue_local();
	kick_idle_for_queue(cpu);
}

/* A new task starts half a slice ahead of its CPU's clock. */
void BPF_STRUCT_OPS(sisu_enable, struct task_struct *p)
{
	struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	s32 cpu = scx_bpf_task_cpu(p);

	if (tctx)
		tctx->frame = cpu;
	p->scx.dsq_vtime = vclock_of(cpu) + slice_ns / 2;
}

s32 BPF_STRUCT_OPS(sisu_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->recent_used_cpu = -1;
	tctx->frame = -1;
	tctx->last_wakee = -1;
	return 0;
}

/* Builds @llc's cpumask from the topology userspace filled in. */
static s32 init_llc_mask(u32 llc)
{
	struct bpf_cpumask *mask, *old;
	u32 width = width_of(llc), i;
	struct llc_mask *m;

	m = bpf_map_lookup_elem(&llc_masks, &llc);
	if (!m)
		return -ENOENT;
	mask = bpf_cpumask_create();
	if (!mask)
		return -ENOMEM;
	bpf_for(i, 0, width) {
		s32 cpu = walk_cpu(llc, 0, i, width);

		if (cpu >= 0)
			bpf_cpumask_set_cpu(cpu, mask);
	}
	old = bpf_kptr_xchg(&m->mask, mask);
	if (old)
		bpf_cpumask_release(old);
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(sisu_init)
{
	u32 n = scx_bpf_nr_cpu_ids(), i;
	u64 j = bpf_jiffies64();
	s32 ret;

	nr_cpus = n;
	/* SIS_PROP's state starts from its boot values, also on CPUs never idle. */
	bpf_for(i, 0, n) {
		struct sisu_cpu_ctx *c = cpu_ctx(i);

		if (c)
			prop_sync(c, j);
	}

	bpf_for(i, 0, nr_llcs) {
		ret = init_llc_mask(i);
		if (ret) {
			scx_bpf_error("cannot build the cpumask of LLC %u: %d", i, ret);
			return ret;
		}
	}

	/* One queue per CPU, its id the CPU's. */
	bpf_for(i, 0, n) {
		ret = scx_bpf_create_dsq(i, -1);
		if (ret) {
			scx_bpf_error("cannot create the queue of CPU %u: %d", i, ret);
			return ret;
		}
	}
	return 0;
}

void BPF_STRUCT_OPS(sisu_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(sisutil_ops,
	       .select_cpu	= (void *)sisu_select_cpu,
	       .enqueue		= (void *)sisu_enqueue,
	       .dispatch	= (void *)sisu_dispatch,
	       .tick		= (void *)sisu_tick,
	       .running		= (void *)sisu_running,
	       .stopping	= (void *)sisu_stopping,
	       .cpu_release	= (void *)sisu_cpu_release,
	       .enable		= (void *)sisu_enable,
	       .init_task	= (void *)sisu_init_task,
	       .init		= (void *)sisu_init,
	       .exit		= (void *)sisu_exit,
	       .name		= "sisutil");
