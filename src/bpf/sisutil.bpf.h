/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the scheduler's BPF files share: the state userspace fills in and
 * reads (defined in main.bpf.c), the maps, and the small accessors every
 * concern needs, inline so that the split into files costs the verifier
 * nothing. Each file declares below what the others call in it.
 *
 *	main.bpf.c	the ops, in the order a task meets them, and the state
 *	placement.bpf.c	where a task runs: select_task_rq_fair()'s wakeup and
 *			fork paths, the scan SIS_UTIL and SIS_PROP limit
 *	migration.bpf.c	moving work between CPUs: newidle, periodic and NUMA
 *			balancing (sched_balance_newidle(), sched_balance_rq())
 *	vtime.bpf.c	who runs next on a CPU: virtual time (update_curr(),
 *			place_entity()), and the rescues sched_ext needs
 *	sis_cache.bpf.c	SIS_CACHE: CPUs kept for short sleepers, which the
 *			scan passes over
 *	sis_current.bpf.c SIS_CURRENT: a short pair's wakee joins its waker
 *			instead of a scan
 *	trace.bpf.c	every wakeup on record: what the placement decided and
 *			what the task then waited, through a ring buffer
 */
#ifndef __SISUTIL_BPF_H
#define __SISUTIL_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "sis_prop.h"

/* --- the state, filled in by userspace ------------------------------ */

/* Topology, filled in by userspace before load. */
extern const volatile u32 nr_llcs;
extern const volatile bool smt_on;
extern const volatile u32 cpu_llc[SISU_MAX_CPUS];

/* Index of the CPU in its LLC's slice of llc_cpus. */
extern const volatile u32 cpu_pos[SISU_MAX_CPUS];

/* Each LLC's CPUs in ascending order, LLC after LLC. */
extern const volatile s32 llc_cpus[SISU_MAX_CPUS];
extern const volatile u32 llc_first[SISU_MAX_LLCS];
extern const volatile u32 llc_width[SISU_MAX_LLCS];

/* Each CPU's core: its hardware threads in ascending order, -1 padded. */
extern const volatile s32 cpu_sibs[SISU_MAX_CPUS][SISU_MAX_SMT];

/*
 * Distances between LLCs (see topology.rs): each LLC's view of every LLC
 * (enum sisu_span), every LLC in the order its CPUs look for work (its
 * own first, then nearest first), and whether a waker may draw a wakee
 * from prev's LLC (the kernel's SD_WAKE_AFFINE, off across NUMA distances
 * beyond node_reclaim_distance).
 */
extern const volatile u8 llc_span[SISU_MAX_LLCS][SISU_MAX_LLCS];
extern const volatile u8 llc_near[SISU_MAX_LLCS][SISU_MAX_LLCS];
extern const volatile u8 llc_affine[SISU_MAX_LLCS][SISU_MAX_LLCS];

/* Each LLC's node, and each node's CPUs in ascending order, node after node. */
extern const volatile u32 llc_node[SISU_MAX_LLCS];
extern const volatile s32 node_cpus[SISU_MAX_CPUS];
extern const volatile u32 node_first[SISU_MAX_LLCS];
extern const volatile u32 node_width[SISU_MAX_LLCS];

/*
 * The kernel's imb_numa_nr of the domain of @llc's CPUs at each span: how
 * many tasks a node may run while another stands idle (see fork_node() and
 * spread()).
 */
extern const volatile u32 llc_numa_imb[SISU_MAX_LLCS][SISU_NR_SPANS];

/* Each node's package (dense indices), and each package's CPUs. */
extern const volatile u32 nr_nodes;
extern const volatile u32 nr_pkgs;
extern const volatile u32 node_pkg[SISU_MAX_LLCS];
extern const volatile u32 pkg_width[SISU_MAX_LLCS];

extern const volatile u64 slice_ns;

/*
 * The kernel's sysctl_sched_migration_cost, read at load: how long a task
 * stays cache-hot, the bound of SIS_CACHE's and SIS_CURRENT's "short".
 */
extern const volatile u64 migration_cost_ns;
extern const volatile bool stats_on;

/*
 * The statistics' costly part, --detail-stats (implies stats_on): whether
 * an idle CPU was there to find when a scan missed (a second look at the
 * LLC), each scan's time, each wakeup's wait to its first run, and the
 * CPUs taken before the wakee ran (SCX_ENQ_IMMED). Together they cost
 * select_cpu about a fifth of its time (docs/performance.md), so the
 * default counts only what a scan did; the lab turns them on.
 */
extern const volatile bool detail_on;

