/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIS_PROP's arithmetic as Linux 5.14-6.6 did it, written as pure functions
 * on a CPU's record so that the BPF scheduler and the host unit tests
 * (build.rs compiles this header for them) run the very same code.
 *
 * The idea: a CPU that was idle for a while when it got woken is likely to
 * be idle that long again, and the LLC as a whole offers about
 * width * that much idle time. A scan is worth doing while the time it
 * costs stays small against the idle time it can hope to find, so the
 * depth is the LLC's expected idle time over the average cost of a scan.
 */
#ifndef __SISUTIL_SIS_PROP_H
#define __SISUTIL_SIS_PROP_H

#include "intf.h"

/* sysctl_sched_migration_cost, the default max_idle_balance_cost. */
#define SIS_PROP_IDLE_BALANCE_COST	500000ULL
/* avg_idle starts at, and never exceeds, twice that. */
#define SIS_PROP_AVG_IDLE_MAX		(2 * SIS_PROP_IDLE_BALANCE_COST)
/* The depth SIS_PROP never goes below. */
#define SIS_PROP_MIN_NR			4

/*
 * The kernel's update_avg(): new = old + (sample - old) / 8, with a signed
 * difference so that the average also falls. Unsigned wrap-around of the
 * addition gives the signed result.
 */
static inline void sis_avg_update(u64 *avg, u64 sample)
{
	s64 diff = (s64)(sample - *avg);

	*avg += (u64)(diff / 8);
}

/* The state a CPU has at boot, and after a policy switch: every book fresh. */
static inline void sis_prop_reset(struct sisu_cpu_ctx *c, u64 now_jiffies)
{
	int i;

	c->idle_stamp = 0;
	c->avg_idle = SIS_PROP_AVG_IDLE_MAX;
	for (i = 0; i < SISU_NR_BOOKS; i++) {
		c->prop[i].wake_avg_idle = c->avg_idle;
		c->prop[i].wake_stamp = now_jiffies;
		c->prop[i].avg_scan_cost = 0;
	}
}

/*
 * The CPU got work after being idle for @idle_ns (the kernel does this in
 * ttwu_do_activate()). A fresh idle-time budget of half the average idle
 * period is what wakeups from this CPU may spend on scans, in every book:
 * the idle period is the same whoever spends it.
 */
static inline void sis_prop_idle_end(struct sisu_cpu_ctx *c, u64 idle_ns, u64 now_jiffies)
{
	int i;

	sis_avg_update(&c->avg_idle, idle_ns);
	if (c->avg_idle > SIS_PROP_AVG_IDLE_MAX)
		c->avg_idle = SIS_PROP_AVG_IDLE_MAX;
	for (i = 0; i < SISU_NR_BOOKS; i++) {
		c->prop[i].wake_stamp = now_jiffies;
		c->prop[i].wake_avg_idle = c->avg_idle / 2;
	}
}

/*
 * The longer a CPU stays busy, the less its last idle period predicts:
 * halve the budget once per jiffy since the CPU was last woken. Sixty-four
 * halvings empty any u64, which bounds the loop as the verifier wants.
 */
static inline void sis_prop_age(struct sisu_prop_books *b, u64 now_jiffies)
{
	int i;

	for (i = 0; i < 64 && b->wake_stamp < now_jiffies && b->wake_avg_idle; i++) {
		b->wake_stamp++;
		b->wake_avg_idle >>= 1;
	}
}

/*
 * The depth. span_avg = width * wake_avg_idle is the idle time the LLC is
 * expected to offer; dividing by the average scan cost (+1 so it is never
 * zero) gives how many scans that time pays for, which the kernel used as
 * the number of CPUs to look at. Below four scans' worth the depth is
 * four anyway. Like the kernel's loop (`if (!--nr) return -1;`) the scan
 * then examines at most nr - 1 CPUs.
 */
static inline u64 sis_prop_nr(u32 width, u64 wake_avg_idle, u64 avg_scan_cost)
{
	u64 avg_cost = avg_scan_cost + 1;
	u64 span_avg = (u64)width * wake_avg_idle;

	if (span_avg > SIS_PROP_MIN_NR * avg_cost)
		return span_avg / avg_cost;
	return SIS_PROP_MIN_NR;
}

/* Spend @ns of the budget, never below zero. */
static inline void sis_prop_spend(struct sisu_prop_books *b, u64 ns)
{
	b->wake_avg_idle -= b->wake_avg_idle < ns ? b->wake_avg_idle : ns;
}

/*
 * A scan judged for 2^@shift scans: the adaptive rule looks at one scan in
 * 2^shift, chosen at random, so a SIS_PROP it judges alone is charged only
 * on those. Spending the one scan's cost 2^shift times over spends, in
 * expectation, what every scan charged would have: the number of judged
 * scans between two idle periods is binomial with mean n / 2^shift. The
 * average cost is learnt from the one scan measured, a sample of the same
 * costs. What the lump changes is the spread: a budget the scans would
 * have worn down a little at each wakeup stays whole until a judged scan
 * spends 2^shift scans' worth of it at once.
 */
static inline void sis_prop_charge_sampled(struct sisu_prop_books *b, u64 scan_ns, u32 shift)
{
	u64 spent = ~0ULL;

	if (shift < 32 && scan_ns < (1ULL << 32))
		spent = scan_ns << shift;
	sis_prop_spend(b, spent);
	sis_avg_update(&b->avg_scan_cost, scan_ns);
}

/*
 * A scan took @scan_ns: spend it from the budget and learn the cost. (One
 * of 2^32 ns or more is spent as "everything", which empties the budget
 * just as its own time would: the budget never exceeds
 * SIS_PROP_AVG_IDLE_MAX.)
 */
static inline void sis_prop_charge(struct sisu_prop_books *b, u64 scan_ns)
{
	sis_prop_charge_sampled(b, scan_ns, 0);
}

/*
 * A shadow's scan is not run on its own: one look-only walk serves every
 * shadow rule (all walk the same CPUs in the same order and stop at the
 * first idle one), so its time is shared out by the CPUs each rule's scan
 * would have examined. SIS_PROP is charged @walk_ns * @examined /
 * @walk_examined: the walk's measured cost per CPU, times its own depth's
 * CPUs. A walk that examined nothing is all fixed cost, charged whole.
 */
static inline u64 sis_prop_share(u64 walk_ns, u32 examined, u32 walk_examined)
{
	if (!walk_examined || examined >= walk_examined)
		return walk_ns;
	return walk_ns * examined / walk_examined;
}

#endif /* __SISUTIL_SIS_PROP_H */
