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
 * per CPU and kept here (see sis_prop.h). Scan statistics are counted per
 * CPU and per policy.
 *
 * Reading order: topology and state, helpers, the scan, then the ops in
 * the order a task meets them.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "sis_prop.h"

char _license[] SEC("license") = "GPL";

/* Topology, filled in by userspace before load. */
const volatile u32 nr_llcs = 1;
const volatile bool smt_on;
const volatile u32 cpu_llc[SISU_MAX_CPUS];
/* Index of the CPU in its LLC's slice of llc_cpus. */
const volatile u32 cpu_pos[SISU_MAX_CPUS];
/* Each LLC's CPUs in ascending order, LLC after LLC. */
const volatile s32 llc_cpus[SISU_MAX_CPUS];
const volatile u32 llc_first[SISU_MAX_LLCS];
const volatile u32 llc_width[SISU_MAX_LLCS];
/* Each CPU's core: its hardware threads in ascending order, -1 padded. */
const volatile s32 cpu_sibs[SISU_MAX_CPUS][SISU_MAX_SMT];
/*
 * Distances between LLCs (see topology.rs): each LLC's view of every LLC
 * (enum sisu_span), every LLC in the order its CPUs look for work (its
 * own first, then nearest first), and whether a waker may draw a wakee
 * from prev's LLC (the kernel's SD_WAKE_AFFINE, off across NUMA distances
 * beyond node_reclaim_distance).
 */
const volatile u8 llc_span[SISU_MAX_LLCS][SISU_MAX_LLCS];
const volatile u8 llc_near[SISU_MAX_LLCS][SISU_MAX_LLCS];
const volatile u8 llc_affine[SISU_MAX_LLCS][SISU_MAX_LLCS];
/* Each LLC's node, and each node's CPUs in ascending order, node after node. */
const volatile u32 llc_node[SISU_MAX_LLCS];
const volatile s32 node_cpus[SISU_MAX_CPUS];
const volatile u32 node_first[SISU_MAX_LLCS];
const volatile u32 node_width[SISU_MAX_LLCS];
/*
 * The kernel's imb_numa_nr of the domain of @llc's CPUs at each span: how
 * many tasks a node may run while another stands idle (see fork_node() and
 * spread()).
 */
const volatile u32 llc_numa_imb[SISU_MAX_LLCS][SISU_NR_SPANS];
/* Each node's package (dense indices), and each package's CPUs. */
const volatile u32 nr_nodes = 1;
const volatile u32 nr_pkgs = 1;
const volatile u32 node_pkg[SISU_MAX_LLCS];
const volatile u32 pkg_width[SISU_MAX_LLCS];

const volatile u64 slice_ns = 3000000;
const volatile bool stats_on = true;
/* Wakeups may target the waker's CPU (see wake_target()). */
const volatile bool wake_affine_on = true;

/* Written by userspace at run time (see intf.h). */
struct sisu_cfg cfg = {
	.policy = SISU_POL_UTIL,
	.shadow = SISU_NO_SHADOW,
	.epoch = 1,
};
struct sisu_llc_ctx llcs[SISU_MAX_LLCS];
struct sisu_cpu_ctx cpus[SISU_MAX_CPUS];

/*
 * Whether some CPU's queue may hold a task, as the root domain's
 * "overloaded" flag lets the kernel skip newidle balancing when no
 * runqueue holds more than the task it runs. Below saturation almost
 * every wakeup finds an idle CPU and almost every sleep leaves one, so a
 * CPU running out of work reads this word instead of every queue's
 * length. Set whenever a task is queued; cleared only by an idle CPU
 * about to find every other queue empty (see pull()).
 */
u32 overloaded;

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
u32 may_queue[SISU_MAX_CPUS];

/* The kernel's nr_cpu_ids, read once at init. */
u32 nr_cpus = SISU_MAX_CPUS;

UEI_DEFINE(uei);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SISU_NR_POLICIES);
	__type(key, u32);
	__type(value, struct sisu_stats);
} stats SEC(".maps");

/* Userspace sets max_entries to the number of LLCs before load. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SISU_MAX_LLCS);
	__type(key, u32);
	__type(value, struct sisu_llc_scans);
} llc_scans SEC(".maps");

/* What the kernel keeps in task_struct and sched_entity. */
struct task_ctx {
	s32 recent_used_cpu;
	s32 last_wakee;		/* pid of the task it last woke */
	u32 wakee_flips;	/* how often it woke another task than last time */
	u64 flips_decay_at;	/* when wakee_flips was last halved (ns) */
	s32 frame;	/* the CPU whose clock the task's virtual time counts on */
	u64 queued_at;	/* when it was last put in a queue (ns) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct idle_counts);
} idle_counts SEC(".maps");

/* Each LLC's CPUs as a cpumask, built at init. */
struct llc_mask {
	struct bpf_cpumask __kptr *mask;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SISU_MAX_LLCS);
	__type(key, u32);
	__type(value, struct llc_mask);
} llc_masks SEC(".maps");

/* No limit on the number of CPUs a scan may examine. */
#define SCAN_ALL	((u32)-1)

/*
 * Every array indexed at run time goes through MEMBER_VPTR, whose bounds
 * check the verifier can follow whatever the compiler does to the index.
 */
static struct sisu_cpu_ctx *cpu_ctx(s32 cpu)
{
	return MEMBER_VPTR(cpus, [cpu]);
}

/* The length of @cpu's queue, looked up only if it may hold a task. */
static s32 queue_len(s32 cpu)
{
	u32 *m = MEMBER_VPTR(may_queue, [cpu]);

	return m && !*m ? 0 : scx_bpf_dsq_nr_queued(cpu);
}

static u32 llc_of(s32 cpu)
{
	const volatile u32 *v = MEMBER_VPTR(cpu_llc, [cpu]);

	return v ? *v : 0;
}

static u32 pos_of(s32 cpu)
{
	const volatile u32 *v = MEMBER_VPTR(cpu_pos, [cpu]);

	return v ? *v : 0;
}

/* The @j-th hardware thread of @cpu's core, or -1. */
static s32 sib_of(s32 cpu, u32 j)
{
	const volatile s32 *v = MEMBER_VPTR(cpu_sibs, [cpu][j]);

	return v ? *v : -1;
}

static struct sisu_llc_ctx *llc_ctx(u32 llc)
{
	return MEMBER_VPTR(llcs, [llc]);
}

static u32 width_of(u32 llc)
{
	const volatile u32 *v = MEMBER_VPTR(llc_width, [llc]);

	return v ? *v : 0;
}

/* The @k-th nearest LLC to @llc: @llc itself first. */
static u32 llc_nearest(u32 llc, u32 k)
{
	const volatile u8 *v = MEMBER_VPTR(llc_near, [llc][k]);

	return v ? *v : llc;
}

/* How far LLC @to is from LLC @from (enum sisu_span). */
static u32 span_of(u32 from, u32 to)
{
	const volatile u8 *v = MEMBER_VPTR(llc_span, [from][to]);

	return v ? *v : SISU_SPAN_REMOTE;
}

/* Whether the span crosses a NUMA node. */
static bool crosses_node(u32 span)
{
	return span >= SISU_SPAN_PACKAGE;
}

static bool share_llc(s32 a, s32 b)
{
	return llc_of(a) == llc_of(b);
}

