//! Property tests of the statistics: what cannot depend on the order of the samples does
//! not, the two-sample tests are symmetric, and quantiles stay within the sample.

use proptest::prelude::*;
use tlslab_stats::{
    cliffs_delta, mann_whitney_u, median, quantile, rank_biserial, MannWhitneyOptions, Summary,
};

/// Handshake-like samples: positive, finite, with ties now and then.
fn sample(size: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((1u32..2_000).prop_map(|value| f64::from(value) / 4.0), size)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #[test]
    fn summaries_do_not_depend_on_the_order_of_the_sample(
        values in sample(1..300),
        seed in any::<u64>(),
    ) {
        let mut shuffled = values.clone();
        fastrand::Rng::with_seed(seed).shuffle(&mut shuffled);
        let (a, b) = (Summary::of(&values).unwrap(), Summary::of(&shuffled).unwrap());
        prop_assert_eq!(a.median, b.median);
        prop_assert!(close(a.mean, b.mean));
        prop_assert_eq!(a.p99, b.p99);
        prop_assert_eq!(median(&values), median(&shuffled));
    }

    #[test]
    fn quantiles_stay_within_the_sample(values in sample(1..300), q in 0.0f64..=1.0) {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let value = quantile(&sorted, q);
        prop_assert!(sorted[0] <= value && value <= sorted[sorted.len() - 1]);
        prop_assert!(quantile(&sorted, 0.0) == sorted[0]);
        prop_assert!(quantile(&sorted, 1.0) == sorted[sorted.len() - 1]);
    }

    #[test]
    fn mann_whitney_is_symmetric_and_ignores_order(
        first in sample(2..60),
        second in sample(2..60),
        seed in any::<u64>(),
    ) {
        let options = MannWhitneyOptions::default();
        let forward = mann_whitney_u(&first, &second, &options).unwrap();
        let backward = mann_whitney_u(&second, &first, &options).unwrap();
        let pairs = (first.len() * second.len()) as f64;
        prop_assert!(close(forward.u + backward.u, pairs));
        prop_assert!(close(forward.p_value, backward.p_value));
        prop_assert!((0.0..=1.0).contains(&forward.p_value));
        let r_forward = rank_biserial(forward.u, first.len(), second.len());
        let r_backward = rank_biserial(backward.u, second.len(), first.len());
        prop_assert!(close(r_forward, -r_backward));
        prop_assert!(close(cliffs_delta(&first, &second), -cliffs_delta(&second, &first)));
        let mut shuffled = first.clone();
        fastrand::Rng::with_seed(seed).shuffle(&mut shuffled);
        let again = mann_whitney_u(&shuffled, &second, &options).unwrap();
        prop_assert_eq!(forward.u, again.u);
        prop_assert!(close(forward.p_value, again.p_value));
    }
}
