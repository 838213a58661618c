/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a task runs: the kernel's select_task_rq_fair(), for the wakeup
 * and fork paths. A wakeup first picks its target (wake_affine()), then
 * select_idle_sibling() tries target, prev, the task's recent CPU and an
 * idle SMT sibling before select_idle_cpu() scans the target's LLC, as
 * deep as the active policy allows (SIS_UTIL, SIS_PROP, none, or the
 * whole LLC). The measuring watches the scan from three hooks beside it
 * (shadows_for(), shadows_look(), scan_seen(): the shadow rules judged on
 * the same idle state, auto's sample, the counters), and the wakeup as a
 * whole from count_wakeup() and note_wake() in select_cpu. A
 * new task goes to the idlest LLC near its parent (find_idlest_cpu()), and
 * a queued wakeup, which bypasses select_cpu, is placed from enqueue. The
 * idle periods that SIS_PROP averages end here too.
 */

#include "sisutil.bpf.h"
#include "sis_util.h"
#include "depth.h"
#include "wait_count.h"

/* --- the wake target ------------------------------------------------ */

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
__hidden s32 wake_target(struct task_struct *p, s32 prev, u64 wake_flags)
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

/* --- the scan of the LLC -------------------------------------------- */

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
	u32 skipped;	/* SIS_CACHE: idle CPUs passed over, kept for others */
	bool fell_back;	/* ... and the one taken was kept, all idle ones being */
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
	u32 llc, width, budget, examined = 0, skipped = 0, start, i;
	const struct cpumask *idle;
	struct sisu_llc_ctx *lc;
	bool idle_core, claim, cache;
	s32 fallback = -1, kept = -1;
	u64 now = 0;

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
	__sink(skipped);
	__sink(kept);
	sc->found = -1;
	sc->examined = 0;
	sc->skipped = 0;
	sc->fell_back = false;
	/* SIS_CACHE passes over kept CPUs in the active CPU-by-CPU scan. */
	cache = claim && !idle_core && cfg.sis_cache;
	if (cache)
		now = bpf_ktime_get_ns();
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
			break;
		examined++;
		if (cache && bpf_cpumask_test_cpu(cpu, idle) && cache_kept_from(p, cpu, now)) {
			if (kept < 0)
				kept = cpu;
			skipped++;
			continue;
		}
		if (probe(cpu, claim, idle)) {
			sc->found = cpu;
			goto out;
		}
	}

	if (!idle_core) {
		/* Every idle CPU examined was kept: the first of them. */
		if (kept >= 0 && probe(kept, claim, idle)) {
			sc->found = kept;
			sc->fell_back = true;
		}
		goto out;
	}
	/* No idle core after all: drop the hint, take the first idle thread. */
	lc = llc_ctx(llc);
	if (claim && lc && lc->has_idle_cores)
		lc->has_idle_cores = 0;
	if (fallback >= 0 && probe(fallback, claim, idle))
		sc->found = fallback;
out:
	scx_bpf_put_idle_cpumask(idle);
	sc->examined = examined;
	sc->skipped = skipped;
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

/*
 * The load of @llc, for llc_load() while the published one is stale: the
 * CPUs busy at this moment, each counted at full capacity. Userspace
 * folds the sums in an ordinary task that waits in the queues this
 * scheduler keeps, where the kernel folds them in load balancing, which is
 * never late; this is cruder than the average, never stale. (A global
 * function, so that the verifier walks its loop once, not once per rule
 * judged.)
 */
__noinline u32 llc_busy_now(u32 llc, u32 width)
{
	struct sisu_stats *st = stats_of(active_policy());
	u32 busy = 0, i;

	if (st)
		st->stale_depths++;
	bpf_for(i, 0, width) {
		struct sisu_cpu_ctx *c = cpu_ctx(walk_cpu(llc, 0, i, width));

		if (c && c->running)
			busy += SISU_CAPACITY;
	}
	return busy;
}

/*
 * @llc's load as the depth rules read it, never older than depth_ttl_ns:
 * the sum userspace published and SIS_UTIL's depth from it, or past that
 * bound both derived now (llc_busy_now()).
 */
