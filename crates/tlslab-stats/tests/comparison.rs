//! The comparison API as `tlslab compare` and the run summary use it: direction, Holm across
//! comparisons, the choice of exact or asymptotic p-values, JSON field names, and errors.

use std::collections::BTreeSet;

use tlslab_stats::{
    compare, compare_all, CompareOptions, Comparison, StatsError, COMPARISON_FIELDS,
};

/// Deterministic latency-like values around `center` ms, with a few ties.
fn latencies(count: usize, center: f64, step: f64) -> Vec<f64> {
    (1..=count)
        .map(|i| {
            let spread = (i as f64 * 0.618_033_988_749_895).fract() - 0.5;
            ((center + 3.0 * step * spread + 0.2 * (i as f64).sin()) * 100.0).round() / 100.0
        })
        .collect()
}

fn options() -> CompareOptions {
    CompareOptions {
        resamples: 2_000,
        ..CompareOptions::default()
    }
}

#[test]
fn other_relative_to_baseline() {
    let baseline = latencies(60, 20.0, 1.0);
    let other = latencies(60, 23.0, 1.0);
    let comparison = compare("rsa", &baseline, "ecdsa", &other, &options()).unwrap();
    assert_eq!(comparison.baseline, "rsa");
    assert_eq!(comparison.other, "ecdsa");
    // The other configuration is larger, so slower: every signed quantity is positive.
    assert!(comparison.diff_mean > 0.0 && comparison.diff_median > 0.0);
    assert!(comparison.ratio_median > 1.0);
    assert!(comparison.rank_biserial > 0.0 && comparison.cliffs_delta > 0.0);
    assert!(comparison.hedges_g > 0.0 && comparison.welch_t > 0.0);
    // U is the statistic of the other sample: most pairs have the other value larger.
    assert!(comparison.mann_whitney_u > 60.0 * 60.0 / 2.0);
    let expected_r = 2.0 * comparison.mann_whitney_u / (60.0 * 60.0) - 1.0;
    assert!((comparison.rank_biserial - expected_r).abs() < 1e-15);
    assert!(comparison.diff_median_ci[0] > 0.0);
    assert!(
        comparison.verdict.contains("times slower"),
        "{}",
        comparison.verdict
    );
}

#[test]
fn swapping_baseline_and_other_flips_every_sign() {
    let first = latencies(40, 10.0, 1.0);
    let second = latencies(50, 10.8, 1.5);
    let forward = compare("a", &first, "b", &second, &options()).unwrap();
    let backward = compare("b", &second, "a", &first, &options()).unwrap();
    let pairs = 40.0 * 50.0;
    assert_eq!(forward.diff_mean, -backward.diff_mean);
    assert_eq!(forward.diff_median, -backward.diff_median);
    assert!((forward.ratio_median * backward.ratio_median - 1.0).abs() < 1e-12);
    assert!((forward.mann_whitney_u + backward.mann_whitney_u - pairs).abs() < 1e-9);
    assert!((forward.rank_biserial + backward.rank_biserial).abs() < 1e-12);
    assert!((forward.cliffs_delta + backward.cliffs_delta).abs() < 1e-12);
    assert!((forward.hedges_g + backward.hedges_g).abs() < 1e-12);
    assert!((forward.welch_t + backward.welch_t).abs() < 1e-12);
    assert!((forward.welch_df - backward.welch_df).abs() < 1e-9);
    assert!((forward.mann_whitney_p - backward.mann_whitney_p).abs() < 1e-12);
    assert!((forward.welch_p - backward.welch_p).abs() < 1e-12);
    // Intervals flip too, up to Monte Carlo error (each role has its own random stream).
    let width = forward.diff_mean_ci[1] - forward.diff_mean_ci[0];
    assert!((forward.diff_mean_ci[0] + backward.diff_mean_ci[1]).abs() < 0.1 * width);
    assert!((forward.diff_mean_ci[1] + backward.diff_mean_ci[0]).abs() < 0.1 * width);
    assert_eq!(forward.n_baseline, backward.n_other);
    assert_eq!(forward.median_baseline, backward.median_other);
}

