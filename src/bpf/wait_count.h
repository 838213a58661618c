/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counting a wakeup's wait to its first run, by what its placement found
 * (enum sisu_wait): one way for the scheduler's own wakeups and for the
 * kernel's the observer counts, so that the two records mean the same.
 */
#ifndef __SISUTIL_WAIT_COUNT_H
#define __SISUTIL_WAIT_COUNT_H

#include "intf.h"
#include "wait_hist.h"

/* A wait of @w ns of @kind, into @st's totals and histogram. */
static __always_inline void wait_count(struct sisu_stats *st, u32 kind, u64 w)
{
	u64 *n;

	n = MEMBER_VPTR(st->waits, [kind]);
	if (n)
		(*n)++;
	n = MEMBER_VPTR(st->wait_ns, [kind]);
	if (n)
		*n += w;
	n = MEMBER_VPTR(st->wait_hist, [kind][wait_slot(w)]);
	if (n)
		(*n)++;
}

/* Whether a wait of @kind followed a scan, which its LLC's sums keep. */
static __always_inline bool wait_after_scan(u32 kind)
{
	return kind == SISU_WAIT_MISSED || kind == SISU_WAIT_NONE || kind == SISU_WAIT_FOUND;
}

/* ... into the LLC's sums: found, queued, and of those queued, missed. */
static __always_inline void wait_count_llc(struct sisu_llc_scans *ls, u32 kind, u64 w)
{
	if (kind == SISU_WAIT_FOUND) {
		ls->found_waits++;
		ls->found_wait_ns += w;
		return;
	}
	ls->queued_waits++;
	ls->queued_wait_ns += w;
	if (kind == SISU_WAIT_MISSED) {
		ls->missed_waits++;
		ls->missed_wait_ns += w;
	}
}

#endif /* __SISUTIL_WAIT_COUNT_H */