static __always_inline void llc_load(u32 llc, struct sisu_llc_load *ld)
{
	struct sisu_llc_ctx *lc = llc_ctx(llc);
	u32 width = width_of(llc);

	if (!lc) {
		ld->sum_util = 0;
		ld->util_nr = width;
		return;
	}
	if ((s64)(bpf_ktime_get_ns() - lc->published_at) <= (s64)depth_ttl_ns) {
		ld->sum_util = lc->sum_util;
		ld->util_nr = lc->nr_idle_scan;
		return;
	}
	ld->sum_util = llc_busy_now(llc, width);
	ld->util_nr = sis_util_nr(ld->sum_util, width);
}

/*
 * The rule that limits a scan of @llc under @pol: @pol itself, or for the
 * adaptive rule the candidate userspace chose for the LLC (SIS_UTIL until
 * it has measured enough to choose).
 */
static u32 rule_of(u32 pol, u32 llc)
{
	struct sisu_llc_ctx *lc;
	u32 r;

	if (pol != SISU_POL_AUTO)
		return pol;
	lc = llc_ctx(llc);
	r = lc ? lc->auto_rule : SISU_POL_UTIL;
	return r < SISU_NR_POLICIES && (AUTO_CANDIDATES & (1U << r)) ? r : SISU_POL_UTIL;
}

/*
 * The depth rule @pol sets for a scan of @llc (depth.h's rule_depth(), the
 * one place a rule's depth is defined). @b is the SIS_PROP books it spends
 * (the waking CPU's, already aged), NULL where SIS_PROP does not limit the
 * scan; @ld is the LLC's load, read once per scan (llc_load()). Pure: the
 * shadow rules call it too, each with its books.
 */
static __always_inline void policy_depth(u32 pol, u32 llc, bool idle_core,
					 const struct sisu_prop_books *b,
					 const struct sisu_llc_load *ld, struct depth *d)
{
	rule_depth(pol, width_of(llc), cfg.small_llc, idle_core, b, ld, d);
}

/* The books of @c that @book names, aged to now; NULL without a record. */
static struct sisu_prop_books *aged_books(struct sisu_cpu_ctx *c, u32 book)
{
	struct sisu_prop_books *b;
	u64 j = bpf_jiffies64();

	if (!c)
		return NULL;
	prop_sync(c, j);
	b = MEMBER_VPTR(c->prop, [book]);
	if (b)
		sis_prop_age(b, j);
	return b;
}

/* This CPU's verdicts record, cleared for a scan from @target; NULL if none. */
static struct verdicts *fresh_verdicts(s32 target, bool idle_core)
{
	u32 zero = 0;
	struct verdicts *v = bpf_map_lookup_elem(&verdicts_buf, &zero);

	if (!v)
		return NULL;
	v->target = target;
	v->idle_core = idle_core;
	v->rules = 0;
	v->counted = 0;
	v->prop_shift = 0;
	v->found = 0;
	v->any = false;
	v->walk_examined = 0;
	v->walk_ns = 0;
	v->scan_rule = SISU_POL_NONE;
	v->scan_limit = 0;
	v->scan_examined = 0;
	return v;
}

/*
 * Every shadow rule on the same wakeup, with one walk. All depth-limited
 * rules walk the LLC in the same order and stop at the first idle CPU, so
 * a look-only walk as deep as the deepest of them answers for each: a rule
 * with budget b examines min(b, walked) CPUs, and finds the idle CPU the
 * walk found if the walk reached it within b. Looking for an idle core,
 * depth does not limit the walk, and every rule that scans at all finds
 * what it finds. SIS_PROP in the shadow keeps books of its own, charged
 * with its share of the walk's time (sis_prop_share()), as an active
 * SIS_PROP would be charged with its scan's; where the walk is a sample of
 * the scans, once for every scan it stands for.
 */
