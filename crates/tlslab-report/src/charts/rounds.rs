//! Per Config, the median handshake of each round of the plan, warm-up rounds hollow: whether
//! the run drifted (a server warming its caches, a machine getting busier) while the summary's
//! statistics treat every measured handshake as drawn from one distribution.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, config_legend, legend_height, ChartError, Style};
use crate::data::ReportData;

/// Whether some Config has two rounds or more to draw.
pub(super) fn applies(data: &ReportData) -> bool {
    data.configs.iter().any(|config| config.rounds.len() >= 2)
}

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    (
        style.width(),
        legend_height(&config_legend(data), style) + style.px(380.0),
    )
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
    let rounds = || data.configs.iter().flat_map(|config| config.rounds.iter());
    let first = rounds().map(|round| round.round).min().unwrap_or(0);
    let last = rounds()
        .map(|round| round.round)
        .max()
        .unwrap_or(1)
        .max(first + 1);
    let highest = rounds()
        .map(|round| round.median_ns / 1e6)
        .fold(0.0, f64::max)
        .max(1e-3);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(40.0))
        .y_label_area_size(style.px(56.0))
        .build_cartesian_2d(first as f64 - 0.5..last as f64 + 0.5, 0.0..highest * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("round of the plan (warm-up rounds hollow)")
        .y_desc("median handshake, ms")
        .x_labels(((last - first + 1) as usize).min(12))
        .x_label_formatter(&|round| format!("{round:.0}"))
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    let radius = style.px(3.5) as i32;
    for (index, config) in data.configs.iter().enumerate() {
        let points: Vec<(f64, f64, bool)> = config
            .rounds
            .iter()
            .map(|round| (round.round as f64, round.median_ns / 1e6, round.warmup))
            .collect();
        if points.is_empty() {
            continue;
        }
        let line = style.line(color(index), 1.5);
        chart.draw_series(LineSeries::new(
            points.iter().map(|&(x, y, _)| (x, y)),
            line,
        ))?;
        chart.draw_series(points.iter().map(|&(x, y, warmup)| {
            let fill = if warmup {
                WHITE.filled()
            } else {
                color(index).filled()
            };
            EmptyElement::at((x, y))
                + Circle::new((0, 0), radius, fill)
                + Circle::new((0, 0), radius, line)
        }))?;
    }
    Ok(())
}
