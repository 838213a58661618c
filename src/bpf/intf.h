/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything the BPF scheduler and its Rust control plane share: limits,
 * the policy and outcome enums, and the layout of every record that crosses
 * the boundary. build.rs turns this file into Rust bindings, so a constant
 * changed here changes on both sides.
 */
#ifndef __SISUTIL_INTF_H
#define __SISUTIL_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed int s32;
typedef signed long long s64;
#endif

#define SISU_MAX_CPUS		1024
#define SISU_MAX_LLCS		256
/* Hardware threads per core that the SMT paths look at. */
#define SISU_MAX_SMT		8
/* Histogram slots: depths 0..127, the last slot holds 128 and more. */
#define SISU_HIST_SLOTS		129
/* SCHED_CAPACITY_SCALE: a fully busy CPU has utilisation 1024. */
#define SISU_CAPACITY		1024
/*
 * Wakeup-to-running waits: slot 0 holds waits under 2^SISU_WAIT_SHIFT ns,
 * then four slots per power of two (wait_hist.h), the last one holding
 * everything longer.
 */
#define SISU_WAIT_SHIFT		10
#define SISU_WAIT_SLOTS		96
/*
 * The adaptive rule judges its candidates on one scan of an LLC in
 * 2^auto_shift, chosen at random; userspace sets the shift per LLC
 * (auto.rs), up to this.
 */
#define SISU_AUTO_MAX_SHIFT	12
/* A task's name, as the kernel keeps it (TASK_COMM_LEN). */
#define SISU_COMM_LEN		16

/*
 * The idle-CPU search rules, registered here once: the enum below, the
 * sets the shadow and the adaptive rule draw from, and on the Rust side
 * the command line, the socket, the statistics' per-rule records, auto's
 * candidates, the trace's shadow columns and the lab (proto's build
 * script reads these lines) all derive from this table. A rule's depth
 * is its case in depth.h's rule_depth().
 *
 *   R(ENUM, name, shadows, auto, "its line in --help")
 *
 * name is how the command line, the socket, statistics, results and the
 * trace spell it; shadows: it can be judged beside the active rule (its
 * scan replayed without claiming a CPU: the built-in selection claims,
 * and the adaptive rule chooses from the shadows' verdicts); auto: the
 * adaptive rule may choose it for an LLC (auto.rs says why these). The
 * order gives each rule its value, by which the per-rule counters are
 * indexed; only names leave the scheduler.
 */
#define SISU_RULES(R)								\
	R(UTIL, util, 1, 1, "SIS_UTIL (Linux 6.0+): depth from the LLC's utilisation") \
	R(PROP, prop, 1, 1, "SIS_PROP (Linux 5.14-6.6): depth from expected idle time vs. scan cost") \
	R(FULL, full, 1, 1, "Scan the whole LLC, no depth limit")			\
	R(NONE, none, 1, 0, "Never scan the LLC: only target, prev, recent CPU, SMT sibling") \
	R(FLAT, flat, 1, 0, "The whole LLC while it is under half busy, SIS_UTIL's depth above") \
	R(BUILTIN, builtin, 0, 0, "sched_ext's built-in idle selection (scx_bpf_select_cpu_dfl)") \
	R(AUTO, auto, 0, 0, "Per LLC, util, prop or full: whichever the shadow measures to pay best")

#define SISU_RULE_ENUM(e, name, shadows, cand, about)	SISU_POL_##e,
enum sisu_policy {
	SISU_RULES(SISU_RULE_ENUM)
	SISU_NR_POLICIES,
};

/*
 * Sets of rules that found an idle CPU on one scan: a bit per shadow rule
 * (1 << enum sisu_policy) and SISU_ACTIVE_BIT for the active policy.
 */
enum sisu_found_sets {
	SISU_ACTIVE_BIT = SISU_NR_POLICIES,
	SISU_FOUND_SETS = 2 << SISU_NR_POLICIES,
};