__noinline void judge_shadows(struct task_struct *p __arg_trusted, struct verdicts *v)
{
	struct sisu_prop_books *sb = NULL;
	u32 llc, r, budget = 0, seen;
	struct scan w = {};
	struct depth d;
	bool walk = false;
	u64 t0;

	if (!v)
		return;
	llc = llc_of(v->target);
	if (!v->idle_core && (v->rules & (1U << SISU_POL_PROP)))
		sb = aged_books(cpu_ctx(bpf_get_smp_processor_id()), SISU_BOOK_SHADOW);
	bpf_for(r, 0, SISU_NR_POLICIES) {
		if (!(v->rules & (1U << r)))
			continue;
		policy_depth(r, llc, v->idle_core, sb, &v->load, &d);
		v->limit[r] = d.limit;
		/* A rule that does not scan examines nothing (budget 0). */
		v->examined[r] = d.scan ? d.budget : 0;
		if (d.scan) {
			walk = true;
			if (d.budget > budget)
				budget = d.budget;
		}
	}
	if (!walk)
		return;

	w.target = v->target;
	w.idle_core = v->idle_core;
	w.budget = budget;
	t0 = bpf_ktime_get_ns();
	scan_llc(p, &w);
	v->walk_ns = bpf_ktime_get_ns() - t0;
	seen = w.examined;
	v->walk_examined = seen;
	v->any = w.found >= 0;

	bpf_for(r, 0, SISU_NR_POLICIES) {
		u32 b = v->examined[r];

		if (!(v->rules & (1U << r)) || !b)
			continue;
		if (v->idle_core) {
			v->examined[r] = seen;
		} else {
			v->examined[r] = b < seen ? b : seen;
			if (seen > b)
				continue;
		}
		if (v->any)
			v->found |= 1U << r;
	}
	if (sb)
		sis_prop_charge_sampled(sb, sis_prop_share(v->walk_ns, v->examined[SISU_POL_PROP], seen),
					v->prop_shift);
}

/*
 * Count the verdicts of the rules the statistics count: per rule
 * (rule_stats), and the set of rules that found, the active policy's bit
 * included, when an idle CPU existed.
 */
__noinline void count_shadows(struct sisu_stats *st, const struct verdicts *v, bool existed,
			      bool found)
{
	u32 set, r;
	u64 *n;

	if (!v || !st)
		return;
	st->shadow_scan_ns += v->walk_ns;
	st->shadow_examined += v->walk_examined;
	set = ((v->found & v->counted) | (found ? 1U << SISU_ACTIVE_BIT : 0)) &
	      (SISU_FOUND_SETS - 1);
	n = MEMBER_VPTR(st->found_sets, [set]);
	if (existed && n)
		(*n)++;

	bpf_for(r, 0, SISU_NR_POLICIES) {
		struct sisu_rule_stats *rs;
		u32 key = r, examined = v->examined[r];

		if (!(v->counted & (1U << r)))
			continue;
		rs = bpf_map_lookup_elem(&rule_stats, &key);
		if (!rs)
			continue;
		rs->scans++;
		matrix_add(rs->found, existed, v->found & (1U << r));
		rs->examined_sum += examined;
		rs->scan_ns += examined ? sis_prop_share(v->walk_ns, examined, v->walk_examined) : 0;
		hist_add(rs->limit, v->limit[r]);
		hist_add(rs->examined, examined);
	}
}

/*
 * Whether the adaptive rule judges its candidates on this scan of @llc:
 * one in 2^auto_shift (returned in @shift), at random. The estimates it
 * needs are means, which a sample gives as well as every scan; userspace
 * sets each LLC's shift so that its sums hold about as many judged scans
 * however often the LLC scans (auto.rs), which bounds the walks' cost
 * where scans are many and judges every scan where they are few. Random
 * rather than every n-th, so that no rhythm of the load lines up with the
 * sample. The other scans cost what a util scan costs: a shadow SIS_PROP
 * that only this rule judges is charged for them in one go
 * (sis_prop_charge_sampled()), and only judged wakeups' waits are timed.
 */
static bool auto_judges(u32 llc, u32 *shift)
{
	struct sisu_llc_ctx *lc = llc_ctx(llc);
	u32 k = lc ? lc->auto_shift : 0;

	if (k > SISU_AUTO_MAX_SHIFT)
		k = SISU_AUTO_MAX_SHIFT;
	*shift = k;
	return !(bpf_get_prandom_u32() & ((1U << k) - 1));
}

/*
 * What the adaptive rule weighs (struct sisu_llc_scans; auto.rs). Global,
 * so that the verifier walks its loop once, not on every path of the
 * placement.
 */
