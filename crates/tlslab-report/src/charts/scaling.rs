//! Median and p99 handshake against a numeric dimension (concurrency, emulated RTT): one line
//! per combination of the other dimensions. The axis is logarithmic when the levels span a
//! factor of 8 or more, with ticks exactly at the measured levels. Against RTT, grey lines mark
//! the round-trip floors 2 × RTT (TLS 1.3) and 3 × RTT (TLS 1.2) that no full handshake over
//! TCP can beat.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    draw_legend, draw_median_and_tail, legend_height, series_legend, ChartError, LegendEntry,
    Style, TickedAxis,
};
use crate::data::{ConfigData, ReportData};

/// The dimension on the x axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Concurrency,
    Rtt,
}

impl Axis {
    fn level(self, config: &ConfigData) -> Option<f64> {
        match self {
            Axis::Concurrency => config.concurrency,
            Axis::Rtt => config.rtt_ms,
        }
    }

    fn series(self, config: &ConfigData) -> &str {
        match self {
            Axis::Concurrency => &config.series_by_concurrency,
            Axis::Rtt => &config.series_by_rtt,
        }
    }

    fn description(self, logarithmic: bool) -> &'static str {
        match (self, logarithmic) {
            (Axis::Concurrency, false) => "concurrent agents",
            (Axis::Concurrency, true) => "concurrent agents (log scale)",
            (Axis::Rtt, false) => "emulated round-trip time, ms",
            (Axis::Rtt, true) => "emulated round-trip time, ms (log scale)",
        }
    }
}

/// Round-trip floors drawn against RTT: TCP connect plus TLS 1.3's one round trip, or TLS 1.2's
/// two.
const FLOORS: [(f64, &str); 2] = [(2.0, "2 × RTT"), (3.0, "3 × RTT")];
const FLOOR_COLOR: RGBColor = RGBColor(150, 150, 150);

/// A line: a series name and its (level, median, p99) points in level order.
struct Line {
    name: String,
    points: Vec<(f64, f64, f64)>,
}

fn lines(data: &ReportData, axis: Axis) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for config in &data.configs {
        let (Some(level), Some(median), Some(p99)) = (
            axis.level(config),
            config.quantile(0.5),
            config.quantile(0.99),
        ) else {
            continue;
        };
        let point = (level, median, p99);
        let name = axis.series(config);
        match lines.iter_mut().find(|line| line.name == name) {
            Some(line) => line.points.push(point),
            None => lines.push(Line {
                name: name.to_string(),
                points: vec![point],
            }),
        }
    }
    for line in &mut lines {
        line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

fn legend(lines: &[Line], axis: Axis) -> Vec<LegendEntry> {
    let mut entries = series_legend(lines.iter().map(|line| line.name.clone()));
    if axis == Axis::Rtt {
        entries.push(LegendEntry {
            text: "round-trip floors (2 × RTT, 3 × RTT)".into(),
            color: FLOOR_COLOR,
        });
    }
    entries
}

pub(super) fn size(data: &ReportData, style: &Style, axis: Axis) -> (u32, u32) {
    (
        style.width(),
        legend_height(&legend(&lines(data, axis), axis), style) + style.px(420.0),
    )
}

pub(super) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ReportData,
    style: &Style,
    axis: Axis,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let lines = lines(data, axis);
    let entries = legend(&lines, axis);
    let (legend_area, plot_area) = root.split_vertically(legend_height(&entries, style));
    draw_legend(&legend_area, &entries, style)?;
    let mut levels: Vec<f64> = data.configs.iter().filter_map(|c| axis.level(c)).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    let (lowest, highest) = (levels[0], levels[levels.len() - 1]);
    let logarithmic = lowest > 0.0 && highest / lowest >= 8.0;
    let position = move |level: f64| if logarithmic { level.log2() } else { level };
    let (left, right) = (position(lowest), position(highest));
    let margin = (right - left) * 0.04;
    let x_range = TickedAxis::new(
        left - margin..right + margin,
        levels.iter().map(|level| position(*level)).collect(),
    );
    let top = lines
        .iter()
        .flat_map(|line| line.points.iter().map(|point| point.2))
        .fold(0.0, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(40.0))
        .y_label_area_size(style.px(60.0))
        .build_cartesian_2d(x_range, 0.0..top.max(1e-3))?;
    let label = move |x: &f64| {
        let level = if logarithmic { x.exp2() } else { *x };
        // Levels are whole agents or round milliseconds; keep a decimal only where one exists.
        if (level - level.round()).abs() < 1e-6 {
            format!("{}", level.round())
        } else {
            format!("{level:.1}")
        }
    };
    chart
        .configure_mesh()
        .x_labels(levels.len())
        .x_label_formatter(&label)
        .x_desc(axis.description(logarithmic))
        .y_desc("handshake, milliseconds")
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    if axis == Axis::Rtt {
        for (round_trips, _) in FLOORS {
            let floor: Vec<(f64, f64)> = levels
                .iter()
                .map(|rtt| (position(*rtt), rtt * round_trips))
                .collect();
            chart.draw_series(DashedLineSeries::new(
                floor,
                style.px(3.0),
                style.px(3.0),
                style.line(FLOOR_COLOR, 1.0),
            ))?;
        }
    }
    for (index, line) in lines.iter().enumerate() {
        let medians: Vec<(f64, f64)> = line.points.iter().map(|p| (position(p.0), p.1)).collect();
        let tails: Vec<(f64, f64)> = line.points.iter().map(|p| (position(p.0), p.2)).collect();
        draw_median_and_tail(&mut chart, index, medians, tails, style)?;
    }
    Ok(())
}
