//! Per Config, the tail of the handshake times: the share of handshakes slower than each time
//! (1 − ECDF, the survival function) on log axes, so the slowest 1% and 0.1% get as much room
//! as the body, with each Config's p99 and p99.9 marked where its curve crosses 1% and 0.1%,
//! and the p99's 95% interval (order statistics, no assumption on the distribution's shape)
//! as a bar along the 1% line when the sample is large enough (about 300 handshakes).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{color, config_legend, legend_height, ChartError, Style};
use crate::data::ReportData;

/// Points drawn per curve, spaced evenly in the log of the share still slower, so the tail is
/// as finely drawn as the body whatever the sample count.
const POINTS: usize = 400;
/// The tail quantiles marked, with the least number of samples that makes each more than the
/// largest sample under another name.
const MARKED: [(f64, &str, usize); 2] = [(0.99, "p99", 100), (0.999, "p99.9", 1_000)];

fn plot_height(style: &Style) -> u32 {
    style.px(420.0)
}

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    (
        style.width(),
        legend_height(&config_legend(data), style) + plot_height(style),
    )
}

/// The survival function of `sorted` (ascending) at its samples: (time, share of samples
/// slower than it), thinned to about [`POINTS`] points spaced evenly in the log of the number
/// of slower samples, ties as one point. The slowest sample's share is 0.
fn survival(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    // `from_end` samples from index n - from_end to the end: 1 (the slowest) to n (the fastest).
    let mut indices: Vec<usize> = (0..=POINTS)
        .map(|step| {
            let from_end = (n as f64).powf(step as f64 / POINTS as f64).round() as usize;
            n - from_end.clamp(1, n)
        })
        .collect();
    indices.sort_unstable();
    indices.dedup();
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(indices.len());
    for index in indices {
        let point = (sorted[index], (n - 1 - index) as f64 / n as f64);
        match points.last_mut() {
            // Tied samples are one step: the share after the last of them.
            Some(last) if last.0 == point.0 => *last = point,
            _ => points.push(point),
        }
    }
    points
}

/// The steps through `points` (ascending time, descending share), starting from all (1) and
/// with a share of 0 drawn at `floor`, the bottom of the log axis. Between two thinned points
/// the true curve falls by a factor of at most n^(1/[`POINTS`]) (3% at 100,000 samples, under
/// a pixel), so flat-then-down is drawn within a pixel of it.
fn steps(points: &[(f64, f64)], floor: f64) -> Vec<(f64, f64)> {
    let mut steps = Vec::with_capacity(points.len() * 2);
    let mut previous_share = 1.0;
    for &(time, share) in points {
        let share = share.max(floor);
        steps.push((time, previous_share));
        steps.push((time, share));
        previous_share = share;
    }
    steps
}

pub(super) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ReportData,
    style: &Style,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let plot_area = super::below_config_legend(root, data, style)?;
    let with_samples = || data.configs.iter().filter(|c| !c.handshake_ms.is_empty());
    // Positive bounds: the axes are logarithmic.
    let fastest = with_samples()
        .map(|c| c.handshake_ms[0])
        .fold(f64::INFINITY, f64::min)
        .max(1e-3);
    let slowest = with_samples()
        .filter_map(|c| c.handshake_ms.last().copied())
        .fold(0.0, f64::max)
        .max(fastest * 1.01);
    let most_samples = with_samples()
        .map(|c| c.handshake_ms.len())
        .max()
        .unwrap_or(1);
    // Half a sample below the largest Config's smallest share, where each slowest sample's
    // drop to 0 ends.
    let floor = 0.5 / most_samples as f64;
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(40.0))
        .y_label_area_size(style.px(64.0))
        .build_cartesian_2d(
            LogAxis::new(fastest / 1.05..slowest * 1.05),
            LogAxis::new(floor..1.0),
        )?;
    chart
        .configure_mesh()
        .x_desc("handshake, milliseconds (log scale)")
        .y_desc("share slower (log scale)")
        .x_label_formatter(&|ms| significant(*ms))
        .y_label_formatter(&|share| format!("{}%", significant(share * 100.0)))
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    // The 1% and 0.1% levels, labelled: a curve crosses them at its p99 and p99.9.
    let guide = RGBColor(150, 150, 150);
    for (quantile, name, _) in MARKED {
        let level = 1.0 - quantile;
        if level <= floor {
            continue;
        }
        chart.draw_series(DashedLineSeries::new(
            [(fastest / 1.05, level), (slowest * 1.05, level)],
            style.px(4.0),
            style.px(4.0),
            style.line(guide, 1.0),
        ))?;
        // Just above its line at the left, where every curve is still near 100%.
        chart.draw_series(std::iter::once(Text::new(
            name.to_string(),
            (fastest, level),
            style
                .text()
                .color(&guide)
                .pos(Pos::new(HPos::Left, VPos::Bottom)),
        )))?;
    }
    for (index, config) in data.configs.iter().enumerate() {
        let sorted = &config.handshake_ms;
        if sorted.is_empty() {
            continue;
        }
        chart.draw_series(LineSeries::new(
            steps(&survival(sorted), floor),
            style.line(color(index), 2.0),
        ))?;
        let marker = style.px(4.0) as i32;
        for (quantile, _, least_samples) in MARKED {
            if sorted.len() < least_samples {
                continue;
            }
            if let Some(time) = config.quantile(quantile) {
                let point = (time, 1.0 - quantile);
                chart.draw_series(std::iter::once(Circle::new(
                    point,
                    marker,
                    color(index).filled(),
                )))?;
            }
        }
        // The p99's 95% interval (distribution-free, from the order statistics) as a bar
        // along the 1% line, once the sample is large enough to have one.
        if let Some((low, high)) = tlslab_stats::quantile::quantile_interval(sorted, 0.99, 0.95) {
            let level = 1.0 - 0.99;
            let bar = style.line(color(index), 2.0);
            chart.draw_series(LineSeries::new([(low, level), (high, level)], bar))?;
            for end in [low, high] {
                chart.draw_series(std::iter::once(PathElement::new(
                    [(end, level * 0.85), (end, level / 0.85)],
                    bar,
                )))?;
            }
        }
    }
    Ok(())
}