#[test]
fn same_seed_same_result() {
    let first = latencies(30, 10.0, 1.0);
    let second = latencies(30, 10.5, 1.0);
    let a = compare("a", &first, "b", &second, &options()).unwrap();
    let b = compare("a", &first, "b", &second, &options()).unwrap();
    assert_eq!(a, b);
    let reseeded = CompareOptions {
        seed: 99,
        ..options()
    };
    let c = compare("a", &first, "b", &second, &reseeded).unwrap();
    assert_ne!(a.diff_mean_ci, c.diff_mean_ci);
}

#[test]
fn exact_or_asymptotic() {
    // At most 8 values on one side and no ties: exact.
    let small = [1.05, 2.11, 3.17, 4.23, 5.29, 6.35, 7.41];
    let other: Vec<f64> = (0..40).map(|i| 3.003 + 0.1 * f64::from(i)).collect();
    let comparison = compare("small", &small, "other", &other, &options()).unwrap();
    assert_eq!(comparison.mann_whitney_method.as_str(), "exact");
    // A tie between the samples (or within one): asymptotic.
    let tied = [1.05, 2.11, 3.17, 4.23, 5.29, 6.35, other[0]];
    let comparison = compare("tied", &tied, "other", &other, &options()).unwrap();
    assert_eq!(comparison.mann_whitney_method.as_str(), "asymptotic");
    // Both samples above 8 values: asymptotic.
    let comparison = compare(
        "a",
        &latencies(9, 5.0, 1.0),
        "b",
        &latencies(9, 9.0, 1.0),
        &options(),
    )
    .unwrap();
    assert_eq!(comparison.mann_whitney_method.as_str(), "asymptotic");
}

#[test]
fn json_field_names() {
    let comparison = compare(
        "a",
        &latencies(20, 10.0, 1.0),
        "b",
        &latencies(20, 11.0, 1.0),
        &options(),
    )
    .unwrap();
    let json = serde_json::to_value(&comparison).unwrap();
    let names: BTreeSet<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = COMPARISON_FIELDS.iter().copied().collect();
    assert_eq!(names, expected);
    assert_eq!(json["mann_whitney_method"], "asymptotic");
    assert_eq!(json["diff_median_ci"].as_array().unwrap().len(), 2);
}

#[test]
fn holm_across_comparisons_and_kruskal_for_more_than_two() {
    let groups: Vec<(String, Vec<f64>)> = vec![
        ("baseline".into(), latencies(50, 10.0, 1.0)),
        ("same".into(), latencies(50, 10.1, 1.0)),
        ("slower".into(), latencies(50, 11.0, 1.0)),
        ("faster".into(), latencies(50, 9.0, 1.0)),
    ];
    let set = compare_all(0, &groups, &options()).unwrap();
    assert_eq!(set.baseline, "baseline");
    let others: Vec<&str> = set.comparisons.iter().map(|c| c.other.as_str()).collect();
    assert_eq!(others, ["same", "slower", "faster"]);
    let raw: Vec<f64> = set.comparisons.iter().map(|c| c.mann_whitney_p).collect();
    let adjusted = tlslab_stats::holm_adjust(&raw);
    for (comparison, expected) in set.comparisons.iter().zip(adjusted) {
        assert_eq!(comparison.mann_whitney_p_holm, expected);
        assert!(comparison.mann_whitney_p_holm >= comparison.mann_whitney_p);
    }
    let kruskal = set.kruskal_wallis.expect("more than two groups");
    assert_eq!(kruskal.df, 3);
    assert!(kruskal.p_value < 1e-6);
    assert!(
        set.comparisons[1].verdict.contains("slower"),
        "{}",
        set.comparisons[1].verdict
    );
    assert!(
        set.comparisons[2].verdict.contains("faster"),
        "{}",
        set.comparisons[2].verdict
    );

    // A baseline in the middle of the list.
    let set = compare_all(2, &groups, &options()).unwrap();
    assert_eq!(set.baseline, "slower");
    assert!(set.comparisons.iter().all(|c| c.baseline == "slower"));
    assert_eq!(set.comparisons.len(), 3);
}