/*
 * Whose SIS_PROP books a CPU record's slot holds: the active policy's, and
 * the shadow's, so that SIS_PROP judged beside itself (or beside another
 * policy) keeps the state it would keep if it were active.
 */
enum sisu_book {
	SISU_BOOK_ACTIVE = 0,
	SISU_BOOK_SHADOW,
	SISU_NR_BOOKS,
};

/* How a wakeup placement ended (select_idle_sibling's steps). */
enum sisu_outcome {
	SISU_OUT_TARGET = 0,	/* the wake target was idle */
	SISU_OUT_PREV,		/* the previous CPU was idle */
	SISU_OUT_RECENT,	/* the task's recently used CPU was idle */
	SISU_OUT_SMT,		/* an idle SMT sibling of prev */
	SISU_OUT_SCAN,		/* found by the LLC scan */
	SISU_OUT_BUSY,		/* nothing idle found: queued on the target */
	SISU_OUT_FORK,		/* a new task, on the idlest LLC within reach (fork_cpu()) */
	SISU_NR_OUTCOMES,
};

/*
 * What a wakeup's placement found, for the wait that followed it (from
 * the placement to the task's first run): the question a found-rate
 * cannot answer is what a miss costs.
 */
enum sisu_wait {
	SISU_WAIT_IDLE = 0,	/* an idle CPU before any scan (target, prev, recent, SMT, fork) */
	SISU_WAIT_FOUND,	/* the scan found an idle CPU */
	SISU_WAIT_MISSED,	/* the scan found none, though an idle CPU existed */
	SISU_WAIT_NONE,		/* the scan found none, and none existed */
	SISU_WAIT_CURRENT,	/* SIS_CURRENT put it on the waker's CPU instead of a scan */
	SISU_NR_WAITS,
};

/*
 * How far a CPU reaches for work or a wakee reaches from prev: the levels
 * of the kernel's scheduling domains. The order is part of the stats
 * interface: pull counters are indexed by it.
 */
enum sisu_span {
	SISU_SPAN_LLC = 0,	/* the same LLC (the MC domain) */
	SISU_SPAN_NODE,		/* another LLC of the same NUMA node */
	SISU_SPAN_PACKAGE,	/* another node of the same package */
	SISU_SPAN_REMOTE,	/* another package and node */
	SISU_NR_SPANS,
};

/*
 * Run-time configuration, written by userspace at start and at every
 * policy switch.
 */
struct sisu_cfg {
	u32 policy;		/* enum sisu_policy */
	u32 shadows;		/* the shadow rules, a bit per enum sisu_policy */
	u32 small_llc;		/* util: scan whole LLCs of at most this width */
	u32 sis_cache;		/* SIS_CACHE: scans skip CPUs kept for a short sleeper */
	u32 sis_current;	/* SIS_CURRENT: a short pair's wakee joins its waker */
	u32 trace_every;	/* the trace: one wakeup in this many on record, 0 = off */
	u32 epoch;		/* bumped per switch: resets per-policy state */
};

/*
 * An LLC's load as the depth rules read it (depth.h's rule_depth()), taken
 * once per scan: the published pair of struct sisu_llc_ctx below, or while
 * that is stale, one derived from the CPUs busy at that moment.
 */
struct sisu_llc_load {
	u32 sum_util;		/* its CPUs' utilisation, each SISU_CAPACITY at most */
	u32 util_nr;		/* SIS_UTIL's depth from it (sis_util.h) */
};

/*
 * One record per LLC. nr_idle_scan and sum_util are published by
 * userspace every interval, stamped with published_at; has_idle_cores is the kernel's "an idle core
 * may exist" hint, kept by BPF.
 */
struct sisu_llc_ctx {
	u32 nr_idle_scan;
	u32 sum_util;
	u32 has_idle_cores;
	u32 auto_rule;		/* the adaptive rule's choice here (enum sisu_policy) */
	u32 auto_shift;		/* ... which judges one scan in 2^auto_shift here */
	u64 published_at;	/* when userspace published the two above (CLOCK_MONOTONIC ns) */
} __attribute__((aligned(64)));

