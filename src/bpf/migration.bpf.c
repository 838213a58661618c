/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Moving work between CPUs, as the kernel's load balancing does. Work
 * queued on a busy CPU wakes an idle one near it (nohz idle balancing),
 * and a CPU out of work pulls from the busiest queue of its LLC, then of
 * the LLCs nearest to it (sched_balance_newidle()), across a node only
 * from an overloaded one; a busy CPU now and then drains a much longer
 * queue (periodic balancing), and running tasks move between nodes that
 * have CPUs to spare (spread(), the active balance of calculate_imbalance()).
 */

#include "sisutil.bpf.h"

/* --- pulls of queued work ------------------------------------------- */

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
__hidden void kick_idle_for_queue(s32 cpu)
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

/* --- periodic balancing --------------------------------------------- */

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

/* --- running tasks between nodes ------------------------------------ */

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

/* How long a mark set by spread() stays good: about a tick. */
#define PUSH_STALE_NS	(10ULL * 1000 * 1000)

/* Whether @p, running on @cpu, was marked to move by spread(). */
__hidden bool push_marked(const struct task_struct *p, s32 cpu)
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
__hidden bool push_running(struct task_struct *p, s32 cpu, u64 enq_flags)
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