/* @llc's CPUs as a cpumask, or NULL. */
static const struct cpumask *llc_cpumask(u32 llc)
{
	struct llc_mask *m = bpf_map_lookup_elem(&llc_masks, &llc);

	return m ? cast_mask(m->mask) : NULL;
}

/*
 * Most tasks may run on every CPU, and for them the mask lookup is skipped.
 * (A migration-disabled task's mask shrinks without its count, but the
 * kernel never asks select_cpu to place one.)
 */
static bool allowed(const struct task_struct *p, s32 cpu)
{
	return p->nr_cpus_allowed >= nr_cpus || bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

static bool cpu_idle_now(s32 cpu)
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
static u64 task_slice(const struct task_struct *p)
{
	u64 w = p->scx.weight, s, least = slice_ns < MIN_SLICE_NS ? slice_ns : MIN_SLICE_NS;

	if (w >= 100)
		return slice_ns;
	s = slice_ns * w / 100;
	return s < least ? least : s;
}

static struct sisu_stats *stats_of(u32 policy)
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
static u32 active_policy(void)
{
	u32 pol = cfg.policy;

	return pol < SISU_NR_POLICIES ? pol : SISU_POL_UTIL;
}

/*
 * SIS_PROP's per-CPU state restarts from boot values whenever userspace
 * switches policy (cfg.epoch changes), so that averages learnt under one
 * regime do not steer the next.
 */
static void prop_sync(struct sisu_cpu_ctx *c, u64 now_jiffies)
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
static s32 walk_cpu(u32 llc, u32 start, u32 i, u32 width)
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

/* Step of @cpu in the walk that begins at @start. */
static u32 walk_step(s32 cpu, u32 start, u32 width)
{
	u32 pos = pos_of(cpu);

	return pos >= start ? pos - start : pos + width - start;
}

/*
 * The kernel checks each core once, at the first of its allowed threads
 * the walk meets: has an allowed sibling of @cpu come before step @i?
 */
static bool core_seen(const struct task_struct *p, s32 cpu, u32 start, u32 width, u32 i)
{
	u32 j;

	bpf_for(j, 0, SISU_MAX_SMT) {
		s32 sib = sib_of(cpu, j);

		if (sib < 0)
			break;
		if (sib != cpu && allowed(p, sib) && walk_step(sib, start, width) < i)
			return true;
	}
	return false;
}

/*
 * select_idle_core(): is the whole core of @cpu idle? On the way, remember
 * the first idle allowed thread as a fallback, and stop looking at a busy
 * core once a fallback is known.
 */
static __always_inline bool core_idle(const struct task_struct *p, s32 cpu, const struct cpumask *idle,
		      s32 *fallback, u32 *examined)
{
	bool all = true;
	u32 j;

	bpf_for(j, 0, SISU_MAX_SMT) {
		s32 sib = sib_of(cpu, j);

		if (sib < 0)
			break;
		(*examined)++;
		if (!bpf_cpumask_test_cpu(sib, idle)) {
			all = false;
			if (*fallback >= 0)
				break;
			continue;
		}
		if (*fallback < 0 && allowed(p, sib))
			*fallback = sib;
	}
	return all;
}

/*
 * Is @cpu idle? An active scan claims the CPU it finds, as the kernel's
 * scan takes the first idle CPU it probes; a shadow scan only looks.
 */
static bool probe(s32 cpu, bool claim, const struct cpumask *idle)
{
	if (claim)
		return scx_bpf_test_and_clear_cpu_idle(cpu);
	return bpf_cpumask_test_cpu(cpu, idle);
}

struct scan {
	s32 target;	/* the walk begins after it, in its LLC */
	u32 budget;	/* CPUs the scan may examine */
	bool idle_core;	/* looking for a whole idle core */
	bool claim;	/* the active scan claims what it finds; a shadow only looks */
	s32 found;	/* the idle CPU, or -1 */
	u32 examined;	/* CPUs whose idle state was looked at */
};

/*
 * select_idle_cpu()'s loop over the target's LLC: the CPUs @p may use, in
 * wrap-around order from target + 1. Looking for an idle core, every core
 * is checked; otherwise at most budget CPUs are.
 *
 * A global function, so that the verifier walks its loops once, on their
 * own, instead of once for every path of every caller into it (the shadow
 * and the active scan, from select_cpu and from enqueue): with SMT on, the
 * inlined scans came close to the verifier's million instructions.
 */
__noinline void scan_llc(struct task_struct *p __arg_trusted, struct scan *sc)
{
	u32 llc, width, budget, examined = 0, start, i;
	const struct cpumask *idle;
	struct sisu_llc_ctx *lc;
	bool idle_core, claim;
	s32 fallback = -1;

	if (!sc)
		return;
	llc = llc_of(sc->target);
	width = width_of(llc);
	budget = sc->budget;
	idle_core = sc->idle_core;
	claim = sc->claim;

	/*
	 * Keep the verifier from tracking the counter's exact value, which
	 * would make every iteration a new state.
	 */
	__sink(examined);
	__sink(fallback);
	sc->found = -1;
	sc->examined = 0;
	if (!width)
		return;
	start = pos_of(sc->target) + 1;
	if (start >= width)
		start = 0;

	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, width) {
		s32 cpu = walk_cpu(llc, start, i, width);

		if (cpu < 0)
			break;
		if (!allowed(p, cpu))
			continue;
		if (idle_core) {
			if (core_seen(p, cpu, start, width, i))
				continue;
			if (core_idle(p, cpu, idle, &fallback, &examined) &&
			    probe(cpu, claim, idle)) {
				sc->found = cpu;
				goto out;
			}
			continue;
		}
		if (examined >= budget)
			goto out;
		examined++;
		if (probe(cpu, claim, idle)) {
			sc->found = cpu;
			goto out;
		}
	}

	if (!idle_core)
		goto out;
	/* No idle core after all: drop the hint, take the first idle thread. */
	lc = llc_ctx(llc);
	if (claim && lc && lc->has_idle_cores)
		lc->has_idle_cores = 0;
	if (fallback >= 0 && probe(fallback, claim, idle))
		sc->found = fallback;
out:
	scx_bpf_put_idle_cpumask(idle);
	sc->examined = examined;
}

/*
 * Is any CPU of @llc that @p may use idle? (The "idle CPU in LLC" column.)
 * Two cpumask operations for a task that may use the whole LLC, a walk
 * over the LLC otherwise.
 */
static bool llc_has_idle(const struct task_struct *p, u32 llc, const struct cpumask *idle)
{
	const struct cpumask *mask = llc_cpumask(llc);
	u32 width = width_of(llc), i;

	if (mask && bpf_cpumask_subset(mask, p->cpus_ptr))
		return bpf_cpumask_intersects(mask, idle);

	bpf_for(i, 0, width) {
		s32 cpu = walk_cpu(llc, 0, i, width);

		if (cpu < 0)
			break;
		if (allowed(p, cpu) && bpf_cpumask_test_cpu(cpu, idle))
			return true;
	}
	return false;
}

struct depth {
	u64 limit;	/* the depth the policy computes (statistics) */
	u32 budget;	/* CPUs the scan may examine */
	bool scan;	/* whether the scan runs at all */
};