/*
 * SIS_PROP's state that belongs to one way of spending idle time on scans,
 * as the kernel kept it in struct rq (wake_*) and sched_domain.
 */
struct sisu_prop_books {
	u64 wake_avg_idle;	/* idle time left to spend on scans (ns) */
	u64 wake_stamp;		/* jiffies of the last wake_avg_idle aging */
	u64 avg_scan_cost;	/* average duration of the scans (ns) */
};

/*
 * One record per CPU, each on its own cache lines so that no CPU writes
 * a line another CPU writes.
 */
struct sisu_cpu_ctx {
	/* Busy-time accounting, read by userspace (CLOCK_MONOTONIC ns). */
	u64 busy_ns;		/* accounted running time of sched_ext tasks */
	u64 acct_from;		/* start of the running time not yet in busy_ns */
	u32 running;		/* a sched_ext task is on the CPU */
	u32 prop_epoch;		/* cfg.epoch the SIS_PROP state belongs to */
	u64 run_start;		/* when the current task started */
	u64 vclock;		/* the CPU's virtual clock (see vtime.bpf.c) */
	u64 rescue_at;		/* last look for starving tasks */
	u64 balance_at;		/* last comparison with the other queues */
	u32 balance_round;	/* comparisons made: farther spans every few */
	s32 push_pid;		/* the running task to move across nodes (spread()) */
	u32 push_llc;		/* ... to an idle CPU of this LLC */
	u64 push_at;		/* ... asked at this time (ns): a mark a tick old is stale */
	u64 cache_hot_until;	/* SIS_CACHE: kept for cache_hot_pid until then (ns) */
	s32 cache_hot_pid;	/* ... the short sleeper that last ran here */
	u32 trace_tick;		/* wakeups placed here since the last one put on record */
	u64 trace_sent;		/* records this CPU put in the trace's ring buffer */
	u64 trace_dropped;	/* ... and could not, the ring being full */

	/*
	 * SIS_PROP state. The idle periods are the CPU's, one history for
	 * every book; what is spent on scans is per book (enum sisu_book).
	 */
	u64 idle_stamp;		/* when the CPU went idle, 0 if busy */
	u64 avg_idle;		/* average idle period (ns) */
	struct sisu_prop_books prop[SISU_NR_BOOKS];
} __attribute__((aligned(64)));

/* How a wakeup on record was placed, besides its outcome. */
enum sisu_trace_flag {
	SISU_TRACE_QUEUED = 1,	/* a queued wakeup, placed in enqueue (its waker unknown) */
	SISU_TRACE_SCANNED = 2,	/* it reached the LLC scan */
};

/*
 * One wakeup on record (the trace): what the placement decided, put in
 * the ring buffer when the task first runs, with the wait in between.
 */
struct sisu_trace_rec {
	u64 woke_ns;			/* when the wakeup was placed (CLOCK_MONOTONIC) */
	u64 wait_ns;			/* ... until the task first ran */
	s32 waker_pid;			/* 0: the idle task, or not known (queued) */
	s32 wakee_pid;
	char waker_comm[SISU_COMM_LEN];
	char wakee_comm[SISU_COMM_LEN];
	s32 prev;			/* the CPU it last ran on */
	s32 target;			/* the wake target (wake_affine()) */
	s32 cpu;			/* the CPU the placement chose */
	s32 ran_cpu;			/* the CPU it first ran on (a pull may move it) */
	u32 rule;			/* the active policy (enum sisu_policy) */
	u32 scan_rule;			/* the rule whose depth limited the scan (auto's choice) */
	u32 limit;			/* that depth */
	u32 examined;			/* CPUs the scan examined */
	u32 kind;			/* what the placement found (enum sisu_wait) */
	u32 outcome;			/* enum sisu_outcome */
	u32 shadow_rules;		/* the rules judged in the shadow (bits) */
	u32 shadow_found;		/* ... those whose depth would have found an idle CPU */
	u32 flags;			/* enum sisu_trace_flag */
	u32 pad;
};