/* Wakeups may target the waker's CPU (see wake_target()). */
extern const volatile bool wake_affine_on;

/* The oldest published LLC load a scan uses (llc_load()). */
extern const volatile u64 depth_ttl_ns;

/* The scheduler's own process, whose threads run first (own_first()). */
extern const volatile u32 own_tgid;

/* Written by userspace at run time (see intf.h). */
extern struct sisu_cfg cfg;
extern struct sisu_llc_ctx llcs[SISU_MAX_LLCS];
extern struct sisu_cpu_ctx cpus[SISU_MAX_CPUS];

/*
 * Whether some CPU's queue may hold a task, as the root domain's
 * "overloaded" flag lets the kernel skip newidle balancing when no
 * runqueue holds more than the task it runs. Below saturation almost
 * every wakeup finds an idle CPU and almost every sleep leaves one, so a
 * CPU running out of work reads this word instead of every queue's
 * length. Set whenever a task is queued; cleared only by an idle CPU
 * about to find every other queue empty (see pull()).
 */
extern u32 overloaded;

/*
 * Whether a CPU's queue may hold a task. Enqueue sets it and asks for the
 * insertion under the CPU's runqueue lock; the CPU's own dispatch clears
 * it, under that lock, when the queue is empty. So to the CPU itself a
 * clear flag means an empty queue, and to any other CPU at worst one that
 * is filling this instant, as a length read a moment earlier would say.
 * Every wakeup and every sleep would otherwise look a queue's length up
 * (a hash-table search in the kernel), though below saturation the queues
 * are nearly always empty. Written only on change: other CPUs read it.
 */
extern u32 may_queue[SISU_MAX_CPUS];

/* The kernel's nr_cpu_ids, read once at init. */
extern u32 nr_cpus;

/*
 * The maps, with named types so that the files that only use them can
 * declare them: the linker takes an extern map whose type matches (and,
 * in libbpf 1.7, only after the object that defines it: see build.rs).
 */

struct stats_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SISU_NR_POLICIES);
	__type(key, u32);
	__type(value, struct sisu_stats);
};
extern struct stats_map stats SEC(".maps");

/* Userspace sets max_entries to the number of LLCs before load. */
struct llc_scans_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SISU_MAX_LLCS);
	__type(key, u32);
	__type(value, struct sisu_llc_scans);
};
extern struct llc_scans_map llc_scans SEC(".maps");

/* What each shadow rule would have done, indexed by enum sisu_policy. */
struct rule_stats_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SISU_NR_POLICIES);
	__type(key, u32);
	__type(value, struct sisu_rule_stats);
};
extern struct rule_stats_map rule_stats SEC(".maps");

/*
 * The shadow rules' verdicts on one scan, made before the active scan
 * claims anything (judge_shadows()). One record per CPU, in a map rather
 * than on the stack, where it would take the call chain from enqueue down
 * to scan_llc() past the verifier's 512 bytes: a placement never nests on
 * its CPU (the kernel calls select_cpu and enqueue with interrupts off).
 */
struct verdicts {
	s32 target;
	bool idle_core;
	u32 rules;			/* in: bits of enum sisu_policy */
	u32 counted;			/* in: ... of those the statistics count */
	u32 prop_shift;			/* in: the walk stands for 2^prop_shift scans in SIS_PROP's books */
	struct sisu_llc_load load;	/* in: the LLC's load for this scan (llc_load()) */
	u32 found;			/* out: bits of the rules that would have found */
	bool any;			/* the walk found an idle CPU */
	u32 walk_examined;		/* CPUs the walk examined */
	u64 walk_ns;			/* ... in this time */
	u64 limit[SISU_NR_POLICIES];	/* each rule's depth limit */
	u32 examined[SISU_NR_POLICIES];	/* CPUs each rule's scan examines */
	/* the active scan, for the trace */
	u32 scan_rule;			/* the rule whose depth limited it */
	u32 scan_limit;			/* that depth */
	u32 scan_examined;		/* CPUs it examined */
};

struct verdicts_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct verdicts);
};
extern struct verdicts_map verdicts_buf SEC(".maps");

/* The trace's records (trace.bpf.c); userspace sizes it before load. */
struct trace_rb_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096 * 1024);
};
extern struct trace_rb_map trace_rb SEC(".maps");