/*
 * The depth @pol sets for a scan of @llc. @wc is the waking CPU's record,
 * whose SIS_PROP state the caller has already aged. Pure: the shadow
 * policy calls it too.
 */
static void policy_depth(u32 pol, u32 llc, bool idle_core, const struct sisu_cpu_ctx *wc,
			 struct depth *d)
{
	struct sisu_llc_ctx *lc = llc_ctx(llc);
	u32 width = width_of(llc), small = cfg.small_llc;
	u64 nr;

	d->limit = width;
	d->budget = SCAN_ALL;
	d->scan = true;

	switch (pol) {
	case SISU_POL_UTIL:
		/*
		 * A depth of 0 means the LLC is too busy to be worth any
		 * scan, idle core or not. The review's small-LLC rule turns
		 * any other depth into a full scan.
		 */
		nr = lc ? lc->nr_idle_scan : width;
		if (nr && small && width <= small)
			nr = width;
		d->limit = nr;
		d->scan = nr > 0;
		if (!idle_core)
			d->budget = nr;
		break;
	case SISU_POL_PROP:
		/* The idle-core search is not limited by SIS_PROP. */
		if (idle_core || !wc)
			break;
		nr = sis_prop_nr(width, wc->wake_avg_idle, wc->avg_scan_cost);
		d->limit = nr;
		d->budget = nr - 1 < SCAN_ALL ? nr - 1 : SCAN_ALL;
		break;
	case SISU_POL_NONE:
		d->limit = 0;
		d->scan = false;
		break;
	default:
		break;
	}
}

/* The same outcome, counted against the LLC that was scanned. */
static void count_llc_scan(u32 llc, bool existed, bool found)
{
	struct sisu_llc_scans *ls = bpf_map_lookup_elem(&llc_scans, &llc);

	if (!ls)
		return;
	ls->scans++;
	matrix_add(ls->found, existed, found);
}

/*
 * Step 5 of the placement: scan the target's LLC under the active policy,
 * judge the shadow policy on the same idle state, and count what happened.
 */
static s32 select_idle_cpu(struct task_struct *p, s32 target, bool idle_core, u32 pol,
			   struct sisu_stats *st)
{
	u32 llc = llc_of(target), shadow = cfg.shadow;
	bool prop_books, has_shadow, timed, existed = false, shadow_found = false;
	struct sisu_cpu_ctx *wc = cpu_ctx(bpf_get_smp_processor_id());
	struct depth d, sd = {};
	struct scan sc = { .target = target, .idle_core = idle_core, .claim = true, .found = -1 };
	struct scan ssc = { .target = target, .idle_core = idle_core };
	const struct cpumask *idle;
	u64 t0 = 0, t = 0;

	has_shadow = st && shadow < SISU_POL_BUILTIN && shadow != pol;
	/* SIS_PROP keeps its books whenever it is active or watched. */
	prop_books = wc && !idle_core &&
		     (pol == SISU_POL_PROP || (has_shadow && shadow == SISU_POL_PROP));
	if (prop_books) {
		u64 j = bpf_jiffies64();

		prop_sync(wc, j);
		sis_prop_age(wc, j);
	}

	policy_depth(pol, llc, idle_core, wc, &d);
	if (has_shadow)
		policy_depth(shadow, llc, idle_core, wc, &sd);

	/* The shadow looks before the active scan claims anything. */
	if (has_shadow && sd.scan) {
		ssc.budget = sd.budget;
		scan_llc(p, &ssc);
		shadow_found = ssc.found >= 0;
	}
	timed = st || prop_books;
	if (d.scan) {
		if (timed)
			t0 = bpf_ktime_get_ns();
		sc.budget = d.budget;
		scan_llc(p, &sc);
		if (timed)
			t = bpf_ktime_get_ns() - t0;
		if (prop_books)
			sis_prop_charge(wc, t);
	}
	/*
	 * Whatever a scan found was idle. Otherwise nothing was claimed, and
	 * the idle mask still says whether an idle CPU was there to find.
	 */
	if (st && sc.found < 0 && !shadow_found) {
		idle = scx_bpf_get_idle_cpumask();
		existed = llc_has_idle(p, llc, idle);
		scx_bpf_put_idle_cpumask(idle);
	} else {
		existed = sc.found >= 0 || shadow_found;
	}

	if (st) {
		bool found = sc.found >= 0;

		st->scans++;
		st->scan_ns += t;
		if (idle_core)
			st->core_scans++;
		hist_add(st->examined, sc.examined);
		hist_add(st->limit, d.limit);
		matrix_add(st->found, existed, found);
		count_llc_scan(llc, existed, found);
		if (has_shadow) {
			hist_add(st->shadow_limit, sd.limit);
			if (existed)
				matrix_add(st->shadow, found, shadow_found);
		}
	}
	return sc.found;
}

/* select_idle_smt(): an idle sibling of @prev that @p may use. */
static s32 idle_smt_sibling(const struct task_struct *p, s32 prev)
{
	u32 j;

	bpf_for(j, 0, SISU_MAX_SMT) {
		s32 sib = sib_of(prev, j);

		if (sib < 0)
			break;
		if (sib != prev && allowed(p, sib) && scx_bpf_test_and_clear_cpu_idle(sib))
			return sib;
	}
	return -1;
}

struct pick {
	s32 cpu;
	u32 outcome;	/* enum sisu_outcome */
};

static void pick_idle(struct pick *pk, s32 cpu, u32 outcome)
{
	pk->cpu = cpu;
	pk->outcome = outcome;
}

/*
 * select_idle_sibling(), in the kernel's order. Global, as scan_llc() is:
 * select_cpu and enqueue (for queued wakeups) both place wakeups, and the
 * verifier walks it once instead of in each.
 */
__noinline void select_idle_sibling(struct task_struct *p __arg_trusted, s32 prev,
					     s32 target, u32 pol, struct pick *pk)
{
	struct sisu_llc_ctx *lc = llc_ctx(llc_of(target));
	struct sisu_stats *st = stats_of(pol);
	bool idle_core = false;
	struct task_ctx *tctx;
	s32 recent = -1, cpu;

	if (!pk)
		return;

	/*
	 * With no idle CPU found, p waits on target. The kernel's later
	 * fallbacks to prev and recent_used_cpu only hold CPUs that the steps
	 * below found idle but outside target's cluster; with no cluster
	 * level those steps take them at once.
	 */
	pick_idle(pk, target, SISU_OUT_BUSY);

	/* The waker's CPU is busy running it, unless the idle task wakes p. */
	if (!(target == bpf_get_smp_processor_id() && bpf_get_current_task_btf()->pid) &&
	    allowed(p, target) && scx_bpf_test_and_clear_cpu_idle(target))
		return pick_idle(pk, target, SISU_OUT_TARGET);

	if (prev != target && share_llc(prev, target) && allowed(p, prev) &&
	    scx_bpf_test_and_clear_cpu_idle(prev))
		return pick_idle(pk, prev, SISU_OUT_PREV);

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (tctx) {
		recent = tctx->recent_used_cpu;
		tctx->recent_used_cpu = prev;
	}
	if (recent >= 0 && recent != prev && recent != target && share_llc(recent, target) &&
	    allowed(p, recent) && scx_bpf_test_and_clear_cpu_idle(recent))
		return pick_idle(pk, recent, SISU_OUT_RECENT);

	if (smt_on) {
		idle_core = lc && lc->has_idle_cores;
		if (!idle_core && share_llc(prev, target)) {
			cpu = idle_smt_sibling(p, prev);
			if (cpu >= 0)
				return pick_idle(pk, cpu, SISU_OUT_SMT);
		}
	}

	cpu = select_idle_cpu(p, target, idle_core, pol, st);
	if (cpu >= 0)
		pick_idle(pk, cpu, SISU_OUT_SCAN);
}

