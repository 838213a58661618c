/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The observer: the kernel's own wakeup placement, counted with the
 * scheduler's counters while no sched_ext scheduler is loaded. It loads
 * probes only (no struct_ops) and never changes a decision.
 *
 * The fair class places a waking task in select_task_rq_fair():
 * wake_affine() picks the target (the waker's CPU or prev), then
 * select_idle_sibling() takes the target, prev or the recently used CPU
 * if idle, else select_idle_cpu() walks the target's LLC from target + 1,
 * wrapping, over the CPUs the task may use, and stops after nr_idle_scan
 * of them (SIS_UTIL's depth, which load balancing stores in the LLC's
 * sched_domain_shared) or at the first idle one. The last two are inlined,
 * so only the whole is seen: fentry/fexit on select_task_rq_fair give the
 * task, prev, the flags, the waker's CPU and the CPU chosen. The rest is
 * derived from the kernel's order, and the derivation is stated where it
 * is made:
 *
 *  - the outcome: a chosen CPU that is not idle means nothing idle was
 *    found, and the target is that CPU (select_idle_sibling() returns the
 *    target then); an idle one is the waker's CPU (target), prev, the
 *    recently used CPU, or else what the scan found;
 *  - the target of a scan that found a CPU: prev if it shares the found
 *    CPU's LLC, else the waker's CPU (wake_affine()'s choice cannot be
 *    seen; when both share the LLC, prev is taken, which moves only the
 *    step counted as examined);
 *  - the CPUs examined: the found CPU's step in the walk from target + 1,
 *    or, when nothing was found, nr_idle_scan capped at the CPUs the walk
 *    has. The idle-core scan (SMT) examines whole cores: counted the same.
 *
 * "Idle" is idle_cpu()'s test (the idle task runs, nothing queued, no
 * wakeup pending), read from the runqueues at fexit, before the task is
 * enqueued: the kernel's available_idle_cpu() also asks the hypervisor
 * whether the vCPU is preempted, which cannot be read here.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "sis_prop.h"
#include "depth.h"
#include "wait_count.h"

char _license[] SEC("license") = "GPL";

/* The kernel's wake flags (kernel/sched/sched.h). */
#define WF_FORK		0x04
#define WF_TTWU		0x08

/* How often an LLC's kernel state is sampled, at most (ns). */
#define SAMPLE_NS	(4ULL * 1000 * 1000)

/* Topology, filled in by userspace before load (as main.bpf.c's). */
const volatile u32 nr_llcs = 1;
const volatile u32 cpu_llc[SISU_MAX_CPUS];
const volatile u32 cpu_pos[SISU_MAX_CPUS];
const volatile s32 llc_cpus[SISU_MAX_CPUS];
const volatile u32 llc_first[SISU_MAX_LLCS];
const volatile u32 llc_width[SISU_MAX_LLCS];
/* The kernel's nr_cpu_ids: a task allowed this many CPUs may use any. */
const volatile u32 nr_cpu_ids = SISU_MAX_CPUS;
/* The shadow rules judged on the kernel's scans (bits of enum sisu_policy). */
const volatile u32 shadows;

struct sisu_kernel_llc kllcs[SISU_MAX_LLCS];
/*
 * Each CPU's busy time, and what userspace folds it into each interval as
 * the scheduler folds its own (utilisation.rs): the scheduler's estimate
 * of the LLC's sum, on the kernel's load.
 */
struct sisu_cpu_busy busy[SISU_MAX_CPUS];
u32 est_sums[SISU_MAX_LLCS];
/* What this kernel lacks (enum sisu_observe_gap), found at the first wakeup. */
u32 gaps;

extern struct sched_domain_shared *sd_llc_shared __ksym __weak;
extern int sd_llc_size __ksym __weak;
extern int sd_llc_id __ksym __weak;

/* Newer kernels keep the LLC's utilisation in sched_domain_shared. */
struct sched_domain_shared___util {
	unsigned long util_avg;
	unsigned long capacity;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SISU_NR_POLICIES);
	__type(key, u32);
	__type(value, struct sisu_rule_stats);
} rule_stats SEC(".maps");

/*
 * SIS_PROP's books for the shadow prop, per CPU, as the kernel kept them
 * in struct rq and the CPU's sched_domain until 6.6: from the kernel's own
 * avg_idle, which it still keeps, and the observer's look-only walks.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct sisu_prop_books);
} books SEC(".maps");

/* What fentry saw that fexit cannot: select_idle_sibling() overwrites it. */
struct entry {
	s32 recent;	/* the task's recent_used_cpu */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct entry);
} entries SEC(".maps");