__noinline void count_candidates(struct sisu_llc_scans *ls, const struct verdicts *v)
{
	u32 r;

	if (!ls || !v)
		return;
	ls->judged++;
	ls->walk_ns += v->walk_ns;
	ls->walk_examined += v->walk_examined;
	bpf_for(r, 0, SISU_NR_POLICIES) {
		u64 *f = MEMBER_VPTR(ls->judged_found, [r]);
		u64 *e = MEMBER_VPTR(ls->judged_examined, [r]);

		if (!(AUTO_CANDIDATES & (1U << r)) || !f || !e)
			continue;
		if (v->found & (1U << r))
			(*f)++;
		*e += v->examined[r];
	}
}

/*
 * Step 5 of the placement: scan the target's LLC under the active policy,
 * judge the shadow rules (and the adaptive rule's candidates) on the same
 * idle state, and count what happened. @pk->wait says what the wakee's
 * wait will be counted as.
 */
/*
 * The measuring around a scan, in three hooks that select_idle_cpu()
 * calls: shadows_for() before it (which rules look at this wakeup too),
 * shadows_look() once SIS_UTIL's depth is known (they look before the
 * scan claims a CPU), and scan_seen() after it (the counters). With the
 * statistics off and a fixed rule they do nothing but hand back.
 */

/* The verdicts record of a scan from @target, with the rules it judges. */
static __always_inline struct verdicts *shadows_for(s32 target, bool idle_core, u32 pol, u32 llc,
						     struct pick *pk)
{
	struct verdicts *v;
	u32 shift = 0;

	pk->judged = false;
	/* Only the statistics and the adaptive rule read verdicts. */
	if (!stats_on && pol != SISU_POL_AUTO)
		return NULL;
	v = fresh_verdicts(target, idle_core);
	if (!v)
		return NULL;
	/* Shadows are judged only where the statistics count them. */
	v->counted = stats_on ? cfg.shadows & SHADOW_RULES : 0;
	v->rules = v->counted;
	if (pol == SISU_POL_AUTO && auto_judges(llc, &shift)) {
		pk->judged = true;
		v->rules |= AUTO_CANDIDATES;
		if (!(v->counted & (1U << SISU_POL_PROP)))
			v->prop_shift = shift;
	}
	return v;
}

static __always_inline void shadows_look(struct task_struct *p, struct verdicts *v,
					 const struct sisu_llc_load *ld)
{
	if (!v)
		return;
	v->load = *ld;
	if (v->rules)
		judge_shadows(p, v);
}

/* What a scan did, whatever it missed: its depth, the CPUs it examined. */
static __always_inline void scan_did(struct sisu_stats *st, const struct scan *sc,
				     const struct depth *d)
{
	st->scans++;
	st->scan_examined += sc->examined;
	if (sc->idle_core)
		st->core_scans++;
	hist_add(st->examined, sc->examined);
	hist_add(st->limit, d->limit);
	st->cache_skipped += sc->skipped;
	if (sc->fell_back)
		st->cache_fallback++;
}

/*
 * What the scan of @llc did, counted: per policy, per LLC, the shadows
 * against it, and for the adaptive rule its candidates' verdicts.
 */
static __always_inline void scan_seen(struct task_struct *p, u32 pol, u32 rule, u32 llc,
				      const struct scan *sc, const struct depth *d,
				      struct verdicts *v, u64 ns, bool timed, struct pick *pk)
{
	struct sisu_stats *st = stats_of(pol);
	bool adaptive = pol == SISU_POL_AUTO, found = sc->found >= 0, existed;
	struct sisu_llc_scans *ls;
	const struct cpumask *idle;

	if (v) {
		v->scan_rule = rule;
		v->scan_limit = d->limit < SCAN_ALL ? d->limit : SCAN_ALL;
		v->scan_examined = sc->examined;
	}
	if (!st && !adaptive)
		return;
	/*
	 * Without the detail, what the scan did, not what it missed (a
	 * trace records that, and pays for it while it runs).
	 */
	if (st && !detail_on && !adaptive && !cfg.trace_every) {
		ls = bpf_map_lookup_elem(&llc_scans, &llc);
		if (ls)
			ls->scans++;
		scan_did(st, sc, d);
		return;
	}
	/*
	 * Without statistics the adaptive rule weighs its judged scans alone
	 * (all of them while a trace times every wait: their kinds go into
	 * its sums); of the others it counts only how many there were, which
	 * sets its sample.
	 */
	if (!st && !pk->judged && !cfg.trace_every) {
		ls = bpf_map_lookup_elem(&llc_scans, &llc);
		if (ls)
			ls->scans++;
		return;
	}