/* The built-in policy, as a baseline arm. */
static void pick_builtin(struct task_struct *p, s32 prev, u64 wake_flags, struct pick *pk)
{
	bool is_idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev, wake_flags, &is_idle);

	if (!is_idle)
		return pick_idle(pk, cpu, SISU_OUT_BUSY);
	pick_idle(pk, cpu, cpu == prev ? SISU_OUT_PREV : SISU_OUT_SCAN);
}

/* What a CPU runs and queues, as the kernel's nr_running: the load here. */
static u32 nr_running(s32 cpu, bool current_cpu)
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

/*
 * Whether the node of @llc is overloaded as the kernel's group_is_overloaded()
 * decides it at the NUMA level: more tasks run and wait there than it has
 * CPUs, and they keep its CPUs busy,
 *
 *	capacity * 100 < util * imbalance_pct
 *
 * with capacity SISU_CAPACITY per CPU and util the sum of its LLCs'
 * utilisation (PELT-like, from userspace). A moment's extra task on a node
 * that still has room on average is not worth taking away from its memory.
 * A CPU claimed for a queued task counts as taken, as the idle mask would
 * not say. A global function: the verifier checks its loops once, not at
 * every step of the caller's.
 */
__noinline bool node_crowded(u32 llc)
{
	const volatile u32 *node = MEMBER_VPTR(llc_node, [llc]), *first, *width;
	u32 tasks = 0, n, i, k;
	u64 util = 0;

	if (!node)
		return false;
	first = MEMBER_VPTR(node_first, [*node]);
	width = MEMBER_VPTR(node_width, [*node]);
	if (!first || !width)
		return false;
	n = *width;
	bpf_for(i, 0, n) {
		const volatile s32 *cpu = MEMBER_VPTR(node_cpus, [*first + i]);

		if (!cpu)
			break;
		tasks += nr_running(*cpu, false);
	}
	if (tasks <= n)
		return false;
	/* The node's LLCs lead @llc's nearest. */
	bpf_for(k, 0, nr_llcs) {
		u32 other = llc_nearest(llc, k);
		struct sisu_llc_ctx *lc = llc_ctx(other);

		if (span_of(llc, other) > SISU_SPAN_NODE)
			break;
		if (lc)
			util += lc->sum_util;
	}
	return (u64)n * SISU_CAPACITY * 100 < util * IMBALANCE_PCT;
}

/* An idle CPU of the other LLCs, nearest to @llc first, claimed; or -1. */
static s32 pick_idle_nearest(u32 llc)
{
	u32 k;

	bpf_for(k, 1, nr_llcs) {
		const struct cpumask *mask = llc_cpumask(llc_nearest(llc, k));
		s32 cpu;

		if (!mask)
			break;
		cpu = scx_bpf_pick_idle_cpu(mask, 0);
		if (cpu >= 0)
			return cpu;
	}
	return -1;
}

/*
 * An idle CPU to take work queued on @cpu, nearest first: the same LLC,
 * then the LLCs in order of distance. Claimed, so that wakeups do not also
 * pick it. A CPU across a node is woken only when no nearer one is idle,
 * which is also when its pull may take the work (pull_from_llc()).
 */
static s32 claim_idle_near(s32 cpu)
{
	u32 llc = llc_of(cpu), width = width_of(llc), i;

	bpf_for(i, 0, width) {
		s32 c = walk_cpu(llc, 0, i, width);

		if (c < 0)
			break;
		if (c != cpu && scx_bpf_test_and_clear_cpu_idle(c))
			return c;
	}
	return pick_idle_nearest(llc);
}

/*
 * Work waits in @cpu's queue while @cpu is busy: wake an idle CPU, which
 * will pull it, as the kernel's nohz balancer does from a busy CPU's tick.
 */
static void kick_idle_for_queue(s32 cpu)
{
	s32 idle;

	if (queue_len(cpu) <= 0)
		return;
	idle = claim_idle_near(cpu);
	if (idle >= 0) {
		/*
		 * An idle pull may have cleared the flag just before this task
		 * reached the queue: the CPU woken for it must look.
		 */
		overloaded = 1;
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
	}
}

/* The longest queue of @llc, other than @cpu's, holding at least @least. */
static s32 busiest_of(s32 cpu, u32 llc, s32 least)
{
	u32 width = width_of(llc), i;
	s32 busiest = -1, most = least - 1;

	bpf_for(i, 0, width) {
		s32 c = walk_cpu(llc, 0, i, width);
		s32 n;

		if (c < 0)
			break;
		n = queue_len(c);
		if (c != cpu && n > most) {
			most = n;
			busiest = c;
		}
	}
	return busiest;
}

enum pull_result {
	PULL_NONE,	/* no queue held enough tasks */
	PULL_STUCK,	/* some did, but none that may run here */
	PULL_LEFT,	/* some did, but their node has CPUs enough for them */
	PULL_DONE,
};

/*
 * Move one task @cpu may run from the busiest queue of @llc holding at
 * least @least tasks. Across nodes, only from an overloaded node: the
 * kernel's NUMA balancing moves tasks off one, but leaves the imbalance
 * between nodes with CPUs to spare alone (adjust_numa_imbalance()), and
 * the node's own balancing runs first, so a task waits for a CPU near its
 * memory rather than move away from it.
 */
static enum pull_result pull_from_llc(s32 cpu, u32 llc, s32 least, bool far)
{
	u32 width = width_of(llc), i;
	s32 busiest = busiest_of(cpu, llc, least);

	if (busiest < 0)
		return PULL_NONE;
	if (far && !node_crowded(llc))
		return PULL_LEFT;
	if (scx_bpf_dsq_move_to_local(busiest, 0))
		return PULL_DONE;

	/* Nothing there may run here: try the other queues. */
	bpf_for(i, 0, width) {
		s32 c = walk_cpu(llc, 0, i, width);

		if (c < 0)
			break;
		if (c != cpu && c != busiest && queue_len(c) >= least &&
		    scx_bpf_dsq_move_to_local(c, 0))
			return PULL_DONE;
	}
	return PULL_STUCK;
}

static void count_pull(u32 span)
{
	struct sisu_stats *st = stats_of(active_policy());
	u64 *n = st ? MEMBER_VPTR(st->pull, [span]) : NULL;

	if (n)
		(*n)++;
}

/*
 * Newidle balancing: one task from the busiest queue of @cpu's LLC, else
 * of the other LLCs nearest first, from queues holding at least @least
 * tasks (sched_balance_newidle() walking up the domains). An idle
 * CPU (@least 1) clears the overloaded flag before it reads the queues
 * and sets it again if any held a task: a task queued after a queue was
 * read sets the flag after the clear, so the flag ends clear only when
 * every queue was seen empty. Global, like balance(): the verifier checks
 * their loops once, apart from the rest of dispatch.
 */