/* What the kernel keeps in task_struct and sched_entity. */
struct task_ctx {
	s32 recent_used_cpu;
	s32 last_wakee;		/* pid of the task it last woke */
	u32 wakee_flips;	/* how often it woke another task than last time */
	u64 flips_decay_at;	/* when wakee_flips was last halved (ns) */
	s32 frame;	/* the CPU whose clock the task's virtual time counts on */
	u64 queued_at;	/* when it was last put in a queue (ns) */
	u32 placed;	/* outcome + 1 of its placement on a CPU found idle, 0 if none */
	u64 slept_at;	/* SIS_CACHE: when it last went to sleep (ns), 0 if awake */
	u64 sleep_avg;	/* ... its average short sleep (ns) */
	u64 ran_at;	/* SIS_CURRENT: when it last switched in (ns), 0 if out */
	u64 run_acc;	/* ... what it ran since it last slept (ns) */
	u64 dur_avg;	/* ... its average run between sleeps (ns) */
	u64 woke_at;	/* when its wakeup was placed (ns), 0 once it ran */
	u32 wake_kind;	/* ... what the placement found (enum sisu_wait) */
	u32 wake_llc;	/* ... in which LLC */
	u32 traced;	/* its wakeup is on record: trace holds what is known so far */
	struct sisu_trace_rec trace;
};

struct task_ctx_map {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
};
extern struct task_ctx_map task_ctxs SEC(".maps");

/*
 * Idle CPUs per LLC and per node, counted on the counting CPU by fork_cpu()
 * (from the idle mask) and spread() (from what CPUs run, count_load()),
 * which also counts tasks per node, and both per package.
 */
struct idle_counts {
	u16 llc[SISU_MAX_LLCS];
	u16 node[SISU_MAX_LLCS];
	u16 node_tasks[SISU_MAX_LLCS];
	u16 pkg[SISU_MAX_LLCS];
	u16 pkg_tasks[SISU_MAX_LLCS];
};

struct idle_counts_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct idle_counts);
};
extern struct idle_counts_map idle_counts SEC(".maps");

/* Each LLC's CPUs as a cpumask, built at init. */
struct llc_mask {
	struct bpf_cpumask __kptr *mask;
};

struct llc_mask_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SISU_MAX_LLCS);
	__type(key, u32);
	__type(value, struct llc_mask);
};
extern struct llc_mask_map llc_masks SEC(".maps");

/* --- accessors ------------------------------------------------------ */

/*
 * Every array indexed at run time goes through MEMBER_VPTR, whose bounds
 * check the verifier can follow whatever the compiler does to the index.
 */
static __always_inline struct sisu_cpu_ctx *cpu_ctx(s32 cpu)
{
	return MEMBER_VPTR(cpus, [cpu]);
}

/* The length of @cpu's queue, looked up only if it may hold a task. */
static __always_inline s32 queue_len(s32 cpu)
{
	u32 *m = MEMBER_VPTR(may_queue, [cpu]);

	return m && !*m ? 0 : scx_bpf_dsq_nr_queued(cpu);
}

static __always_inline u32 llc_of(s32 cpu)
{
	const volatile u32 *v = MEMBER_VPTR(cpu_llc, [cpu]);

	return v ? *v : 0;
}

static __always_inline u32 pos_of(s32 cpu)
{
	const volatile u32 *v = MEMBER_VPTR(cpu_pos, [cpu]);

	return v ? *v : 0;
}

/* The @j-th hardware thread of @cpu's core, or -1. */
static __always_inline s32 sib_of(s32 cpu, u32 j)
{
	const volatile s32 *v = MEMBER_VPTR(cpu_sibs, [cpu][j]);

	return v ? *v : -1;
}

static __always_inline struct sisu_llc_ctx *llc_ctx(u32 llc)
{
	return MEMBER_VPTR(llcs, [llc]);
}

static __always_inline u32 width_of(u32 llc)
{
	const volatile u32 *v = MEMBER_VPTR(llc_width, [llc]);

	return v ? *v : 0;
}

/* The @k-th nearest LLC to @llc: @llc itself first. */
static __always_inline u32 llc_nearest(u32 llc, u32 k)
{
	const volatile u8 *v = MEMBER_VPTR(llc_near, [llc][k]);

	return v ? *v : llc;
}

/* How far LLC @to is from LLC @from (enum sisu_span). */
static __always_inline u32 span_of(u32 from, u32 to)
{
	const volatile u8 *v = MEMBER_VPTR(llc_span, [from][to]);

	return v ? *v : SISU_SPAN_REMOTE;
}

/* Whether the span crosses a NUMA node. */
static __always_inline bool crosses_node(u32 span)
{
	return span >= SISU_SPAN_PACKAGE;
}

static __always_inline bool share_llc(s32 a, s32 b)
{
	return llc_of(a) == llc_of(b);
}

