//! The order in which repeats of several points run: the one rule every plan of many runs
//! (the candidates of `compare --run`, the depths of a sweep, the steps of a TPC-C sequence)
//! schedules its repeats by.
//!
//! Repeats of one point are never run back to back: a neighbour's burst or a slow drift of
//! the device would then hit one point's every repeat and fake a difference between points.
//! Each round runs every point once. Counterbalanced rounds alternate direction (A B C, then
//! C B A, …), so a linear drift adds the same to every point's mean over two rounds, and no
//! point is always first or always last.

use oio_analysis::stats::SeededRng;
use serde::{Deserialize, Serialize};

/// How the points of a round are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// A B, B A, A B, … : every other round reversed (the default).
    #[default]
    Counterbalanced,
    /// A B A B … (every round in the same order: the last point always takes any drift).
    Interleaved,
    /// Every round in a random order, reproducible from the order seed.
    Shuffled,
}

impl Order {
    /// The word a result records and a person reads.
    pub fn name(self) -> &'static str {
        match self {
            Order::Counterbalanced => "counterbalanced",
            Order::Interleaved => "interleaved",
            Order::Shuffled => "shuffled",
        }
    }
}

/// The schedule of `rounds` rounds over `points` points: each inner list is one round, a
/// permutation of `0..points`.
pub fn rounds(order: Order, rounds: u32, points: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = SeededRng::new(seed);
    (0..rounds)
        .map(|round| {
            let mut r: Vec<usize> = (0..points).collect();
            match order {
                Order::Interleaved => {}
                Order::Counterbalanced => {
                    if round % 2 == 1 {
                        r.reverse();
                    }
                }
                Order::Shuffled => {
                    for i in (1..r.len()).rev() {
                        r.swap(i, rng.below(i + 1));
                    }
                }
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counterbalanced_rounds_alternate_direction() {
        assert_eq!(
            rounds(Order::Counterbalanced, 4, 3, 1),
            vec![vec![0, 1, 2], vec![2, 1, 0], vec![0, 1, 2], vec![2, 1, 0]]
        );
    }

    #[test]
    fn counterbalancing_cancels_a_linear_drift() {
        // Run k of the schedule gets a drift of k; over an even number of rounds every point's
        // mean drift is the same.
        let sched = rounds(Order::Counterbalanced, 4, 3, 1);
        let mut sum = [0usize; 3];
        for (k, p) in sched.iter().flatten().enumerate() {
            sum[*p] += k;
        }
        assert!(sum.iter().all(|&s| s == sum[0]), "{sum:?}");
    }

    #[test]
    fn interleaved_repeats_the_first_order() {
        assert_eq!(
            rounds(Order::Interleaved, 2, 2, 1),
            vec![vec![0, 1], vec![0, 1]]
        );
    }

    #[test]
    fn shuffled_rounds_are_permutations_and_reproducible() {
        let a = rounds(Order::Shuffled, 20, 5, 42);
        assert_eq!(a, rounds(Order::Shuffled, 20, 5, 42));
        for r in &a {
            let mut s = r.clone();
            s.sort_unstable();
            assert_eq!(s, vec![0, 1, 2, 3, 4]);
        }
        assert!(a.iter().any(|r| r != &a[0]), "20 rounds all alike: {a:?}");
    }
}