__noinline bool pull(s32 cpu, s32 least)
{
	u32 llc = llc_of(cpu), k;
	bool seen = false, done = false;

	if (least == 1)
		__sync_fetch_and_and(&overloaded, 0);
	bpf_for(k, 0, nr_llcs) {
		u32 from = llc_nearest(llc, k), span = span_of(llc, from);
		enum pull_result r;

		/*
		 * A busy CPU evens out waits, which is worth a migration within
		 * a node but not across one: there only balance() moves work.
		 */
		if (least > 1 && crosses_node(span))
			break;
		r = pull_from_llc(cpu, from, least, crosses_node(span));

		seen |= r != PULL_NONE;
		if (r == PULL_DONE) {
			count_pull(span);
			done = true;
			break;
		}
	}
	if (seen && least == 1)
		overloaded = 1;
	return done;
}

/*
 * The waker counts how often it wakes a different task than the last
 * one, halved every second: record_wakee() in the kernel.
 */
static u32 record_wakee(struct task_struct *waker, const struct task_struct *wakee)
{
	struct task_ctx *w = bpf_task_storage_get(&task_ctxs, waker, 0, 0);
	u64 now = bpf_ktime_get_ns();

	if (!w)
		return 0;
	if (now - w->flips_decay_at > 1000000000ULL) {
		w->wakee_flips >>= 1;
		w->flips_decay_at = now;
	}
	if (w->last_wakee != wakee->pid) {
		w->last_wakee = wakee->pid;
		w->wakee_flips++;
	}
	return w->wakee_flips;
}

/*
 * wake_wide(): when one of waker and wakee switches partners at least an
 * LLC's width of times and the other that many times more again, they
 * are part of a one-to-many fan-out, and pulling every wakee to the
 * waker's CPU would pile them up there: such wakeups stay with prev.
 */
static bool wake_wide(const struct task_struct *p, u32 master, s32 this_cpu)
{
	struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
	u32 slave = tctx ? tctx->wakee_flips : 0, factor = width_of(llc_of(this_cpu));

	if (master < slave) {
		u32 t = master;

		master = slave;
		slave = t;
	}
	return slave >= factor && master >= slave * factor;
}

/*
 * The kernel weighs wake-affine in the lowest domain that spans both the
 * waker's CPU and prev, and NUMA domains beyond node_reclaim_distance
 * lack SD_WAKE_AFFINE: a wakee whose prev is that far keeps prev.
 */
static bool affine_between(s32 this, s32 prev)
{
	const volatile u8 *v = MEMBER_VPTR(llc_affine, [llc_of(this)][llc_of(prev)]);

	return v && *v;
}

/*
 * The wake target, wake_affine() for a task woken from another CPU: the
 * waker's CPU (this) rather than prev when this is idle and prev is not
 * (in one LLC), when a synchronous waker is all this runs (it is about to
 * sleep, and the wakee will find its data in this cache), or when this is
 * less loaded than prev. The kernel weighs PELT load; the count of tasks
 * run and queued stands in for it here, with the kernel's margin for
 * prev (imbalance_pct 117: prev wins unless this has ~8% less). A task
 * that runs many-to-one (wake_wide()) stays with prev.
 */
static s32 wake_target(struct task_struct *p, s32 prev, u64 wake_flags)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	s32 this = bpf_get_smp_processor_id();
	bool sync = wake_flags & SCX_WAKE_SYNC;
	u32 flips, this_load, prev_load;
	bool this_idle;

	if (!wake_affine_on || !(wake_flags & SCX_WAKE_TTWU))
		return prev;
	flips = record_wakee(waker, p);
	if (this == prev || !allowed(p, this) || wake_wide(p, flips, this))
		return prev;
	if (!affine_between(this, prev))
		return prev;

	/*
	 * wake_affine_idle(). Only the idle task wakes others from an idle
	 * CPU, so a task waker spares the idle mask lookups; prev's state is
	 * read only where it decides.
	 */
	this_idle = waker->pid == 0 && cpu_idle_now(this);
	if (this_idle && share_llc(this, prev))
		return cpu_idle_now(prev) ? prev : this;
	this_load = nr_running(this, true);
	if (sync && this_load == 1)
		return this;
	if (cpu_idle_now(prev))
		return prev;

	/* wake_affine_weight(), in tasks instead of load */
	if (sync && this_load > 0)
		this_load--;
	prev_load = nr_running(prev, false);
	return this_load * 100 * 2 < prev_load * (100 + IMBALANCE_PCT) ? this : prev;
}

/*
 * How far from prev a wakeup went. Global: its branches would otherwise
 * multiply every path out of the placement for the verifier.
 */
__noinline void count_moved(u32 policy, s32 prev, s32 cpu)
{
	struct sisu_stats *st = stats_of(policy);
	u64 *n = st ? MEMBER_VPTR(st->moved, [span_of(llc_of(prev), llc_of(cpu))]) : NULL;

	if (n)
		(*n)++;
}

/* Counts a wakeup's placement under @st (NULL: statistics off). */
static void count_wakeup(struct sisu_stats *st, s32 prev, s32 target, const struct pick *pk,
			 bool queued)
{
	u64 *n;

	if (!st)
		return;
	st->wakeups++;
	if (queued)
		st->queued_wakeups++;
	if (target != prev)
		st->affine++;
	n = MEMBER_VPTR(st->outcome, [pk->outcome]);
	if (n)
		(*n)++;
	count_moved(active_policy(), prev, pk->cpu);
}

/*
 * Where a new task starts. The kernel does not send a fork through
 * select_idle_sibling(): find_idlest_cpu() walks down from the widest
 * domain that balances on fork (none beyond node_reclaim_distance) and at
 * each level takes the group with the most idle CPUs, the parent's own
 * while it has as many (find_idlest_group()). So threads that start
 * together spread over the LLCs, one per LLC first, instead of filling the
 * parent's LLC, as STREAM's threads on a node of several LLCs show.
 *
 * Between nodes it keeps a new task near its parent's memory while the
 * parent's node runs few tasks (allow_numa_imbalance()): it stays while
 *
 *	running + 1 <= imb_numa_nr  and  idlest's idle - home's idle <= 2
 *
 * with imb_numa_nr the LLCs of the first domain above the LLC (userspace
 * works it out per LLC) and 2 the kernel's NUMA_IMBALANCE_MIN; the
 * running tasks are the node's busy CPUs here.
 */
#define NUMA_IMBALANCE_MIN	2

static u32 node_of(u32 llc)
{
	const volatile u32 *v = MEMBER_VPTR(llc_node, [llc]);

	return v ? *v : 0;
}

static u32 idle_of(const u16 *counts, u32 i)
{
	return i < SISU_MAX_LLCS ? counts[i & (SISU_MAX_LLCS - 1)] : 0;
}

/* Counts the idle CPUs of every LLC and every node into @ic. */
static void count_idle(struct idle_counts *ic)
{
	const struct cpumask *idle;
	u32 i;

	bpf_for(i, 0, nr_llcs) {
		if (i >= SISU_MAX_LLCS)
			break;
		ic->llc[i] = 0;
		ic->node[i] = 0;
	}
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, nr_cpus) {
		u32 llc, node;

		if (!bpf_cpumask_test_cpu(i, idle))
			continue;
		llc = llc_of(i);
		node = node_of(llc);
		if (llc < SISU_MAX_LLCS)
			ic->llc[llc & (SISU_MAX_LLCS - 1)]++;
		if (node < SISU_MAX_LLCS)
			ic->node[node & (SISU_MAX_LLCS - 1)]++;
	}
	scx_bpf_put_idle_cpumask(idle);
}