/*
 * Scan statistics, one per policy per CPU (a per-CPU array indexed by
 * enum sisu_policy). The policy is the one active when the wakeup ran.
 */
struct sisu_stats {
	u64 wakeups;			/* wakeups placed (select_cpu, or enqueue) */
	u64 queued_wakeups;		/* ... in enqueue: select_cpu was skipped */
	u64 affine;			/* ... whose target was the waker's CPU */
	u64 outcome[SISU_NR_OUTCOMES];
	/*
	 * ... of those sent to a CPU found idle, by outcome: the CPU was no
	 * longer free when the task got there (SCX_ENQ_IMMED handed it back).
	 */
	u64 taken[SISU_NR_OUTCOMES];
	u64 pull[SISU_NR_SPANS];	/* tasks taken from another CPU, by span */
	u64 pushed;			/* ... of which running, moved to an idler node */
	u64 moved[SISU_NR_SPANS];	/* wakeups placed this far from prev */
	u64 rescued;			/* tasks run out of turn after waiting 1 s */
	u64 rcu_readers;		/* readers queued as nice 0 (enqueue) */
	u64 scans;			/* wakeups that reached the LLC scan */
	u64 scan_ns;			/* time spent in those scans */
	u64 scan_examined;		/* CPUs they examined */
	u64 core_scans;			/* scans that looked for an idle core */
	u64 found[2][2];		/* [an idle CPU existed][the scan found one] */
	u64 examined[SISU_HIST_SLOTS];	/* CPUs examined per scan */
	u64 limit[SISU_HIST_SLOTS];	/* depth limit the policy set per scan */
	/*
	 * Scans with shadow rules and an idle CPU to find, by the set of
	 * rules that found one (bits as SISU_ACTIVE_BIT says): every pair's
	 * "able to find" matrix follows from it.
	 */
	u64 found_sets[SISU_FOUND_SETS];
	u64 shadow_scan_ns;		/* time the shadows' walks took (they only look) */
	u64 shadow_examined;		/* CPUs they examined */
	/* SIS_CACHE (sis_cache.bpf.c's comment says what each counts) */
	u64 cache_kept;			/* sleeps that kept their CPU for the sleeper */
	u64 cache_skipped;		/* idle CPUs a scan passed over, being kept */
	u64 cache_fallback;		/* scans that took a kept CPU, every idle one being kept */
	u64 cache_reclaimed;		/* wakeups that got the CPU kept for them */
	/* SIS_CURRENT (sis_current.bpf.c's comment says what each counts) */
	u64 current_cut;		/* wakeups put on the waker's CPU instead of a scan */
	u64 current_idle_left;		/* ... while an idle CPU of the LLC stood idle */
	/* scans whose SIS_UTIL depth (active or shadow) was older than depth_ttl_ns */
	u64 stale_depths;
	u64 own_first;			/* the scheduler's own threads queued first (own_first()) */
	/* the adaptive rule: its scans by the rule it had chosen for the LLC */
	u64 auto_scans[SISU_NR_POLICIES];
	/* placement to first run, by enum sisu_wait */
	u64 waits[SISU_NR_WAITS];
	u64 wait_ns[SISU_NR_WAITS];
	u64 wait_hist[SISU_NR_WAITS][SISU_WAIT_SLOTS];
};

/*
 * What one shadow rule would have done, on the scans the active policy
 * made (a per-CPU array indexed by enum sisu_policy), counted under
 * whichever policy was active: userspace diffs it from the last switch.
 */
struct sisu_rule_stats {
	u64 scans;			/* scans it was judged on */
	u64 found[2][2];		/* [an idle CPU existed][a scan to its depth found one] */
	u64 examined_sum;		/* CPUs a scan to its depth examines */
	u64 scan_ns;			/* its share of the look-only walk's time */
	u64 limit[SISU_HIST_SLOTS];	/* its depth limit per scan */
	u64 examined[SISU_HIST_SLOTS];	/* CPUs its scan examines per scan */
};