#[test]
fn two_groups_equal_compare() {
    let first = latencies(25, 10.0, 1.0);
    let second = latencies(25, 10.6, 1.0);
    let groups = vec![
        ("a".to_owned(), first.clone()),
        ("b".to_owned(), second.clone()),
    ];
    let set = compare_all(0, &groups, &options()).unwrap();
    assert!(set.kruskal_wallis.is_none());
    let single: Comparison = compare("a", &first, "b", &second, &options()).unwrap();
    assert_eq!(set.comparisons, vec![single]);
}

#[test]
fn large_samples_use_the_fast_bootstrap() {
    // 30,000 values per sample is above the literal-resampling limit.
    let baseline = latencies(30_000, 10.0, 1.0);
    let other: Vec<f64> = baseline.iter().map(|value| value + 0.05).collect();
    let comparison = compare("a", &baseline, "b", &other, &options()).unwrap();
    assert!((comparison.diff_median - 0.05).abs() < 1e-9);
    let [low, high] = comparison.diff_median_ci;
    assert!(low <= 0.05 && 0.05 <= high, "{low} {high}");
    let [low, high] = comparison.diff_mean_ci;
    assert!(low < 0.05 && 0.05 < high, "{low} {high}");
}

#[test]
fn errors_name_the_sample() {
    let good = [1.0, 2.0, 3.0];
    let error = compare("base", &[1.0], "other", &good, &options()).unwrap_err();
    assert_eq!(
        error,
        StatsError::TooFewValues {
            sample: "base".into(),
            count: 1,
            required: 2
        }
    );
    assert_eq!(
        error.to_string(),
        "sample \"base\" has 1 value; at least 2 are needed"
    );
    assert!(compare("base", &[], "other", &good, &options()).is_err());

    let error = compare("base", &good, "other", &[1.0, f64::NAN], &options()).unwrap_err();
    assert!(
        matches!(error, StatsError::NonFiniteValue { ref sample, index: 1, .. } if sample == "other")
    );
    assert!(error.to_string().contains("\"other\""), "{error}");
    let error = compare("base", &[f64::INFINITY, 1.0], "other", &good, &options()).unwrap_err();
    assert!(matches!(error, StatsError::NonFiniteValue { index: 0, .. }));

    let bad_alpha = CompareOptions {
        alpha: 0.0,
        ..options()
    };
    assert!(compare("base", &good, "other", &good, &bad_alpha).is_err());
    let bad_confidence = CompareOptions {
        confidence: 1.0,
        ..options()
    };
    assert!(compare("base", &good, "other", &good, &bad_confidence).is_err());
    let no_resamples = CompareOptions {
        resamples: 0,
        ..options()
    };
    assert!(compare("base", &good, "other", &good, &no_resamples).is_err());

    let groups = vec![("only".to_owned(), good.to_vec())];
    assert!(compare_all(0, &groups, &options()).is_err());
    let groups = vec![
        ("a".to_owned(), good.to_vec()),
        ("b".to_owned(), good.to_vec()),
    ];
    let error = compare_all(5, &groups, &options()).unwrap_err();
    assert!(error.to_string().contains("out of range"), "{error}");
}

#[test]
fn identical_samples_are_not_different() {
    let values = latencies(30, 10.0, 1.0);
    let comparison = compare("a", &values, "b", &values, &options()).unwrap();
    assert_eq!(comparison.diff_median, 0.0);
    assert!((comparison.mann_whitney_p - 1.0).abs() < 1e-12);
    assert!(
        comparison.verdict.starts_with("no detectable difference"),
        "{}",
        comparison.verdict
    );
}