/* The node a task forked in @llc starts in (the rule above). */
static u32 fork_node(u32 llc, const struct idle_counts *ic)
{
	u32 home = node_of(llc), best = home, span = SISU_SPAN_LLC, k;
	u32 home_idle = idle_of(ic->node, home), best_idle = home_idle;
	const volatile u32 *width = MEMBER_VPTR(node_width, [home]);
	const volatile u32 *imb;

	bpf_for(k, 1, nr_llcs) {
		u32 other = llc_nearest(llc, k), node = node_of(other);
		const volatile u8 *reach = MEMBER_VPTR(llc_affine, [llc][other]);

		if (!reach || !*reach || idle_of(ic->node, node) <= best_idle)
			continue;
		best = node;
		best_idle = idle_of(ic->node, node);
		span = span_of(llc, other);
	}
	imb = MEMBER_VPTR(llc_numa_imb, [llc][span]);
	if (best == home || !width || !imb)
		return home;
	if (home_idle && *width - home_idle + 1 <= *imb &&
	    best_idle - home_idle <= NUMA_IMBALANCE_MIN)
		return home;
	return best;
}

/*
 * An idle CPU, claimed, in the LLC with the most idle CPUs of the node the
 * task forked in @prev starts in (the nearest LLC on ties), or -1 when
 * none is idle within reach. Global: the verifier walks its loops once.
 */
__noinline s32 fork_cpu(s32 prev)
{
	u32 zero = 0, llc = llc_of(prev), best = llc, most = 0, node, k;
	struct idle_counts *ic = bpf_map_lookup_elem(&idle_counts, &zero);
	const struct cpumask *mask;

	if (!ic)
		return -1;
	count_idle(ic);
	node = fork_node(llc, ic);
	bpf_for(k, 0, nr_llcs) {
		u32 other = llc_nearest(llc, k);

		if (node_of(other) != node || idle_of(ic->llc, other) <= most)
			continue;
		best = other;
		most = idle_of(ic->llc, other);
	}
	if (!most)
		return -1;
	mask = llc_cpumask(best);
	return mask ? scx_bpf_pick_idle_cpu(mask, 0) : -1;
}

s32 BPF_STRUCT_OPS(sisu_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u32 pol = active_policy();
	struct sisu_stats *st = stats_of(pol);
	struct pick pk;
	s32 target, cpu;

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
	}
	count_wakeup(st, prev_cpu, target, &pk, false);
	if (pk.outcome != SISU_OUT_BUSY)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(p), 0);
	return pk.cpu;
}

/*
 * Virtual time, as the kernel keeps vruntime: a task's runtime x 100 / its
 * weight, measured against the clock of the CPU whose queue it is in. A
 * CPU's clock follows the smallest virtual time among the tasks it runs
 * and queues, and never goes back (the runqueue's min_vruntime): it moves
 * when a task starts, and at every slice boundary to the smaller of the
 * running task's (charged so far) and the queue's first. A task that
 * slept comes back at most one slice behind the clock, so sleepers cannot
 * hoard credit; a new task starts half a slice ahead of it, so that a
 * stream of new tasks moves the clock on (as the kernel's START_DEBIT
 * does) instead of holding back a task that is ahead; a task moving to
 * another CPU keeps how far ahead or behind the old CPU's clock it was.
 * One clock for all CPUs would not do: it moves as fast as all CPUs
 * together consume time while each queue drains at one CPU's pace, so a
 * task that waited would be owed far more than a slice.
 */
static u64 vclock_of(s32 cpu)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);

	return c ? c->vclock : 0;
}

/* @p's virtual time against @cpu's clock. */
static u64 rebase(struct task_struct *p, s32 cpu)
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
static u64 bound_credit(u64 vtime, s32 cpu)
{
	u64 floor = vclock_of(cpu) - slice_ns;

	return time_before(vtime, floor) ? floor : vtime;
}

/* @cpu's clock moves to @vtime, if that is ahead. */
static void advance_clock(s32 cpu, u64 vtime)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);

	if (c && time_before(c->vclock, vtime))
		c->vclock = vtime;
}

/* Charges the running @p's time on @c so far; returns its virtual time. */
static u64 charge(struct task_struct *p, struct sisu_cpu_ctx *c, u64 now)
{
	if (now > c->run_start) {
		p->scx.dsq_vtime += (now - c->run_start) * 100 / p->scx.weight;
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
static bool in_rcu_reader(const struct task_struct *p)
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
static void queue_reader_as_nice0(s32 cpu, u64 *vtime, u64 *slice)
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
 * Queued wakeups (SCX_OPS_ALLOW_QUEUED_WAKEUP, set at load; see
 * docs/performance.md) let a waker hand a task to its CPU's wake list
 * instead of locking that CPU's runqueue. A task woken while it is still
 * switching out goes there at once, without select_cpu, and its CPU
 * enqueues it, as the kernel activates such a task on its CPU without
 * select_task_rq(). The placement runs here instead, with the task's CPU
 * as the wake target (the waker is not known here), so that every
 * wakeup still goes through the active policy. Returns whether it found
 * an idle CPU and sent the task there.
 */
static bool place_queued_wakeup(struct task_struct *p, s32 cpu, u64 enq_flags)
{
	u32 pol = active_policy();
	struct sisu_stats *st = stats_of(pol);
	struct pick pk;

	if (!(enq_flags & SCX_ENQ_WAKEUP) || __COMPAT_is_enq_cpu_selected(enq_flags) ||
	    p->nr_cpus_allowed == 1 || p->migration_disabled)
		return false;
	if (pol == SISU_POL_BUILTIN) {
		s32 idle = scx_bpf_select_cpu_and(p, cpu, 0, p->cpus_ptr, 0);

		if (idle >= 0)
			pick_idle(&pk, idle, idle == cpu ? SISU_OUT_PREV : SISU_OUT_SCAN);
		else
			pick_idle(&pk, cpu, SISU_OUT_BUSY);
	} else {
		select_idle_sibling(p, cpu, cpu, pol, &pk);
	}
	count_wakeup(st, cpu, cpu, &pk, true);
	if (pk.outcome == SISU_OUT_BUSY)
		return false;
	/* The insertion wakes pk.cpu (a reschedule of its idle task). */
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | pk.cpu, task_slice(p), enq_flags);
	return true;
}

/* How long a mark set by spread() stays good: about a tick. */
#define PUSH_STALE_NS	(10ULL * 1000 * 1000)

/* Whether @p, running on @cpu, was marked to move by spread(). */
static bool push_marked(const struct task_struct *p, s32 cpu)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);

	return c && c->push_pid == p->pid && bpf_ktime_get_ns() - c->push_at < PUSH_STALE_NS;
}

/*
 * @p was preempted to move to another node (spread()): an idle CPU of the
 * LLC spread() chose takes it, as the kernel's active balance stops the
 * busiest CPU and moves its task to the balancing one. Returns whether @p
 * went; when the LLC has no idle CPU left, @p stays.
 */