/*
 * What the scans of one LLC found, per CPU (a per-CPU array indexed by LLC,
 * sized to the machine's LLCs at load), counted under whichever policy was
 * active: userspace diffs it from the last switch like the rest. The scans
 * and the rest past found[] are what the adaptive rule weighs (auto.rs),
 * counted whenever it is active, statistics or not.
 */
struct sisu_llc_scans {
	u64 scans;			/* scans of this LLC */
	u64 found[2][2];		/* [an idle CPU existed][the scan found one] */
	u64 judged;			/* scans its candidates were judged on */
	u64 judged_found[SISU_NR_POLICIES];	/* ... a scan to the rule's depth found one */
	u64 judged_examined[SISU_NR_POLICIES];	/* ... CPUs that scan examines */
	u64 walk_ns;			/* the judging walks' time */
	u64 walk_examined;		/* ... and CPUs */
	u64 scan_ns;			/* the active scans' time */
	u64 scan_examined;		/* ... and CPUs */
	u64 missed_waits;		/* wakeups queued by a scan that missed an idle CPU */
	u64 missed_wait_ns;		/* ... their waits to their first run */
	u64 queued_waits;		/* wakeups queued by a scan, idle CPU or not */
	u64 queued_wait_ns;		/* ... their waits */
	u64 found_waits;		/* wakeups sent to the idle CPU a scan found */
	u64 found_wait_ns;		/* ... their waits */
	u64 util_at_scans;		/* the LLC's sum_util each counted scan read, added up */
	u64 util_avg_at_scans;		/* the observer's: ... its sum_util_avg, util_est left out */
	u64 est_at_scans;		/* the observer's: ... the scheduler's estimate of the same load */
};

/*
 * The kernel's own state of one LLC, as the observer (observe.bpf.c) last
 * sampled it: what the fair class's SIS_UTIL read and what it was computed
 * from.
 */
struct sisu_kernel_llc {
	u64 sampled_ns;			/* when (CLOCK_MONOTONIC), 0 if never */
	u64 sd_util_avg;		/* sched_domain_shared's util_avg (newer kernels) */
	u64 sd_capacity;		/* ... and capacity */
	u32 nr_idle_scan;		/* sched_domain_shared's nr_idle_scan */
	u32 sum_util;			/* the CPUs' cpu_util_cfs(), summed as load balancing sums them */
	u32 has_idle_cores;		/* sched_domain_shared's has_idle_cores */
	u32 llc_size;			/* sd_llc_size of its first CPU */
	u32 llc_id;			/* sd_llc_id of its first CPU */
	u32 sum_util_avg;		/* the same sum of util_avg alone, util_est left out */
} __attribute__((aligned(64)));

/*
 * A CPU's busy time as the observer keeps it (observe.bpf.c): the terms of
 * sisu_cpu_ctx's accounting, with any task but the idle task counted, so
 * that userspace folds the kernel's own load into the scheduler's estimate.
 */
struct sisu_cpu_busy {
	u64 busy_ns;		/* accounted running time (CLOCK_MONOTONIC ns) */
	u64 acct_from;		/* start of the running time not yet in busy_ns */
	u32 running;		/* a task other than the idle task is on the CPU */
	u32 pad;
} __attribute__((aligned(64)));

/* What the observer found it cannot read on this kernel (bits). */
enum sisu_observe_gap {
	SISU_GAP_SD_LLC_SHARED = 1,	/* no sd_llc_shared: no nr_idle_scan, no depths */
	SISU_GAP_SD_UTIL = 2,		/* sched_domain_shared has no util_avg/capacity */
	SISU_GAP_LLC_IDS = 4,		/* no sd_llc_size/sd_llc_id */
};

#endif /* __SISUTIL_INTF_H */