/* A placed wakeup waiting for its first run. */
struct wake {
	u64 woke_at;	/* 0: none waiting */
	u32 kind;	/* enum sisu_wait */
	u32 llc;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct wake);
} wakes SEC(".maps");

static u32 llc_of(s32 cpu)
{
	return cpu >= 0 && cpu < SISU_MAX_CPUS ? cpu_llc[cpu] : 0;
}

static u32 width_of(u32 llc)
{
	return llc < SISU_MAX_LLCS ? llc_width[llc] : 0;
}

/* The CPU at position @pos of @llc's ascending list. */
static s32 llc_cpu(u32 llc, u32 pos)
{
	u32 i = (llc < SISU_MAX_LLCS ? llc_first[llc] : 0) + pos;

	return i < SISU_MAX_CPUS ? llc_cpus[i] : -1;
}

/* idle_cpu(): the idle task runs, nothing is queued, no wakeup pending. */
static bool idle_now(s32 cpu)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);

	if (!rq || rq->nr_running)
		return false;
	return rq->curr == rq->idle && !rq->ttwu_pending;
}

/* @cpu's sched_domain_shared, NULL where the kernel has none. */
static struct sched_domain_shared *shared_of(s32 cpu)
{
	struct sched_domain_shared **pp;

	if (!bpf_ksym_exists(&sd_llc_shared))
		return NULL;
	pp = bpf_per_cpu_ptr(&sd_llc_shared, cpu);
	return pp ? *pp : NULL;
}

static u32 capped(unsigned long util)
{
	return util < SISU_CAPACITY ? util : SISU_CAPACITY;
}

/*
 * cpu_util_cfs() as load balancing sums it for SIS_UTIL: the larger of the
 * CFS runqueue's util_avg and its util_est, capped at the CPU's capacity
 * (SISU_CAPACITY on a machine of equal CPUs). @avg gets util_avg alone,
 * capped the same way: what util_est adds is the difference.
 */
static u32 cpu_util(s32 cpu, u32 *avg)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);
	unsigned long util, est;

	*avg = 0;
	if (!rq)
		return 0;
	util = rq->cfs.avg.util_avg;
	*avg = capped(util);
	/* The top bit of util_est flags "unchanged since enqueue". */
	est = rq->cfs.avg.util_est & 0x7fffffff;
	return capped(est > util ? est : util);
}

/* Samples @llc's kernel state, at most every SAMPLE_NS. */
static void sample_llc(u32 llc, u64 now)
{
	struct sisu_kernel_llc *k = MEMBER_VPTR(kllcs, [llc]);
	struct sched_domain_shared *sds;
	u32 width = width_of(llc), i, sum = 0, sum_avg = 0;
	s32 first = llc_cpu(llc, 0);

	if (!k || first < 0 || now - k->sampled_ns < SAMPLE_NS)
		return;
	k->sampled_ns = now;
	bpf_for(i, 0, width) {
		s32 cpu = llc_cpu(llc, i);
		u32 avg;

		if (cpu >= 0) {
			sum += cpu_util(cpu, &avg);
			sum_avg += avg;
		}
	}
	k->sum_util = sum;
	k->sum_util_avg = sum_avg;
	sds = shared_of(first);
	if (sds) {
		k->nr_idle_scan = BPF_CORE_READ(sds, nr_idle_scan);
		k->has_idle_cores = BPF_CORE_READ(sds, has_idle_cores);
		if (bpf_core_field_exists(struct sched_domain_shared___util, util_avg)) {
			struct sched_domain_shared___util *u = (void *)sds;

			k->sd_util_avg = BPF_CORE_READ(u, util_avg);
			k->sd_capacity = BPF_CORE_READ(u, capacity);
		}
	}
	if (bpf_ksym_exists(&sd_llc_size) && bpf_ksym_exists(&sd_llc_id)) {
		int *size = bpf_per_cpu_ptr(&sd_llc_size, first);
		int *id = bpf_per_cpu_ptr(&sd_llc_id, first);

		k->llc_size = size ? *size : 0;
		k->llc_id = id ? *id : 0;
	}
}