	/*
	 * Whatever a scan found was idle. Otherwise nothing was claimed, and
	 * the idle mask still says whether an idle CPU was there to find.
	 */
	if (!found && !(v && v->any)) {
		idle = scx_bpf_get_idle_cpumask();
		existed = llc_has_idle(p, llc, idle);
		scx_bpf_put_idle_cpumask(idle);
	} else {
		existed = true;
	}
	if (!found && existed)
		pk->wait = SISU_WAIT_MISSED;

	/* The same outcome, counted against the LLC that was scanned. */
	ls = bpf_map_lookup_elem(&llc_scans, &llc);
	if (ls) {
		ls->scans++;
		/* Only timed scans say what examining a CPU costs. */
		if (timed) {
			ls->scan_ns += ns;
			ls->scan_examined += sc->examined;
		}
		if (st) {
			struct sisu_llc_ctx *lc = llc_ctx(llc);

			matrix_add(ls->found, existed, found);
			/* The sum the depth came from, for comparing inputs. */
			if (lc)
				ls->util_at_scans += lc->sum_util;
		}
		if (v && adaptive && (v->rules & AUTO_CANDIDATES) == AUTO_CANDIDATES)
			count_candidates(ls, v);
	}
	if (!st)
		return;
	if (adaptive) {
		u64 *n = MEMBER_VPTR(st->auto_scans, [rule]);

		if (n)
			(*n)++;
	}
	scan_did(st, sc, d);
	st->scan_ns += ns;
	matrix_add(st->found, existed, found);
	if (v && v->counted)
		count_shadows(st, v, existed, found);
}

/*
 * select_idle_cpu(): the scan of @target's LLC, as deep as the rule that
 * limits it there allows (rule_of(), policy_depth()); an idle CPU, or -1.
 */
static s32 select_idle_cpu(struct task_struct *p, s32 target, bool idle_core, u32 pol,
			   struct pick *pk)
{
	u32 llc = llc_of(target), rule = rule_of(pol, llc);
	struct sisu_llc_load ld;
	struct scan sc = { .target = target, .idle_core = idle_core, .claim = true, .found = -1 };
	struct sisu_prop_books *books = NULL;
	struct verdicts *v;
	bool prop, timed;
	struct depth d;
	u64 t0 = 0, ns = 0;

	v = shadows_for(target, idle_core, pol, llc, pk);
	/* The LLC's load, read once for the active scan and the shadows alike. */
	llc_load(llc, &ld);
	shadows_look(p, v, &ld);

	/*
	 * An active SIS_PROP spends its own books, charged with its scan's
	 * time (select_idle_cpu() in Linux 5.14-6.6), idle-core scans aside.
	 * (Scalars decide the timing: the verifier refuses the OR of two
	 * pointers that a test of both could compile to.)
	 */
	prop = rule == SISU_POL_PROP && !idle_core;
	if (prop)
		books = aged_books(cpu_ctx(bpf_get_smp_processor_id()), SISU_BOOK_ACTIVE);
	policy_depth(rule, llc, idle_core, books, &ld, &d);
	timed = detail_on || prop || pk->judged;
	if (d.scan) {
		if (timed)
			t0 = bpf_ktime_get_ns();
		sc.budget = d.budget;
		scan_llc(p, &sc);
		if (timed)
			ns = bpf_ktime_get_ns() - t0;
		if (books)
			sis_prop_charge(books, ns);
	}
	pk->wait = sc.found >= 0 ? SISU_WAIT_FOUND : SISU_WAIT_NONE;
	scan_seen(p, pol, rule, llc, &sc, &d, v, ns, timed, pk);
	return sc.found;
}