static bool push_running(struct task_struct *p, s32 cpu, u64 enq_flags)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	const struct cpumask *mask;
	struct sisu_stats *st;
	s32 to;

	if ((enq_flags & SCX_ENQ_WAKEUP) || !c || !push_marked(p, cpu))
		return false;
	c->push_pid = 0;
	mask = llc_cpumask(c->push_llc);
	to = mask ? scx_bpf_pick_idle_cpu(mask, 0) : -1;
	if (to < 0)
		return false;
	/* Its affinity changed since the tick: give the claimed CPU back. */
	if (!bpf_cpumask_test_cpu(to, p->cpus_ptr)) {
		scx_bpf_kick_cpu(to, SCX_KICK_IDLE);
		return false;
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | to, task_slice(p), enq_flags);
	count_pull(span_of(c->push_llc, llc_of(cpu)));
	st = stats_of(active_policy());
	if (st)
		st->pushed++;
	return true;
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

	if (place_queued_wakeup(p, cpu, enq_flags) || push_running(p, cpu, enq_flags))
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
 * @prev's slice ran out while it can still run. It is in no queue at this
 * point, so the queue's order alone would hand the CPU to the next task
 * whatever the two virtual times are (two tasks would simply take turns,
 * whatever their weights): charge @prev, keep it if it is still the more
 * entitled (as the kernel would pick it again), and move the clock.
 */
static bool keep_prev(struct task_struct *prev, s32 cpu)
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
static bool rescue_starving(s32 cpu)
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

/* How often a busy CPU compares its queue with those of its LLC. */
#define BALANCE_EVERY_NS	(4ULL * 1000 * 1000)

/*
 * Wakeups land where the policy puts them, so queues can grow apart while
 * every CPU stays busy (and none ever runs out of work to pull). Every
 * BALANCE_EVERY_NS, as the kernel's periodic load balancing does, a CPU
 * takes the first task of a queue two or more longer than its own, nearest
 * first. Each span farther is looked at half as often (a domain's balance
 * interval grows with its width), and across a node only a queue three
 * longer counts (the NUMA imbalance the kernel leaves alone). Moving the
 * most entitled task of the longer queue also shortens the waits there.
 */
__noinline bool balance(s32 cpu, s32 own)
{
	struct sisu_cpu_ctx *c = cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns();
	u32 llc = llc_of(cpu), round, k;

	if (!c || now - c->balance_at < BALANCE_EVERY_NS)
		return false;
	c->balance_at = now;
	round = c->balance_round++;
	bpf_for(k, 0, nr_llcs) {
		u32 other = llc_nearest(llc, k), span = span_of(llc, other);
		s32 from;

		/* Nearest first: a span skipped now skips all farther ones. */
		if (round & ((1U << span) - 1))
			break;
		from = busiest_of(cpu, other, own + (crosses_node(span) ? 3 : 2));
		if (from >= 0 && scx_bpf_dsq_move_to_local(from, 0)) {
			count_pull(span);
			return true;
		}
	}
	return false;
}

/*
 * Balancing between nodes that have CPUs to spare. Tasks that run without
 * sleeping never pass through a queue, so the pulls above never see them:
 * a node keeps every thread forked in it, however many CPUs stand idle in
 * the next one. The kernel evens such nodes out in its periodic balancing
 * (calculate_imbalance(), both groups with spare capacity): a group with
 * idle CPUs takes half the difference in idle CPUs from the busiest group
 * of its domain,
 *
 *	imbalance = (idle - busiest's idle) / 2	  when that difference is 2 or more
 *
 * except that the NUMA domains leave a difference of NUMA_IMBALANCE_MIN
 * alone while the idler group runs fewer than imb_numa_nr tasks
 * (adjust_numa_imbalance()), so that a pair of communicating tasks keeps
 * its memory. A running task cannot be detached, so once its attempts
 * have failed more than cache_nice_tries + 2 times in a row (2 + 2 at
 * NUMA levels) the kernel stops the busiest CPU and moves its task
 * (active balance).
 *
 * Here the groups are, as in the kernel's domains, the nodes of a package
 * and then the packages. Each group's level is looked at once per its
 * domain's balance interval (its width in ms, sd->min_interval) by a busy
 * CPU's tick, which moves its own task when its group is the busiest and
 * the rule has held more than SPREAD_TRIES times: the tick marks the task,
 * and its enqueue sends it to an idle CPU of the idlest group's idlest
 * LLC. Queued work and overloaded nodes are left to the pulls. Within a
 * node nothing moves a running task: the kernel would, between LLCs, after
 * 4 failures; forks and wakeups spread over the node's LLCs already.
 */
#define SPREAD_TRIES	4
#define NSEC_PER_MSEC	1000000ULL

/* A level's last look and its failed attempts (sd->nr_balance_failed). */
struct spread_state {
	u64 at;
	u32 failed;
	u32 pad;
};
/* The level of a package's nodes, per node; the level of packages, per package. */
struct spread_state node_spread[SISU_MAX_LLCS];
struct spread_state pkg_spread[SISU_MAX_LLCS];

static u32 pkg_of(u32 node)
{
	const volatile u32 *v = MEMBER_VPTR(node_pkg, [node]);

	return v ? *v : 0;
}

/* Whether @st is due (every @width ms), claimed for this CPU if so. */
static bool spread_due(struct spread_state *st, u32 width, u64 now)
{
	u64 at = st->at;

	if (now - at < width * NSEC_PER_MSEC)
		return false;
	return __sync_val_compare_and_swap(&st->at, at, now) == at;
}

/* How many CPUs llc_cpus lists. */
static u32 cpus_listed(void)
{
	u32 last = nr_llcs - 1;
	const volatile u32 *first = MEMBER_VPTR(llc_first, [last]);

	return first ? *first + width_of(last) : 0;
}

/*
 * Counts every LLC's, node's and package's idle CPUs and tasks into @ic.
 * A CPU is idle here when it runs and queues nothing, as the kernel's
 * idle_cpu() says, not when the idle mask says so: a CPU claimed for a
 * task on its way, or woken to look at a queue it cannot take from, is
 * out of the mask for a moment, and would make a node look busier than
 * its tasks do.
 */
static void count_load(struct idle_counts *ic)
{
	u32 i;

	bpf_for(i, 0, nr_llcs) {
		if (i >= SISU_MAX_LLCS)
			break;
		ic->llc[i] = 0;
		ic->node[i] = 0;
		ic->node_tasks[i] = 0;
		ic->pkg[i] = 0;
		ic->pkg_tasks[i] = 0;
	}
	/* Every CPU of the topology: LLC after LLC, as llc_cpus lists them. */
	bpf_for(i, 0, nr_cpus) {
		const volatile s32 *cpu = MEMBER_VPTR(llc_cpus, [i]);
		u32 llc, node, n;

		if (!cpu || i >= cpus_listed())
			break;
		llc = llc_of(*cpu);
		node = node_of(llc);
		n = nr_running(*cpu, false);
		if (llc >= SISU_MAX_LLCS || node >= SISU_MAX_LLCS)
			break;
		ic->node_tasks[node & (SISU_MAX_LLCS - 1)] += n;
		if (!n) {
			ic->llc[llc & (SISU_MAX_LLCS - 1)]++;
			ic->node[node & (SISU_MAX_LLCS - 1)]++;
		}
	}
	bpf_for(i, 0, nr_nodes) {
		u32 pkg = pkg_of(i);

		if (i >= SISU_MAX_LLCS || pkg >= SISU_MAX_LLCS)
			break;
		ic->pkg[pkg & (SISU_MAX_LLCS - 1)] += ic->node[i & (SISU_MAX_LLCS - 1)];
		ic->pkg_tasks[pkg & (SISU_MAX_LLCS - 1)] += ic->node_tasks[i & (SISU_MAX_LLCS - 1)];
	}
}