/* What this kernel lacks, said once to userspace. */
static void note_gaps(void)
{
	u32 g = 0;

	if (gaps)
		return;
	if (!bpf_ksym_exists(&sd_llc_shared))
		g |= SISU_GAP_SD_LLC_SHARED;
	if (!bpf_core_field_exists(struct sched_domain_shared___util, util_avg))
		g |= SISU_GAP_SD_UTIL;
	if (!bpf_ksym_exists(&sd_llc_size) || !bpf_ksym_exists(&sd_llc_id))
		g |= SISU_GAP_LLC_IDS;
	/* The top bit says "looked", so that a kernel with no gap looks once. */
	gaps = g | (1U << 31);
}

/* SIS_UTIL's depth at @target: the kernel's nr_idle_scan, none if no LLC state. */
static u32 depth_at(s32 target)
{
	struct sched_domain_shared *sds = shared_of(target);

	return sds ? BPF_CORE_READ(sds, nr_idle_scan) : (u32)-1;
}

/*
 * May a task whose cpus_ptr is @mask (NULL: every CPU) run on @cpu? Read
 * by copy: the mask reached through a function argument is not one the
 * verifier lets a cpumask kfunc take.
 */
static bool allowed(const struct cpumask *mask, s32 cpu)
{
	unsigned long word = 0;

	if (!mask)
		return true;
	bpf_probe_read_kernel(&word, sizeof(word), &mask->bits[(cpu / 64) & (SISU_MAX_CPUS / 64 - 1)]);
	return (word >> (cpu & 63)) & 1;
}

/* @p's cpus_ptr, or 0 where it may use every CPU. */
static u64 cpus_of(const struct task_struct *p)
{
	if (BPF_CORE_READ(p, nr_cpus_allowed) >= nr_cpu_ids)
		return 0;
	return (u64)BPF_CORE_READ(p, cpus_ptr);
}

/* One walk of @target's LLC in select_idle_cpu()'s order. */
struct walk {
	u32 allowed;	/* CPUs of the LLC the task may use, target included */
	u32 first_idle;	/* the step of the first idle one (1-based), 0 if none */
	u32 step_of;	/* the step of the CPU asked about, 0 if not met */
	u64 ns;		/* what the walk took */
};

/*
 * Walks @target's LLC from target + 1, wrapping, over the CPUs the task
 * may use (@mask, its cpus_ptr, 0 for all), as select_idle_cpu() does,
 * noting the first idle CPU's step and @cpu's. A global function, so that
 * the verifier walks its loop once and apart from its callers.
 */
__noinline void walk_llc(u64 mask, s32 target, s32 cpu, struct walk *w)
{
	u32 llc = llc_of(target), width = width_of(llc), start, i;
	u32 n = 0, first_idle = 0, step_of = 0;
	u64 t0 = bpf_ktime_get_ns();

	if (!w)
		return;
	/* Keep the verifier from tracking the counts, a state per value. */
	__sink(n);
	__sink(first_idle);
	__sink(step_of);
	start = target >= 0 && target < SISU_MAX_CPUS ? cpu_pos[target] + 1 : 0;
	bpf_for(i, 0, width) {
		u32 pos = start + i;
		s32 c;

		if (pos >= width)
			pos -= width;
		c = llc_cpu(llc, pos);
		if (c < 0 || !allowed((const struct cpumask *)mask, c))
			continue;
		n++;
		if (c == cpu)
			step_of = n;
		if (!first_idle && idle_now(c))
			first_idle = n;
	}
	w->allowed = n;
	w->first_idle = first_idle;
	w->step_of = step_of;
	w->ns = bpf_ktime_get_ns() - t0;
}

/*
 * One more in a [an idle CPU existed][one was found] matrix, by branches:
 * an index the verifier cannot bound would reject the program.
 */
#define COUNT_FOUND(m, existed, found)		\
	do {					\
		if (found)			\
			(m)[1][1]++;		\
		else if (existed)		\
			(m)[1][0]++;		\
		else				\
			(m)[0][0]++;		\
	} while (0)

/* One more at @v in a depth histogram, the last slot holding the rest. */
static void count_hist(u64 *hist, u32 v)
{
	if (v >= SISU_HIST_SLOTS)
		v = SISU_HIST_SLOTS - 1;
	hist[v]++;
}

/*
 * A rule that examines at most @budget CPUs (its depth limit @limit) on
 * this walk: would it have found an idle CPU? Counted for the rule, with
 * its share of the walk's time. Returns the CPUs it examines in @examined.
 */