/// A logarithmic axis ticked at 1, 2 and 5 times each power of ten (plotters' own log axis
/// can leave a decade unticked).
struct LogAxis {
    inner: LogCoord<f64>,
    ticks: Vec<f64>,
}

impl LogAxis {
    fn new(range: Range<f64>) -> LogAxis {
        LogAxis {
            ticks: ticks(&range),
            inner: range.log_scale().into(),
        }
    }
}

impl Ranged for LogAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// 1, 2 and 5 times the powers of ten inside `range` (positive, both ends included); only the
/// powers of ten when the range spans more than two decades, so the labels do not crowd.
fn ticks(range: &Range<f64>) -> Vec<f64> {
    let first = range.start.log10().floor() as i32;
    let last = range.end.log10().ceil() as i32;
    let multiples: &[f64] = if (range.end / range.start).log10() > 2.0 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    (first..=last)
        .flat_map(|exponent| {
            multiples
                .iter()
                .map(move |multiple| multiple * 10f64.powi(exponent))
        })
        // The tick's own label, not a float a hair off it (0.30000000000000004).
        .map(|tick| significant(tick).parse().unwrap_or(tick))
        .filter(|tick| (range.start..=range.end).contains(tick))
        .collect()
}

/// `value` to three significant digits, without trailing zeros: 0.01, 0.5, 12.3, 250.
fn significant(value: f64) -> String {
    if value <= 0.0 || !value.is_finite() {
        return "0".to_string();
    }
    let decimals = (2 - value.log10().floor() as i32).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survival_reaches_the_tail_sample_by_sample() {
        let sorted: Vec<f64> = (0..100_000).map(f64::from).collect();
        let points = survival(&sorted);
        assert!(points.len() <= POINTS + 1, "{}", points.len());
        assert_eq!(points[0], (0.0, 99_999.0 / 100_000.0));
        // The slowest ten samples are each drawn: a log-spaced thinning keeps the tail whole.
        let tail: Vec<f64> = points[points.len() - 10..].iter().map(|p| p.0).collect();
        assert_eq!(tail, (99_990..100_000).map(f64::from).collect::<Vec<_>>());
        assert_eq!(*points.last().unwrap(), (99_999.0, 0.0));
        assert!(points.windows(2).all(|pair| pair[0].1 > pair[1].1));
        assert!(points.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    #[test]
    fn the_tail_is_drawn_as_steps_down_to_the_floor() {
        // Two samples at 1 ms (a tie: one step) and one at 4 ms.
        let points = survival(&[1.0, 1.0, 4.0]);
        assert_eq!(points, vec![(1.0, 1.0 / 3.0), (4.0, 0.0)]);
        let drawn = steps(&points, 0.1);
        assert_eq!(
            drawn,
            vec![(1.0, 1.0), (1.0, 1.0 / 3.0), (4.0, 1.0 / 3.0), (4.0, 0.1)]
        );
        assert!(drawn
            .windows(2)
            .all(|pair| pair[0].0 == pair[1].0 || pair[0].1 == pair[1].1));
        assert!(survival(&[]).is_empty());
    }

    #[test]
    fn ticks_are_one_two_five_inside_the_range() {
        assert_eq!(ticks(&(0.3..3.4)), vec![0.5, 1.0, 2.0]);
        assert_eq!(ticks(&(0.02..1.0)), vec![0.02, 0.05, 0.1, 0.2, 0.5, 1.0]);
        assert_eq!(ticks(&(0.006..1.0)), vec![0.01, 0.1, 1.0]);
        assert_eq!(ticks(&(5e-6..1.0)), vec![1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0]);
    }

    #[test]
    fn labels_have_three_significant_digits() {
        assert_eq!(significant(0.01), "0.01");
        assert_eq!(significant(0.5), "0.5");
        assert_eq!(significant(12.34), "12.3");
        assert_eq!(significant(250.0), "250");
        assert_eq!(significant(100.0), "100");
    }
}
