/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The slots of the wakeup-to-running wait histograms (struct sisu_stats'
 * wait_hist), a pure function shared by BPF and the host unit tests
 * (host.c), which check userspace's inverse against it.
 *
 * Waits span five orders of magnitude, from a microsecond on an idle CPU
 * to hundreds of milliseconds behind a queue, and a percentile wants the
 * same relative precision at both ends: log-linear slots, as HDR
 * histograms keep them. Each power of two is cut into four, so a slot's
 * width is a quarter of its lower bound and a percentile read off its
 * middle is within 12.5 % of the truth:
 *
 *	slot(v) = 0                                  for v < 2^S
 *	slot(v) = 1 + 4 (o - S) + (v >> (o - 2)) - 4  for o = floor(log2 v) >= S
 *
 * ((v >> (o - 2)) is 4..7: the two bits after the leading one), capped at
 * the last slot. With S = 10 and 96 slots, the last slot starts at
 * 1.5 * 2^33 ns, about 12.9 s: only a stall waits longer.
 */
#ifndef __SISUTIL_WAIT_HIST_H
#define __SISUTIL_WAIT_HIST_H

#include "intf.h"

/* floor(log2(@v)) for @v > 0, by halving the range: no loop for the verifier. */
static inline u32 sisu_log2(u64 v)
{
	u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

static inline u32 wait_slot(u64 ns)
{
	u32 o, slot;

	if (ns < (1ULL << SISU_WAIT_SHIFT))
		return 0;
	o = sisu_log2(ns);
	slot = 1 + 4 * (o - SISU_WAIT_SHIFT) + (u32)(ns >> (o - 2)) - 4;
	return slot < SISU_WAIT_SLOTS - 1 ? slot : SISU_WAIT_SLOTS - 1;
}

#endif /* __SISUTIL_WAIT_HIST_H */
