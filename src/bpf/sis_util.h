/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIS_UTIL's depth as the kernel computes it (update_idle_cpu_scan(),
 * Linux 6.0 on), a pure function that the BPF scheduler, its userspace
 * (which publishes the depth every interval) and the host unit tests
 * (build.rs compiles this header for them) all run.
 *
 * The depth should shrink as the LLC fills, gently at first and steeply
 * near saturation, and reach zero a little before the LLC is fully busy,
 * where a scan would rarely find anything. With x the mean utilisation of
 * the LLC's CPUs (0..1024) and p the domain's imbalance_pct (117: the LLC
 * counts as overloaded above 100/117 = 85.5 %), the share of the LLC to
 * scan is the parabola
 *
 *   1 - (x/1024)^2 * (p/100)^2
 *
 * which is 1 when idle and 0 at x/1024 = 100/p. Kept in integers, scaled
 * by 1024 and rounded down at every step:
 *
 *   x  = sum_util / width                         (<= 1024)
 *   t  = min(x^2 * p^2 / (10000 * 1024), 1024)    (1024 * (x/1024)^2 * (p/100)^2)
 *   nr = (1024 - t) * width / 1024
 */
#ifndef __SISUTIL_SIS_UTIL_H
#define __SISUTIL_SIS_UTIL_H

#include "intf.h"

/* imbalance_pct of the kernel's LLC (MC) domain. */
#define SIS_UTIL_IMBALANCE_PCT	117ULL

static inline u64 sis_util_nr(u64 sum_util, u64 width)
{
	u64 x, t;

	if (!width)
		return 0;
	/*
	 * A CPU's utilisation never exceeds the capacity; holding x to it
	 * keeps x^2 * p^2 inside u64 whatever the caller passes.
	 */
	x = sum_util / width;
	if (x > SISU_CAPACITY)
		x = SISU_CAPACITY;
	t = x * x * SIS_UTIL_IMBALANCE_PCT * SIS_UTIL_IMBALANCE_PCT / (10000 * SISU_CAPACITY);
	if (t > SISU_CAPACITY)
		t = SISU_CAPACITY;
	return (SISU_CAPACITY - t) * width / SISU_CAPACITY;
}

#endif /* __SISUTIL_SIS_UTIL_H */