/* @llc's CPUs as a cpumask, or NULL. */
static __always_inline const struct cpumask *llc_cpumask(u32 llc)
{
	struct llc_mask *m = bpf_map_lookup_elem(&llc_masks, &llc);

	return m ? cast_mask(m->mask) : NULL;
}

/*
 * Most tasks may run on every CPU, and for them the mask lookup is skipped.
 * (A migration-disabled task's mask shrinks without its count, but the
 * kernel never asks select_cpu to place one.)
 */
static __always_inline bool allowed(const struct task_struct *p, s32 cpu)
{
	return p->nr_cpus_allowed >= nr_cpus || bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

static __always_inline bool cpu_idle_now(s32 cpu)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool yes = bpf_cpumask_test_cpu(cpu, idle);

	scx_bpf_put_idle_cpumask(idle);
	return yes;
}

/* The shortest slice a low-weight task gets. */
#define MIN_SLICE_NS	200000ULL

/*
 * A task's slice shrinks with its weight below nice 0, so that every run
 * costs about one base slice of virtual time. A low-weight task then runs
 * less often, as its weight says, without waiting longer per run: with
 * full slices a weight-1 task (SCHED_IDLE) waits a hundred slices of every
 * competitor between runs, which under load exceeds the watchdog's limit,
 * and sched_ext unloads a scheduler that leaves a task waiting that long.
 */
static __always_inline u64 task_slice(const struct task_struct *p)
{
	u64 w = p->scx.weight, s, least = slice_ns < MIN_SLICE_NS ? slice_ns : MIN_SLICE_NS;

	if (w >= 100)
		return slice_ns;
	s = slice_ns * w / 100;
	return s < least ? least : s;
}

static __always_inline struct sisu_stats *stats_of(u32 policy)
{
	if (!stats_on)
		return NULL;
	return bpf_map_lookup_elem(&stats, &policy);
}

/* Count @value in histogram @arr; the last slot takes all larger values. */
#define hist_add(arr, value)							\
	do {									\
		u64 __v = (value);						\
		u64 *__slot = MEMBER_VPTR(arr, [__v < SISU_HIST_SLOTS - 1 ?	\
						__v : SISU_HIST_SLOTS - 1]);	\
		if (__slot)							\
			(*__slot)++;						\
	} while (0)

/* Count in a 2x2 matrix indexed by two conditions. */
#define matrix_add(arr, a, b)							\
	do {									\
		u64 *__cell = MEMBER_VPTR(arr, [(a) ? 1 : 0][(b) ? 1 : 0]);	\
		if (__cell)							\
			(*__cell)++;						\
	} while (0)

/* The current policy, defended against a torn or bogus write. */
static __always_inline u32 active_policy(void)
{
	u32 pol = cfg.policy;

	return pol < SISU_NR_POLICIES ? pol : SISU_POL_UTIL;
}

/*
 * SIS_PROP's per-CPU state restarts from boot values whenever userspace
 * switches policy (cfg.epoch changes), so that averages learnt under one
 * regime do not steer the next.
 */
static __always_inline void prop_sync(struct sisu_cpu_ctx *c, u64 now_jiffies)
{
	u32 epoch = cfg.epoch;

	if (c->prop_epoch != epoch) {
		sis_prop_reset(c, now_jiffies);
		c->prop_epoch = epoch;
	}
}

/*
 * The @i-th CPU of the wrap-around walk over @llc that begins at position
 * @start (for_each_cpu_wrap from target + 1), or -1.
 */
static __always_inline s32 walk_cpu(u32 llc, u32 start, u32 i, u32 width)
{
	const volatile u32 *first = MEMBER_VPTR(llc_first, [llc]);
	const volatile s32 *cpu;
	u32 idx = start + i;

	if (idx >= width)
		idx -= width;
	if (!first)
		return -1;
	cpu = MEMBER_VPTR(llc_cpus, [idx + *first]);
	return cpu ? *cpu : -1;
}

static __always_inline u32 node_of(u32 llc)
{
	const volatile u32 *v = MEMBER_VPTR(llc_node, [llc]);

	return v ? *v : 0;
}

static __always_inline u32 idle_of(const u16 *counts, u32 i)
{
	return i < SISU_MAX_LLCS ? counts[i & (SISU_MAX_LLCS - 1)] : 0;
}

static __always_inline u32 pkg_of(u32 node)
{
	const volatile u32 *v = MEMBER_VPTR(node_pkg, [node]);

	return v ? *v : 0;
}

