//! Median and p99 handshake against concurrency: one line per combination of the other
//! dimensions. The axis is logarithmic when concurrency spans a factor of 8 or more, with
//! ticks exactly at the measured levels.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, draw_legend, legend_height, ChartError, LegendEntry, Style, TickedAxis};
use crate::data::ReportData;

/// A line: a series name and its (concurrency, median, p99) points in concurrency order.
struct Line {
    name: String,
    points: Vec<(f64, f64, f64)>,
}

fn lines(data: &ReportData) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for config in &data.configs {
        let (Some(median), Some(p99)) = (config.quantile(0.5), config.quantile(0.99)) else {
            continue;
        };
        let point = (config.concurrency, median, p99);
        match lines.iter_mut().find(|line| line.name == config.series) {
            Some(line) => line.points.push(point),
            None => lines.push(Line {
                name: config.series.clone(),
                points: vec![point],
            }),
        }
    }
    for line in &mut lines {
        line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

fn legend(lines: &[Line]) -> Vec<LegendEntry> {
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| LegendEntry {
            text: line.name.clone(),
            color: color(index),
        })
        .collect()
}

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    (
        style.width(),
        legend_height(&legend(&lines(data)), style) + style.px(420.0),
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
    let lines = lines(data);
    let entries = legend(&lines);
    let (legend_area, plot_area) = root.split_vertically(legend_height(&entries, style));
    draw_legend(&legend_area, &entries, style)?;
    let mut levels: Vec<f64> = data.configs.iter().map(|c| c.concurrency).collect();
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
        format!("{}", level.round())
    };
    chart
        .configure_mesh()
        .x_labels(levels.len())
        .x_label_formatter(&label)
        .x_desc(if logarithmic {
            "concurrent agents (log scale)"
        } else {
            "concurrent agents"
        })
        .y_desc("handshake, milliseconds")
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    let marker = style.px(4.0) as i32;
    for (index, line) in lines.iter().enumerate() {
        let stroke = style.line(color(index), 2.0);
        let medians: Vec<(f64, f64)> = line.points.iter().map(|p| (position(p.0), p.1)).collect();
        let tails: Vec<(f64, f64)> = line.points.iter().map(|p| (position(p.0), p.2)).collect();
        chart.draw_series(LineSeries::new(medians.clone(), stroke))?;
        chart.draw_series(
            medians
                .iter()
                .map(|point| Circle::new(*point, marker, color(index).filled())),
        )?;
        chart.draw_series(DashedLineSeries::new(
            tails.clone(),
            style.px(6.0),
            style.px(4.0),
            stroke,
        ))?;
        chart.draw_series(
            tails
                .iter()
                .map(|point| TriangleMarker::new(*point, marker + 1, color(index).filled())),
        )?;
    }
    Ok(())
}
