//! Statistics for tlslab: pure functions from timing samples to the numbers a report prints.
//!
//! Per configuration, a [`Summary`] (n, mean, SD, median, type-7 quantiles, a t-interval of
//! the mean) and a bootstrap interval of the median ([`median_ci`]). Between configurations,
//! [`compare`] and [`compare_all`] run everything a reader needs to judge a difference: the
//! Mann-Whitney U test ([`mann_whitney`], exact for small samples without ties), rank-biserial
//! correlation and Cliff's delta ([`effect_size`]), Welch's t-test ([`t_test`]), Hedges' g,
//! BCa bootstrap intervals of the difference of means and medians and of the ratio of medians
//! ([`bootstrap`], fast enough for ten million values per sample), Holm's correction across
//! comparisons ([`holm`]) and the Kruskal-Wallis test across groups ([`kruskal`]), ending in a
//! one-line verdict such as "1.52 ± 0.03 times slower (p < 0.001, r = 0.61)". The
//! Shapiro-Wilk test ([`normality`]) tells when the t-based numbers rest on a shaky
//! assumption.
//!
//! Every comparison reads "other relative to baseline": differences are other − baseline,
//! ratios other / baseline, and effect sizes are positive when the other sample tends to be
//! larger (slower). Results follow scipy 1.17 and pingouin 0.7 conventions and are tested
//! against values computed with them.
//!
//! The crate does no I/O and depends on no other tlslab crate.
//!
//! ```
//! use tlslab_stats::{compare, CompareOptions, Summary};
//!
//! let x25519 = [1.91, 1.87, 1.95, 1.89, 1.93, 1.90, 1.88, 1.94, 1.92, 1.86];
//! let mlkem = [2.12, 2.08, 2.19, 2.10, 2.15, 2.11, 2.09, 2.17, 2.14, 2.13];
//!
//! let summary = Summary::of(&mlkem).expect("non-empty, finite");
//! assert!((summary.median - 2.125).abs() < 1e-12);
//!
//! let comparison = compare("x25519", &x25519, "x25519mlkem768", &mlkem, &CompareOptions::default())?;
//! assert!(comparison.diff_median > 0.0); // other − baseline: ML-KEM is slower
//! assert!(comparison.rank_biserial > 0.9);
//! println!("{}", comparison.verdict); // "1.12 ± 0.02 times slower (p < 0.001, r = 1.00)"
//! # Ok::<(), tlslab_stats::StatsError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bootstrap;
pub mod comparison;
pub mod descriptive;
mod distribution;
pub mod effect_size;
mod error;
pub mod holm;
pub mod kruskal;
pub mod mann_whitney;
pub mod normality;
pub mod power;
pub mod quantile;
pub mod random;
pub mod rank;
pub mod stratified;
pub mod t_test;

pub use bootstrap::{
    bootstrap_two_sample, BootstrapOptions, BootstrapResult, Contrast, Statistic, MAX_RESAMPLES,
};
pub use comparison::{
    compare, compare_all, compare_all_in_place, CompareOptions, Comparison, ComparisonSet,
    COMPARISON_FIELDS,
};
pub use descriptive::{
    mean, median, median_ci, median_in_place, standard_deviation, variance, Summary,
};
pub use effect_size::{cliffs_delta, cohen_d, hedges_g, rank_biserial};
pub use error::StatsError;
pub use holm::holm_adjust;
pub use kruskal::{kruskal_wallis, KruskalWallis};
pub use mann_whitney::{
    mann_whitney_u, Alternative, MannWhitney, MannWhitneyMethod, MannWhitneyOptions, PValueMethod,
};
pub use normality::{shapiro_wilk, ShapiroWilk};
pub use quantile::quantile;
pub use stratified::{van_elteren, VanElteren};
pub use t_test::{student_t_test, welch_t_test, TTest};