/* What a CPU runs and queues, as the kernel's nr_running: the load here. */
static __always_inline u32 nr_running(s32 cpu, bool current_cpu)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	s32 n = queue_len(cpu);

	if (current_cpu)
		n += scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL);
	if (c && c->running)
		n++;
	return n > 0 ? n : 0;
}

/* The kernel's imbalance_pct above the LLC: 17% of slack. */
#define IMBALANCE_PCT	117

/* The kernel's NUMA_IMBALANCE_MIN: the idle-CPU difference between nodes left alone. */
#define NUMA_IMBALANCE_MIN	2

/* A CPU's virtual clock (see vtime.bpf.c). */
static __always_inline u64 vclock_of(s32 cpu)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);

	return c ? c->vclock : 0;
}

/* Where a placement sends a task, and what it found there. */
struct pick {
	s32 cpu;
	u32 outcome;	/* enum sisu_outcome */
	u32 wait;	/* enum sisu_wait: what its wait will be counted as */
	bool waker;	/* in: the running task woke it (select_cpu), so SIS_CURRENT may apply */
	bool judged;	/* the adaptive rule judged its scan: its wait is timed */
};

static __always_inline void pick_idle(struct pick *pk, s32 cpu, u32 outcome)
{
	pk->cpu = cpu;
	pk->outcome = outcome;
}

/* --- what each file offers the others ------------------------------- */

/* placement.bpf.c */
__hidden s32 wake_target(struct task_struct *p, s32 prev, u64 wake_flags);
__noinline void select_idle_sibling(struct task_struct *p __arg_trusted, s32 prev, s32 target,
				    u32 pol, struct pick *pk);
__hidden void pick_builtin(struct task_struct *p, s32 prev, u64 wake_flags, struct pick *pk);
__noinline s32 fork_cpu(s32 prev);
__hidden void count_wakeup(struct sisu_stats *st, s32 prev, s32 target, const struct pick *pk,
			  bool queued);
__hidden bool place_queued_wakeup(struct task_struct *p, s32 cpu, u64 enq_flags);
__hidden u64 note_placed(struct task_struct *p, const struct pick *pk);
__hidden bool handed_back(struct task_struct *p, u64 enq_flags);
__hidden void note_wake(struct task_struct *p, const struct pick *pk, u32 pol, s32 prev,
			s32 target);
__hidden void wait_end(struct task_struct *p, u64 now);
__hidden void idle_enter(s32 cpu, struct sisu_cpu_ctx *c);
__hidden void idle_exit(struct sisu_cpu_ctx *c, u64 now);

/* migration.bpf.c */
__hidden void kick_idle_for_queue(s32 cpu);
__noinline bool pull(s32 cpu, s32 least);
__noinline bool balance(s32 cpu, s32 own);
__noinline s32 spread(s32 cpu);
__hidden bool push_marked(const struct task_struct *p, s32 cpu);
__hidden bool push_running(struct task_struct *p, s32 cpu, u64 enq_flags);

/* sis_current.bpf.c */
__hidden void current_run(struct task_struct *p, u64 now);
__hidden void current_stop(struct task_struct *p, bool runnable, u64 now);
__hidden bool current_pick(struct task_struct *p, s32 target, u32 util_nr, struct pick *pk,
			   struct sisu_stats *st);

/* trace.bpf.c */
__hidden bool trace_note(struct task_struct *p, struct task_ctx *tctx, const struct pick *pk,
			 u32 pol);
__hidden void trace_emit(struct task_struct *p, struct task_ctx *tctx, u64 wait_ns);

/* sis_cache.bpf.c */
__hidden void cache_keep(struct task_struct *p, struct sisu_cpu_ctx *c, u64 now);
__hidden bool cache_kept_from(const struct task_struct *p, s32 cpu, u64 now);
__hidden void cache_woke(struct task_struct *p, const struct pick *pk, struct sisu_stats *st);

/* vtime.bpf.c */
__hidden u64 rebase(struct task_struct *p, s32 cpu);
__hidden u64 bound_credit(u64 vtime, s32 cpu);
__hidden void advance_clock(s32 cpu, u64 vtime);
__hidden u64 charge(struct task_struct *p, struct sisu_cpu_ctx *c, u64 now);
__hidden bool in_rcu_reader(const struct task_struct *p);
__hidden void queue_reader_as_nice0(s32 cpu, u64 *vtime, u64 *slice);
__hidden bool keep_prev(struct task_struct *prev, s32 cpu);
__hidden bool rescue_starving(s32 cpu);
__hidden bool own_first(struct task_struct *p, u64 enq_flags);

#endif /* __SISUTIL_BPF_H */
