//! Whether the scheduler's own work is on time: how late each interval's
//! fold and publication started, and how long each request on the stats
//! socket took from arrival to reply.
//!
//! The kernel computes SIS_UTIL's sums in load balancing, which is never
//! late; this scheduler computes them in an ordinary task that waits in
//! the queues it schedules. These figures say what that costs, in the
//! statistics of the runs they concern rather than in a separate probe.
//! HDR histograms (the hdrhistogram crate) keep every sample at a fixed
//! memory cost and give the tail exactly enough to judge a bound.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::stats::Metrics;

/// How many intervals old a published depth may be before BPF derives
/// its own (llc_load() in placement.bpf.c): a loop a little late never
/// trips it, one held up for longer hands the depth to BPF.
pub const DEPTH_TTL_INTERVALS: u32 = 4;

/// The largest value kept exactly (10 minutes in us); longer ones count as
/// that.
const MAX_US: u64 = 600_000_000;

/// A distribution of durations in microseconds.
#[derive(Clone, Debug)]
pub struct Durations(Histogram<u64>);

/// Its summary, as the statistics carry it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl Default for Durations {
    fn default() -> Self {
        // Two significant digits: 1 % resolution, a few KiB.
        Self(Histogram::new_with_bounds(1, MAX_US, 2).expect("static histogram bounds are valid"))
    }
}

impl Durations {
    pub fn record(&mut self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(MAX_US);
        self.0.saturating_record(us.max(1));
    }

    pub fn summary(&self) -> Summary {
        if self.0.is_empty() {
            return Summary::default();
        }
        Summary {
            count: self.0.len(),
            p50_us: self.0.value_at_quantile(0.5),
            p99_us: self.0.value_at_quantile(0.99),
            max_us: self.0.max(),
        }
    }

    pub fn reset(&mut self) {
        self.0.reset();
    }
}

/// Request times, shared between the socket's threads (which record) and
/// the loop (which reads and restarts them with the other counters).
#[derive(Clone, Debug, Default)]
pub struct RequestTimes(Arc<Mutex<Durations>>);

impl RequestTimes {
    pub fn record(&self, d: Duration) {
        if let Ok(mut h) = self.0.lock() {
            h.record(d);
        }
    }

    pub fn summary(&self) -> Summary {
        self.0.lock().map(|h| h.summary()).unwrap_or_default()
    }

    pub fn reset(&self) {
        if let Ok(mut h) = self.0.lock() {
            h.reset();
        }
    }
}

/// The loop's clock and record: when its next interval is due, how late
/// each one started, and the requests' times.
#[derive(Debug)]
pub struct Timeliness {
    interval: Duration,
    next: Instant,
    late: Durations,
    /// Intervals that never ran: the loop woke one or more whole
    /// intervals late and started the next one from then.
    skipped: u64,
    pub requests: RequestTimes,
}

impl Timeliness {
    /// A clock whose first interval is due one `interval` from now.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            next: Instant::now() + interval,
            late: Durations::default(),
            skipped: 0,
            requests: RequestTimes::default(),
        }
    }

    /// Whether an interval is due now; if so it is counted as started,
    /// with its lateness, and the next one is set. A loop that woke whole
    /// intervals late does not catch up with a burst: it goes on from now.
    pub fn due(&mut self) -> bool {
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        let late = now - self.next;
        let skipped = missed(late, self.interval);
        self.late.record(late);
        self.skipped += skipped;
        self.next = if skipped > 0 {
            now + self.interval
        } else {
            self.next + self.interval
        };
        true
    }

    /// How long the loop may sleep: until the next interval, or `cap`.
    pub fn sleep_for(&self, cap: Duration) -> Duration {
        self.next.saturating_duration_since(Instant::now()).min(cap)
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    pub fn reset(&mut self) {
        self.late.reset();
        self.skipped = 0;
        self.requests.reset();
    }

    /// Puts the record into the statistics.
    pub fn fill(&self, m: &mut Metrics) {
        let late = self.late.summary();
        let req = self.requests.summary();
        m.loop_interval_ms = self.interval.as_millis() as u64;
        m.loop_intervals = late.count;
        m.loop_late_p50_us = late.p50_us;
        m.loop_late_p99_us = late.p99_us;
        m.loop_late_max_us = late.max_us;
        m.loop_skipped = self.skipped;
        m.requests = req.count;
        m.request_p50_us = req.p50_us;
        m.request_p99_us = req.p99_us;
        m.request_max_us = req.max_us;
    }
}

/// How many whole intervals of `interval` fit in `late`: the starts the
/// loop missed when it resumes from now rather than catching up.
fn missed(late: Duration, interval: Duration) -> u64 {
    if interval.is_zero() {
        return 0;
    }
    (late.as_nanos() / interval.as_nanos()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reads_the_tail() {
        let mut d = Durations::default();
        for us in 1..=100u64 {
            d.record(Duration::from_micros(us * 10));
        }
        let s = d.summary();
        assert_eq!(s.count, 100);
        assert!((495..=505).contains(&s.p50_us), "{s:?}");
        assert!((985..=1000).contains(&s.p99_us), "{s:?}");
        assert!((995..=1005).contains(&s.max_us), "{s:?}");
        d.reset();
        assert_eq!(d.summary(), Summary::default());
    }

    #[test]
    fn an_hour_late_counts_as_the_cap_not_a_panic() {
        let mut d = Durations::default();
        d.record(Duration::from_secs(3600));
        d.record(Duration::ZERO);
        let s = d.summary();
        assert_eq!(s.count, 2);
        assert!(s.max_us >= MAX_US - MAX_US / 100, "{s:?}");
    }

    #[test]
    fn missed_counts_whole_intervals() {
        let i = Duration::from_millis(16);
        assert_eq!(missed(Duration::from_millis(15), i), 0);
        assert_eq!(missed(Duration::from_millis(16), i), 1);
        assert_eq!(missed(Duration::from_millis(50), i), 3);
        assert_eq!(missed(Duration::from_millis(50), Duration::ZERO), 0);
    }

    #[test]
    fn a_late_loop_counts_its_lateness_and_goes_on_from_now() {
        let i = Duration::from_millis(20);
        let mut t = Timeliness::new(i);
        assert!(!t.due(), "not due before its interval");
        std::thread::sleep(i * 3 + Duration::from_millis(5));
        assert!(t.due());
        assert!(!t.due(), "no burst to catch up");
        let mut m = Metrics::default();
        t.fill(&mut m);
        assert_eq!((m.loop_intervals, m.loop_interval_ms), (1, 20));
        assert!(m.loop_late_max_us >= 40_000, "{m:?}");
        assert!(m.loop_skipped >= 2, "{}", m.loop_skipped);
        assert!(t.sleep_for(Duration::from_secs(1)) <= i);
        t.reset();
        let mut m = Metrics::default();
        t.fill(&mut m);
        assert_eq!((m.loop_intervals, m.loop_skipped), (0, 0));
    }

    #[test]
    fn request_times_are_shared_between_clones() {
        let t = RequestTimes::default();
        let c = t.clone();
        c.record(Duration::from_millis(3));
        assert_eq!(t.summary().count, 1);
        t.reset();
        assert_eq!(c.summary().count, 0);
    }
}