/*
 * Whether a group with @idle idle CPUs running @tasks should take a task
 * from the busiest group, with @busy_idle and @busy_tasks (the rule above).
 */
static bool spare_imbalance(u32 busy_idle, u32 busy_tasks, u32 idle, u32 tasks, u32 imb)
{
	if (busy_tasks <= 1 || idle <= busy_idle + 1)
		return false;
	return tasks + 1 > imb || idle - busy_idle > NUMA_IMBALANCE_MIN;
}

/* The node or package (@pkgs) with the most idle CPUs other than @self, or -1. */
static s32 idlest_group(const struct idle_counts *ic, u32 self, bool pkgs, u32 *fewest)
{
	u32 n = pkgs ? nr_pkgs : nr_nodes, i, most = 0;
	const u16 *idle = pkgs ? ic->pkg : ic->node;
	s32 best = -1;

	*fewest = idle_of(idle, self);
	bpf_for(i, 0, n) {
		if (i == self || (!pkgs && pkg_of(i) != pkg_of(self)))
			continue;
		if (idle_of(idle, i) < *fewest)
			*fewest = idle_of(idle, i);
		if (best < 0 || idle_of(idle, i) > most) {
			best = i;
			most = idle_of(idle, i);
		}
	}
	return best;
}

/*
 * One level's look from @cpu's group (its node, or with @pkgs its
 * package): the node to move @cpu's task to, or -1.
 */
static s32 spread_level(struct spread_state *st, const struct idle_counts *ic, s32 cpu, bool pkgs)
{
	u32 llc = llc_of(cpu), node = node_of(llc), self = pkgs ? pkg_of(node) : node;
	const u16 *idle = pkgs ? ic->pkg : ic->node, *tasks = pkgs ? ic->pkg_tasks : ic->node_tasks;
	const volatile u32 *width = pkgs ? MEMBER_VPTR(pkg_width, [self]) : MEMBER_VPTR(node_width, [self]);
	const volatile u32 *imb = MEMBER_VPTR(llc_numa_imb,
					      [llc][pkgs ? SISU_SPAN_REMOTE : SISU_SPAN_PACKAGE]);
	u32 fewest, i, most = 0;
	s32 to = idlest_group(ic, self, pkgs, &fewest);

	/* Not the busiest group, overloaded, or balanced: the attempt did not fail. */
	if (to < 0 || !width || !imb || fewest < idle_of(idle, self) ||
	    idle_of(tasks, self) > *width ||
	    !spare_imbalance(idle_of(idle, self), idle_of(tasks, self), idle_of(idle, to),
			     idle_of(tasks, to), *imb)) {
		st->failed = 0;
		return -1;
	}
	if (++st->failed <= SPREAD_TRIES)
		return -1;
	/* As the kernel leaves it after an active balance: two more tries. */
	st->failed = SPREAD_TRIES - 1;
	if (!pkgs)
		return to;
	/* The idlest node of the idlest package. */
	node = 0;
	bpf_for(i, 0, nr_nodes) {
		if (pkg_of(i) == to && idle_of(ic->node, i) > most) {
			node = i;
			most = idle_of(ic->node, i);
		}
	}
	return most ? node : -1;
}

/* The LLC of @node with the most idle CPUs, or -1. */
static s32 idlest_llc(const struct idle_counts *ic, u32 node)
{
	u32 k, most = 0;
	s32 best = -1;

	bpf_for(k, 0, nr_llcs) {
		if (node_of(k) == node && idle_of(ic->llc, k) > most) {
			best = k;
			most = idle_of(ic->llc, k);
		}
	}
	return best;
}

/*
 * The LLC to move the task running on @cpu to, or -1, looking at the
 * levels above @cpu's node when they are due. Global: the verifier walks
 * its loops once.
 */
__noinline s32 spread(s32 cpu)
{
	u32 zero = 0, node = node_of(llc_of(cpu)), pkg = pkg_of(node);
	struct spread_state *ns = MEMBER_VPTR(node_spread, [node]);
	struct spread_state *ps = MEMBER_VPTR(pkg_spread, [pkg]);
	const volatile u32 *nw = MEMBER_VPTR(node_width, [node]);
	const volatile u32 *pw = MEMBER_VPTR(pkg_width, [pkg]);
	u64 now = bpf_ktime_get_ns();
	struct idle_counts *ic;
	bool in_pkg, across;
	s32 to = -1;

	if (!ns || !ps || !nw || !pw)
		return -1;
	in_pkg = *pw > *nw && spread_due(ns, *pw, now);
	across = nr_pkgs > 1 && spread_due(ps, nr_cpus, now);
	if (!in_pkg && !across)
		return -1;
	ic = bpf_map_lookup_elem(&idle_counts, &zero);
	if (!ic)
		return -1;
	count_load(ic);
	if (in_pkg)
		to = spread_level(ns, ic, cpu, false);
	if (to < 0 && across)
		to = spread_level(ps, ic, cpu, true);
	return to < 0 ? -1 : idlest_llc(ic, to);
}

/*
 * The CPU is about to go idle, its pull having found nothing: where the
 * kernel's newidle balance stamps the start of the idle period that
 * SIS_PROP averages, and where its idle entry sets the idle-core hint once
 * every thread of the core is idle (this one is about to be). Done here
 * and in running() rather than in an update_idle op, which would cost two
 * more BPF calls per wakeup.
 */
static void idle_enter(s32 cpu, struct sisu_cpu_ctx *c)
{
	struct sisu_llc_ctx *lc;
	const struct cpumask *idle_mask;
	bool all = true;
	u32 k;

	prop_sync(c, bpf_jiffies64());
	c->idle_stamp = bpf_ktime_get_ns();
	if (!smt_on)
		return;
	lc = llc_ctx(llc_of(cpu));
	if (!lc || lc->has_idle_cores)
		return;
	idle_mask = scx_bpf_get_idle_cpumask();
	bpf_for(k, 0, SISU_MAX_SMT) {
		s32 sib = sib_of(cpu, k);

		if (sib < 0)
			break;
		if (sib != cpu && !bpf_cpumask_test_cpu(sib, idle_mask)) {
			all = false;
			break;
		}
	}
	scx_bpf_put_idle_cpumask(idle_mask);
	if (all)
		lc->has_idle_cores = 1;
}

/* A task runs on an idle CPU: the idle period ends (ttwu_do_activate()). */
static void idle_exit(struct sisu_cpu_ctx *c, u64 now)
{
	u64 j = bpf_jiffies64();

	/* A policy switch since the stamp discards the period with the state. */
	prop_sync(c, j);
	if (c->idle_stamp && now > c->idle_stamp)
		sis_prop_idle_end(c, now - c->idle_stamp, j);
	c->idle_stamp = 0;
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
