/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Each rule's depth: how many CPUs of an LLC a scan under it may examine.
 * The one place a rule's depth is defined (intf.h's SISU_RULES registers
 * the rule). A pure function, so that the scheduler (placement.bpf.c, for
 * its own scans and its shadow rules), the kernel observer (observe.bpf.c,
 * judging the rules on the kernel's wakeups) and the host unit tests
 * (host.c) all run the same code.
 */
#ifndef __SISUTIL_DEPTH_H
#define __SISUTIL_DEPTH_H

#include "intf.h"
#include "sis_prop.h"

/*
 * The rules a shadow may be, and those the adaptive rule chooses from, as
 * intf.h's table marks them.
 */
#define SISU_RULE_SHADOWS(e, name, shadows, cand, about)	| ((shadows) ? 1U << SISU_POL_##e : 0)
#define SISU_RULE_CANDIDATE(e, name, shadows, cand, about)	| ((cand) ? 1U << SISU_POL_##e : 0)
#define SHADOW_RULES	(0 SISU_RULES(SISU_RULE_SHADOWS))
#define AUTO_CANDIDATES	(0 SISU_RULES(SISU_RULE_CANDIDATE))
_Static_assert(SISU_FOUND_SETS == 1 << (SISU_ACTIVE_BIT + 1), "a slot per set of rules");

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* No limit on the number of CPUs a scan may examine. */
#define SCAN_ALL	((u32)-1)

struct depth {
	u64 limit;	/* the depth the rule computes (statistics) */
	u32 budget;	/* CPUs the scan may examine */
	bool scan;	/* whether the scan runs at all */
};

/*
 * SIS_UTIL's limit, for an LLC @width CPUs wide whose SIS_UTIL depth is
 * @util_nr. A depth of 0 means the LLC is too busy to be worth any scan,
 * idle core or not. The small-LLC rule, proposed in the 2022 review of
 * SIS_UTIL (design.md), turns any other depth into a full scan of LLCs of
 * at most @small CPUs (0: off).
 */
static __always_inline void util_limit(u32 width, u32 small, bool idle_core, u32 util_nr,
				       struct depth *d)
{
	u64 nr = util_nr;

	if (nr && small && width <= small)
		nr = width;
	d->limit = nr;
	d->scan = nr > 0;
	if (!idle_core)
		d->budget = nr;
}

/*
 * The depth rule @pol sets for a scan of an LLC @width CPUs wide, whose
 * load is @ld. @b is the SIS_PROP books it spends (already aged), NULL
 * where SIS_PROP does not limit the scan; LLCs of at most @small CPUs get
 * util's small-LLC rule (0: off). The adaptive rule is resolved to its
 * candidate before, and the built-in selection does not scan here: both
 * get the whole LLC.
 */
static __always_inline void rule_depth(u32 pol, u32 width, u32 small, bool idle_core,
				       const struct sisu_prop_books *b,
				       const struct sisu_llc_load *ld, struct depth *d)
{
	u64 nr;

	d->limit = width;
	d->budget = SCAN_ALL;
	d->scan = true;

	switch (pol) {
	case SISU_POL_UTIL:
		util_limit(width, small, idle_core, ld->util_nr, d);
		break;
	case SISU_POL_PROP:
		/*
		 * The idle-core search is not limited by SIS_PROP. Like the
		 * kernel's loop, it examines at most nr - 1 CPUs.
		 */
		if (idle_core || !b)
			break;
		nr = sis_prop_nr(width, b->wake_avg_idle, b->avg_scan_cost);
		d->limit = nr;
		d->budget = nr - 1 < SCAN_ALL ? nr - 1 : SCAN_ALL;
		break;
	case SISU_POL_NONE:
		d->limit = 0;
		d->scan = false;
		break;
	case SISU_POL_FLAT:
		/*
		 * scx_cosmos's flat scan below its busy threshold, per LLC:
		 * under half busy (sum_util < width * SISU_CAPACITY / 2)
		 * every CPU is examined, as if a miss cost more than the
		 * scan; from there on SIS_UTIL's limit, which at half busy
		 * already leaves a third to a half of the LLC unscanned.
		 */
		if ((u64)ld->sum_util * 2 >= (u64)width * SISU_CAPACITY)
			util_limit(width, small, idle_core, ld->util_nr, d);
		break;
	default:
		break;
	}
}

#endif /* __SISUTIL_DEPTH_H */