static bool judge(u32 rule, u32 limit, u32 budget, const struct walk *w, bool idle_existed,
		  u32 *examined)
{
	struct sisu_rule_stats *rs = bpf_map_lookup_elem(&rule_stats, &rule);
	bool found = w->first_idle && w->first_idle <= budget;
	u32 e = budget < w->allowed ? budget : w->allowed;

	if (found)
		e = w->first_idle;
	*examined = e;
	if (!rs)
		return found;
	rs->scans++;
	COUNT_FOUND(rs->found, idle_existed, found);
	rs->examined_sum += e;
	rs->scan_ns += e ? sis_prop_share(w->ns, e, w->allowed) : 0;
	count_hist(rs->limit, limit);
	count_hist(rs->examined, e);
	return found;
}

/*
 * The shadow rules on this scan of @llc: the set that would have found
 * one. Each rule's depth is the scheduler's (rule_depth()), from the
 * kernel's own SIS_UTIL depth (@depth), the LLC's sampled sum and this
 * CPU's SIS_PROP books; a shadow SIS_PROP is then charged what a scan to
 * its depth would have cost, the walk's time shared by CPUs examined, as
 * the scheduler charges its own shadow prop (sis_prop_share()). (The load
 * is read here, not by the caller, whose registers are full: a bounds
 * check there was lost to a spill.)
 */
static u32 judge_shadows(u32 llc, u32 depth, const struct walk *w, bool idle_existed)
{
	struct sisu_kernel_llc *k = MEMBER_VPTR(kllcs, [llc]);
	struct sisu_llc_load ld = { .util_nr = depth, .sum_util = k ? k->sum_util : 0 };
	struct sisu_prop_books *b = NULL;
	u32 zero = 0, set = 0, e, r, width = width_of(llc);
	struct depth d;

	if (shadows & (1U << SISU_POL_PROP)) {
		b = bpf_map_lookup_elem(&books, &zero);
		if (b)
			sis_prop_age(b, bpf_jiffies64());
	}
#pragma unroll
	for (r = 0; r < SISU_NR_POLICIES; r++) {
		if (!(shadows & SHADOW_RULES & (1U << r)) || (r == SISU_POL_PROP && !b))
			continue;
		rule_depth(r, width, 0, false, b, &ld, &d);
		if (judge(r, d.limit, d.scan ? d.budget : 0, w, idle_existed, &e))
			set |= 1U << r;
		if (r == SISU_POL_PROP && b)
			sis_prop_charge(b, sis_prop_share(w->ns, e, w->allowed));
	}
	return set;
}

/* Remembers when and how @p was placed, to time its wait to its first run. */
static void note_wake(struct task_struct *p, u32 kind, u32 llc, u64 now)
{
	struct wake *wk = bpf_task_storage_get(&wakes, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!wk)
		return;
	wk->woke_at = now;
	wk->kind = kind;
	wk->llc = llc;
}

/*
 * A wakeup that reached the LLC scan: what the scan found, what a rule of
 * every shadow depth would have, what it examined. Returns the wait kind.
 */
static u32 count_scan(struct task_struct *p, s32 prev, s32 this, s32 cpu, bool found)
{
	u32 zero = 0;
	struct sisu_stats *st = bpf_map_lookup_elem(&stats, &zero);
	struct sisu_llc_scans *ls;
	struct sisu_kernel_llc *k;
	u32 *est;
	s32 target = cpu;
	struct walk w;
	u32 llc = llc_of(cpu), depth, examined, set;
	bool existed;
	u64 *n;

	if (found) {
		if (llc_of(prev) == llc)
			target = prev;
		else if (llc_of(this) == llc)
			target = this;
	}
	if (!st)
		return SISU_WAIT_NONE;
	depth = depth_at(target);
	walk_llc(cpus_of(p), target, cpu, &w);
	existed = found || w.first_idle;
	if (found)
		examined = w.step_of;
	else
		examined = depth < w.allowed ? depth : w.allowed;

	st->scans++;
	st->scan_examined += examined;
	COUNT_FOUND(st->found, existed, found);
	count_hist(st->examined, examined);
	count_hist(st->limit, depth);
	if (existed && shadows) {
		set = judge_shadows(llc, depth, &w, existed) |
		      (found ? 1U << SISU_ACTIVE_BIT : 0);
		n = MEMBER_VPTR(st->found_sets, [set & (SISU_FOUND_SETS - 1)]);
		if (n)
			(*n)++;
	} else if (shadows) {
		judge_shadows(llc, depth, &w, existed);
	}
	ls = bpf_map_lookup_elem(&llc_scans, &llc);
	k = MEMBER_VPTR(kllcs, [llc]);
	est = MEMBER_VPTR(est_sums, [llc]);
	if (ls) {
		ls->scans++;
		COUNT_FOUND(ls->found, existed, found);
		ls->scan_examined += examined;
		if (k) {
			ls->util_at_scans += k->sum_util;
			ls->util_avg_at_scans += k->sum_util_avg;
		}
		if (est)
			ls->est_at_scans += *est;
	}
	if (found)
		return SISU_WAIT_FOUND;
	return existed ? SISU_WAIT_MISSED : SISU_WAIT_NONE;
}