/* --- select_idle_sibling() ------------------------------------------ */

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
	pk->wait = SISU_WAIT_IDLE;

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

	/*
	 * SIS_CURRENT, where it is on, may send p to its waker instead; its
	 * busy test reads SIS_UTIL's depth under the same bound as the scans.
	 */
	if (cfg.sis_current) {
		struct sisu_llc_load ld;

		llc_load(llc_of(target), &ld);
		if (current_pick(p, target, ld.util_nr, pk, st))
			return;
	}
	cpu = select_idle_cpu(p, target, idle_core, pol, pk);
	if (cpu >= 0)
		pick_idle(pk, cpu, SISU_OUT_SCAN);
}

/* The built-in policy, as a baseline arm. */
__hidden void pick_builtin(struct task_struct *p, s32 prev, u64 wake_flags, struct pick *pk)
{
	bool is_idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev, wake_flags, &is_idle);

	if (!is_idle)
		return pick_idle(pk, cpu, SISU_OUT_BUSY);
	pick_idle(pk, cpu, cpu == prev ? SISU_OUT_PREV : SISU_OUT_SCAN);
}

/* --- what a wakeup did ---------------------------------------------- */

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
__hidden void count_wakeup(struct sisu_stats *st, s32 prev, s32 target, const struct pick *pk,
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
 * The wait from a wakeup's placement to the task's first run, by what the
 * placement found (enum sisu_wait): what a found-rate cannot say is what
 * a miss costs. Timed with the detailed statistics (detail_on), and for
 * the scans the adaptive rule judges, which it weighs a find by.
 */
__hidden void note_wake(struct task_struct *p, const struct pick *pk, u32 pol, s32 prev,
			s32 target)
{
	struct task_ctx *tctx;
	u32 kind = SISU_WAIT_IDLE;

	if (!detail_on && !pk->judged && !cfg.trace_every)
		return;
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx)
		return;
	if (pk->outcome == SISU_OUT_SCAN)
		kind = SISU_WAIT_FOUND;
	else if (pk->outcome == SISU_OUT_BUSY)
		kind = pol == SISU_POL_BUILTIN ? SISU_WAIT_NONE : pk->wait;
	tctx->wake_kind = kind;
	tctx->wake_llc = llc_of(pk->cpu);
	tctx->woke_at = bpf_ktime_get_ns();
	/* Tracing off, the trace costs this load and no call. */
	if (cfg.trace_every && trace_note(p, tctx, pk, pol)) {
		tctx->trace.prev = prev;
		tctx->trace.target = target;
	}
}

/* @p runs at @now: the wait since its wakeup's placement ends, and is counted. */
__hidden void wait_end(struct task_struct *p, u64 now)
{
	struct sisu_llc_scans *ls;
	struct task_ctx *tctx;
	struct sisu_stats *st;
	u32 kind, llc;
	u64 w;

	if (!detail_on && active_policy() != SISU_POL_AUTO && !cfg.trace_every)
		return;
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx || !tctx->woke_at)
		return;
	w = now > tctx->woke_at ? now - tctx->woke_at : 0;
	tctx->woke_at = 0;
	if (tctx->traced)
		trace_emit(p, tctx, w);
	kind = tctx->wake_kind;
	llc = tctx->wake_llc;
	st = stats_of(active_policy());
	if (st)
		wait_count(st, kind, w);
	if (!wait_after_scan(kind))
		return;
	ls = bpf_map_lookup_elem(&llc_scans, &llc);
	if (ls)
		wait_count_llc(ls, kind, w);
}

/* --- fork ----------------------------------------------------------- */

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

/* --- queued wakeups ------------------------------------------------- */

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
__hidden bool place_queued_wakeup(struct task_struct *p, s32 cpu, u64 enq_flags)
{
	u32 pol = active_policy();
	struct sisu_stats *st = stats_of(pol);
	struct pick pk = {};
	u64 immed;

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
		cache_woke(p, &pk, st);
	}
	count_wakeup(st, cpu, cpu, &pk, true);
	note_wake(p, &pk, pol, cpu, cpu);
	immed = note_placed(p, &pk);
	if (pk.outcome == SISU_OUT_BUSY)
		return false;
	/* The insertion wakes pk.cpu (a reschedule of its idle task). */
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | pk.cpu, task_slice(p), enq_flags | immed);
	return true;
}

/* --- was the CPU still free? ---------------------------------------- */

