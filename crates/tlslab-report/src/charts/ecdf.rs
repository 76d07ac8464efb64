//! Per Config, the empirical cumulative distribution of handshake times, drawn as the step
//! function it is: flat between samples, rising at each one.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, config_legend, legend_height, ChartError, Style};
use crate::data::ReportData;

/// Points drawn per curve: finer than a chart's pixels, whatever the sample count, so 100,000
/// samples cost no more to draw (or to embed) than 400.
const POINTS: usize = 400;
/// The x axis ends at the largest of this percentile, so one slow outlier does not squash
/// every curve against the left edge.
const X_END_QUANTILE: f64 = 0.995;

fn plot_height(style: &Style) -> u32 {
    style.px(420.0)
}

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    (
        style.width(),
        legend_height(&config_legend(data), style) + plot_height(style),
    )
}

/// The steps through `points` (ascending in both coordinates): from 0 up at the first x,
/// then flat to each next x and up to its share. Between two thinned points the true ECDF
/// climbs by at most 1/[`POINTS`] of the axis (a pixel), so the flat-then-up step is drawn
/// within a pixel of it; with fewer samples than points every sample is its own step.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut steps = Vec::with_capacity(points.len() * 2);
    let mut previous_share = 0.0;
    for &(x, share) in points {
        steps.push((x, previous_share));
        steps.push((x, share));
        previous_share = share;
    }
    steps
}

/// The points of the ECDF of `sorted` (ascending) at its samples, thinned to at most
/// [`POINTS`] + 1 and cut at `end`.
fn curve(sorted: &[f64], end: f64) -> Vec<(f64, f64)> {
    let n = sorted.len();
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(POINTS + 1);
    for step in 0..=POINTS {
        let index = (step as f64 / POINTS as f64 * (n - 1) as f64).round() as usize;
        if sorted[index] > end {
            break;
        }
        let point = (sorted[index], (index + 1) as f64 / n as f64);
        match points.last_mut() {
            Some(last) if *last == point => {}
            // Tied samples are one step: the share after the last of them.
            Some(last) if last.0 == point.0 => *last = point,
            _ => points.push(point),
        }
    }
    points
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
    let start = with_samples()
        .map(|c| c.handshake_ms[0])
        .fold(f64::INFINITY, f64::min);
    let end = with_samples()
        .filter_map(|c| c.quantile(X_END_QUANTILE))
        .fold(0.0, f64::max);
    let margin = ((end - start) * 0.03).max(1e-3);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(40.0))
        .y_label_area_size(style.px(56.0))
        .build_cartesian_2d((start - margin).max(0.0)..end + margin, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("handshake, milliseconds")
        .y_desc("share of handshakes")
        .y_label_formatter(&|share| format!("{:.0}%", share * 100.0))
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    for (index, config) in data.configs.iter().enumerate() {
        if config.handshake_ms.is_empty() {
            continue;
        }
        chart.draw_series(LineSeries::new(
            steps(&curve(&config.handshake_ms, end + margin)),
            style.line(color(index), 2.0),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_is_thinned_and_cut() {
        let sorted: Vec<f64> = (0..100_000).map(f64::from).collect();
        let points = curve(&sorted, f64::INFINITY);
        assert_eq!(points.len(), POINTS + 1);
        assert_eq!(points[0], (0.0, 1e-5));
        assert_eq!(*points.last().unwrap(), (99_999.0, 1.0));
        let cut = curve(&sorted, 50_000.0);
        assert!(cut.iter().all(|(x, _)| *x <= 50_000.0));
        assert!(cut.windows(2).all(|pair| pair[0].1 < pair[1].1));
        assert_eq!(curve(&[3.0], 10.0), vec![(3.0, 1.0)]);
    }

    #[test]
    fn the_curve_is_drawn_as_steps() {
        // Two samples at 1 ms and one at 4 ms: up to 2/3 at 1 (the tie is one step), flat
        // until 4, up to 1; never a slope between samples.
        let drawn = steps(&curve(&[1.0, 1.0, 4.0], f64::INFINITY));
        let third = 1.0 / 3.0;
        assert_eq!(curve(&[1.0, 1.0, 4.0], f64::INFINITY).len(), 2);
        assert_eq!(
            drawn,
            vec![
                (1.0, 0.0),
                (1.0, 2.0 * third),
                (4.0, 2.0 * third),
                (4.0, 1.0)
            ]
        );
        assert!(drawn
            .windows(2)
            .all(|pair| pair[0].0 == pair[1].0 || pair[0].1 == pair[1].1));
    }
}