SEC("fentry/select_task_rq_fair")
int BPF_PROG(observe_enter, struct task_struct *p, int prev_cpu, int wake_flags)
{
	u32 zero = 0;
	struct entry *e = bpf_map_lookup_elem(&entries, &zero);

	if (e)
		e->recent = p->recent_used_cpu;
	return 0;
}

SEC("fexit/select_task_rq_fair")
int BPF_PROG(observe_exit, struct task_struct *p, int prev_cpu, int wake_flags, int cpu)
{
	u32 zero = 0, outcome, kind = SISU_WAIT_IDLE;
	s32 this = bpf_get_smp_processor_id();
	struct entry *e = bpf_map_lookup_elem(&entries, &zero);
	struct sisu_stats *st = bpf_map_lookup_elem(&stats, &zero);
	u64 now = bpf_ktime_get_ns(), *n;

	if (!e || !st || cpu < 0 || cpu >= SISU_MAX_CPUS)
		return 0;
	note_gaps();
	/* First, so that a scan counted below reads the LLC's sum of now. */
	sample_llc(llc_of(cpu), now);
	if (wake_flags & WF_FORK) {
		outcome = SISU_OUT_FORK;
	} else if (!(wake_flags & WF_TTWU)) {
		return 0;	/* exec balancing: not a wakeup */
	} else if (!idle_now(cpu)) {
		outcome = SISU_OUT_BUSY;
		kind = count_scan(p, prev_cpu, this, cpu, false);
	} else if (cpu == this && this != prev_cpu) {
		outcome = SISU_OUT_TARGET;
	} else if (cpu == prev_cpu) {
		outcome = SISU_OUT_PREV;
	} else if (cpu == e->recent) {
		outcome = SISU_OUT_RECENT;
	} else {
		outcome = SISU_OUT_SCAN;
		kind = count_scan(p, prev_cpu, this, cpu, true);
	}
	st->wakeups++;
	/* Seen only where the target is known: the waker's CPU chosen. */
	if (cpu == this && this != prev_cpu)
		st->affine++;
	n = MEMBER_VPTR(st->outcome, [outcome]);
	if (n)
		(*n)++;
	note_wake(p, kind, llc_of(cpu), now);
	return 0;
}

/* The wait from placement to first run ends when the task is switched in. */
/*
 * A CPU that leaves idle gets SIS_PROP's fresh budget, half its average
 * idle period, as ttwu_do_activate() gave it until 6.6; the kernel still
 * updates avg_idle there, before this switch.
 */
static void idle_ends(void)
{
	u32 zero = 0;
	struct sisu_prop_books *b = bpf_map_lookup_elem(&books, &zero);
	struct rq *rq = bpf_this_cpu_ptr(&runqueues);

	if (!b || !rq)
		return;
	b->wake_avg_idle = rq->avg_idle / 2;
	b->wake_stamp = bpf_jiffies64();
}

SEC("tp_btf/sched_switch")
int BPF_PROG(observe_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct sisu_cpu_busy *b = MEMBER_VPTR(busy, [bpf_get_smp_processor_id()]);
	u64 now = bpf_ktime_get_ns(), w;
	struct sisu_llc_scans *ls;
	struct sisu_stats *st;
	u32 zero = 0, kind, llc;
	struct wake *wk;

	if (b) {
		if (b->running && now > b->acct_from)
			b->busy_ns += now - b->acct_from;
		b->acct_from = now;
		b->running = next->pid != 0;
	}
	if ((shadows & (1U << SISU_POL_PROP)) && prev->pid == 0)
		idle_ends();
	wk = bpf_task_storage_get(&wakes, next, 0, 0);
	if (!wk || !wk->woke_at)
		return 0;
	w = now - wk->woke_at;
	wk->woke_at = 0;
	kind = wk->kind;
	llc = wk->llc;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (st)
		wait_count(st, kind, w);
	if (!wait_after_scan(kind))
		return 0;
	ls = bpf_map_lookup_elem(&llc_scans, &llc);
	if (ls)
		wait_count_llc(ls, kind, w);
	return 0;
}
