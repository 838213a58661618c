//! The arms' order within each round of a point: which arm runs first,
//! which after which, and what the design balances at the iterations
//! asked for.

use serde::{Deserialize, Serialize};

/// The order the arms take within each round of a point (one iteration
/// of all arms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// A B C, C B A, A B C...: the arm that ends a round begins the next,
    /// which saves a scheduler load per round, but the middle arms never
    /// come first or last
    #[default]
    Alternate,
    /// Williams' Latin square (A B D C, B C A D, ...): over a cycle of n
    /// rounds (2n for an odd number of arms) every arm takes every place
    /// equally often and follows every other arm once (twice)
    Balanced,
}

/// The runs in order, as (point, iteration, arm) indices: at every point
/// each iteration is a round that runs all arms back to back, so that they
/// meet the same conditions within seconds. Each point starts the design
/// afresh, so that what it balances holds at every point's own test, not
/// only over the whole run.
pub fn run_order(
    points: usize,
    iterations: u32,
    arms: usize,
    order: Order,
) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::with_capacity(points * iterations as usize * arms);
    for p in 0..points {
        for it in 0..iterations {
            let round = it as usize;
            let places = match order {
                Order::Alternate if !round.is_multiple_of(2) => (0..arms).rev().collect(),
                Order::Alternate => (0..arms).collect(),
                Order::Balanced => williams_row(arms, round),
            };
            out.extend(places.into_iter().map(|a: usize| (p, it, a)));
        }
    }
    out
}

/// The rounds after which @order has placed @arms evenly: the Williams
/// design's cycle (n rows for an even n, 2n for an odd one), and for the
/// alternating order the pair of a forward and a backward round.
pub fn cycle(order: Order, arms: usize) -> usize {
    match order {
        Order::Alternate => 2,
        Order::Balanced if arms.is_multiple_of(2) => arms.max(1),
        Order::Balanced => 2 * arms,
    }
}

/// Row `round` of a Williams design for `n` arms. An arm's sample can carry
/// what the arm before it left behind (its scan-cost averages, the page
/// cache, a server's buffers), and the first and last places of a round can
/// differ from the middle ones. The first row 0, 1, n-1, 2, n-2, ... shifted
/// by r (mod n) for r = 0..n gives a Latin square whose rows place every arm
/// once in every column, and, because the steps between neighbours (1, -2,
/// 3, -4, ...) are distinct mod n when n is even, put every arm right after
/// every other once. For odd n the steps repeat, and the mirrored square
/// added as n more rows makes each ordered pair appear exactly twice.
pub fn williams_row(n: usize, round: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let first = (0..n).map(|j| match j {
        0 => 0,
        j if !j.is_multiple_of(2) => j.div_ceil(2),
        j => n - j / 2,
    });
    let r = round % cycle(Order::Balanced, n);
    let row: Vec<usize> = first.map(|a| (a + r % n) % n).collect();
    if r < n {
        row
    } else {
        row.into_iter().rev().collect()
    }
}

/// What the order balanced at each point, for the report's method line.
/// @per_point is false for results files whose cycle ran on across points.
pub fn balance(order: Order, arms: usize, iterations: u32, per_point: bool) -> String {
    let it = iterations as usize;
    let c = cycle(order, arms);
    if !per_point {
        return format!(
            "the cycle of {c} orders ran on across points, so a point's {it} rounds need not be balanced"
        );
    }
    if arms < 2 || it.is_multiple_of(c) {
        return match order {
            Order::Alternate => "as many rounds forward as backward at every point".into(),
            Order::Balanced => {
                "every arm in every place and after every other equally often at every point".into()
            }
        };
    }
    match order {
        Order::Alternate => format!(
            "{it} rounds at every point, one more forward than backward"
        ),
        Order::Balanced if it.is_multiple_of(arms) => format!(
            "every arm in every place equally often at every point; which arm follows which is balanced only over {c} rounds"
        ),
        Order::Balanced if it < c => format!(
            "not balanced at a point: its {it} round(s) are the first {it} of the design's {c}"
        ),
        Order::Balanced => format!(
            "not balanced at a point: {it} rounds are not a multiple of the design's {c}, so its first {} row(s) ran once more than the others",
            it % c
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_alternate_their_order() {
        let o = run_order(2, 2, 3, Order::Alternate);
        assert_eq!(o.len(), 12);
        let arms: Vec<usize> = o.iter().map(|r| r.2).collect();
        assert_eq!(arms, [0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
        // Every point's iterations in turn, each with all arms.
        assert!(o[..6].iter().all(|r| r.0 == 0) && o[6..].iter().all(|r| r.0 == 1));
        assert_eq!(o[3].1, 1);
    }

    /// Over a cycle, every arm in every place, and every ordered pair of
    /// arms as neighbours within a round, equally often: what makes the
    /// order balanced, checked for even and odd numbers of arms, at every
    /// point of a run.
    #[test]
    fn balanced_order_places_and_follows_evenly_at_every_point() {
        for n in 1..=7usize {
            let c = cycle(Order::Balanced, n);
            let o = run_order(3, c as u32, n, Order::Balanced);
            for point in 0..3 {
                let rounds: Vec<Vec<usize>> = o
                    .iter()
                    .filter(|r| r.0 == point)
                    .map(|r| r.2)
                    .collect::<Vec<_>>()
                    .chunks(n)
                    .map(<[usize]>::to_vec)
                    .collect();
                assert_eq!(rounds.len(), c);
                let mut place = vec![vec![0; n]; n];
                let mut after = vec![vec![0; n]; n];
                for row in &rounds {
                    let mut seen = row.clone();
                    seen.sort_unstable();
                    assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{n} arms: {row:?}");
                    for (j, &a) in row.iter().enumerate() {
                        place[a][j] += 1;
                    }
                    for w in row.windows(2) {
                        after[w[0]][w[1]] += 1;
                    }
                }
                let per_place = c / n;
                assert!(
                    place.iter().flatten().all(|&k| k == per_place),
                    "{n} arms, point {point}: {place:?}"
                );
                let per_pair = if n.is_multiple_of(2) { 1 } else { 2 };
                for (a, row) in after.iter().enumerate() {
                    for (b, &k) in row.iter().enumerate() {
                        assert_eq!(
                            k,
                            if a == b { 0 } else { per_pair },
                            "{n} arms: {a} before {b}"
                        );
                    }
                }
            }
        }
        assert_eq!(williams_row(4, 0), [0, 1, 3, 2]);
        assert_eq!(williams_row(4, 5), [1, 2, 0, 3]);
    }

    #[test]
    fn each_point_starts_the_design_afresh() {
        let o = run_order(2, 3, 4, Order::Balanced);
        let first_of = |k: usize| o[k * 4].2;
        assert_eq!((0..6).map(first_of).collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2]);
        assert!(o[12..].iter().all(|r| r.0 == 1));
    }

    #[test]
    fn the_report_says_what_was_balanced() {
        let b = |o, a, i| balance(o, a, i, true);
        assert!(b(Order::Balanced, 4, 8).starts_with("every arm in every place and after"));
        assert!(b(Order::Balanced, 3, 3).contains("only over 6 rounds"));
        assert!(b(Order::Balanced, 4, 5).contains("its first 1 row(s) ran once more"));
        assert!(b(Order::Balanced, 3, 2).contains("the first 2 of the design's 6"));
        assert!(b(Order::Alternate, 3, 4).contains("as many rounds forward"));
        assert!(b(Order::Alternate, 3, 5).contains("one more forward"));
        assert!(balance(Order::Balanced, 4, 5, false).contains("ran on across points"));
    }
}