/*
 * A scan sees the idle mask as it was when it looked; by the time the
 * task gets to the CPU it claimed, the CPU may run something else (a
 * task it pulled meanwhile, or one a higher class woke). The kernel says
 * which: a task inserted with SCX_ENQ_IMMED that cannot run at once comes
 * back through enqueue with SCX_ENQ_REENQ and the reason
 * SCX_TASK_REENQ_IMMED. That is the ground truth of a "found", against
 * which the idle mask's view is judged (docs/policies.md).
 *
 * Measuring must not change where tasks run, so a task handed back goes
 * to that CPU's local queue, where it would have waited without the flag,
 * and one the flag handed back after a higher class preempted it goes to
 * the head, where the kernel puts a preempted task with slice left. On
 * kernels without the flag (before 7.1) SCX_ENQ_IMMED reads 0, and so
 * does every bounce count; with statistics off it is not asked for.
 */

/*
 * Remembers how @p was placed, for its bounce to be counted by outcome;
 * returns the flag to insert it with.
 */
__hidden u64 note_placed(struct task_struct *p, const struct pick *pk)
{
	struct task_ctx *tctx;

	if (!detail_on || !SCX_ENQ_IMMED)
		return 0;
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx)
		return 0;
	tctx->placed = pk->outcome == SISU_OUT_BUSY ? 0 : pk->outcome + 1;
	return tctx->placed ? SCX_ENQ_IMMED : 0;
}

/* Why the kernel gives @p back, or 0: the REENQ reasons as this kernel has them. */
static u64 handback_reason(const struct task_struct *p, u64 enq_flags)
{
	if (!(enq_flags & SCX_ENQ_REENQ) ||
	    !bpf_core_enum_value_exists(enum scx_ent_flags, SCX_TASK_REENQ_REASON_MASK))
		return 0;
	return p->scx.flags & bpf_core_enum_value(enum scx_ent_flags, SCX_TASK_REENQ_REASON_MASK);
}

/* Counts the CPU @p found taken, under the outcome that chose it. */
static void count_taken(struct task_struct *p)
{
	struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	struct sisu_stats *st = stats_of(active_policy());
	u64 *n;

	if (!tctx || !tctx->placed)
		return;
	n = st ? MEMBER_VPTR(st->taken, [tctx->placed - 1]) : NULL;
	if (n)
		(*n)++;
	tctx->placed = 0;
}

/* Takes @p back if SCX_ENQ_IMMED sent it here (the rule above). */
__hidden bool handed_back(struct task_struct *p, u64 enq_flags)
{
	u64 why = handback_reason(p, enq_flags);

	enq_flags &= ~SCX_ENQ_IMMED;
	if (bpf_core_enum_value_exists(enum scx_ent_flags, SCX_TASK_REENQ_IMMED) &&
	    why == bpf_core_enum_value(enum scx_ent_flags, SCX_TASK_REENQ_IMMED)) {
		count_taken(p);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(p), enq_flags);
		return true;
	}
	if (bpf_core_enum_value_exists(enum scx_ent_flags, SCX_TASK_REENQ_PREEMPTED) &&
	    why == bpf_core_enum_value(enum scx_ent_flags, SCX_TASK_REENQ_PREEMPTED)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, 0, enq_flags | SCX_ENQ_HEAD);
		return true;
	}
	return false;
}

/* --- idle periods --------------------------------------------------- */

/*
 * The CPU is about to go idle, its pull having found nothing: where the
 * kernel's newidle balance stamps the start of the idle period that
 * SIS_PROP averages, and where its idle entry sets the idle-core hint once
 * every thread of the core is idle (this one is about to be). Called from
 * dispatch, and idle_exit() from running, rather than from an update_idle
 * op, which would cost two more BPF calls per wakeup.
 */
__hidden void idle_enter(s32 cpu, struct sisu_cpu_ctx *c)
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
__hidden void idle_exit(struct sisu_cpu_ctx *c, u64 now)
{
	u64 j = bpf_jiffies64();

	/* A policy switch since the stamp discards the period with the state. */
	prop_sync(c, j);
	if (c->idle_stamp && now > c->idle_stamp)
		sis_prop_idle_end(c, now - c->idle_stamp, j);
	c->idle_stamp = 0;
}
