//! Requests under load, as two stacked panels sharing one x axis: above, the rate (requests
//! per second); below, the median (solid, dots) and p99 (dashed, triangles) request time.
//!
//! - Against concurrency ([`Axis::Concurrency`]): one line per combination of the other
//!   dimensions (HTTPS and plain HTTP side by side), from `tlslab load -c 1,20,...`.
//! - Against the asked arrival rate ([`Axis::ArrivalRate`]): each ramp's steps, the achieved
//!   rate against a grey diagonal (achieved = asked: the schedule kept), latency from the
//!   intended start, and the knee's interval shaded, as `schedule::knees` found it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    draw_legend, draw_line_with_dots, draw_median_and_tail, legend_height, series_legend,
    ChartError, LegendEntry, LevelChart, Style, TickedAxis,
};
use crate::data::ReportData;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Concurrency,
    ArrivalRate,
}

/// One line: a series name and its (level, rate, median ms, p99 ms) points in level order.
struct Line {
    name: String,
    points: Vec<Point>,
}

#[derive(Clone, Copy)]
struct Point {
    level: f64,
    rate: Option<f64>,
    median: Option<f64>,
    p99: Option<f64>,
}

/// The knees' intervals (between two asked rates), shaded in the arrival-rate chart.
fn knee_intervals(data: &ReportData) -> Vec<(f64, f64)> {
    data.summary
        .knees
        .iter()
        .filter_map(|knee| knee.between)
        .collect()
}

fn lines(data: &ReportData, axis: Axis) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut add = |name: &str, point: Point| match lines.iter_mut().find(|l| l.name == name) {
        Some(line) => line.points.push(point),
        None => lines.push(Line {
            name: name.to_string(),
            points: vec![point],
        }),
    };
    match axis {
        Axis::Concurrency => {
            let Some(load) = &data.load else {
                return Vec::new();
            };
            for config in &load.configs {
                let Some(concurrency) = config.concurrency else {
                    continue;
                };
                add(
                    &without_concurrency(&config.label),
                    Point {
                        level: concurrency as f64,
                        rate: config.requests_per_second,
                        median: config.percentiles.as_ref().map(|p| p.p50),
                        p99: config.percentiles.as_ref().map(|p| p.p99),
                    },
                );
            }
        }
        Axis::ArrivalRate => {
            for knee in &data.summary.knees {
                for step in &knee.steps {
                    add(
                        &knee.family,
                        Point {
                            level: step.asked_per_second,
                            rate: step.achieved_per_second,
                            median: step.median_ms,
                            p99: step.p99_ms,
                        },
                    );
                }
            }
        }
    }
    for line in &mut lines {
        line.points.sort_by(|a, b| a.level.total_cmp(&b.level));
    }
    // Words every line shares are said once, in the report's caption and header.
    let shared: Vec<String> = match lines.split_first() {
        Some((first, rest)) if !rest.is_empty() => first
            .name
            .split_whitespace()
            .filter(|word| {
                rest.iter()
                    .all(|line| line.name.split_whitespace().any(|w| w == *word))
            })
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    for line in &mut lines {
        let words: Vec<&str> = line
            .name
            .split_whitespace()
            .filter(|word| !shared.iter().any(|shared| shared == word))
            .collect();
        if !words.is_empty() {
            line.name = words.join(" ");
        }
    }
    lines
}

/// A Config's label without its concurrency word (`c20`): the series it belongs to. (The
/// report's `series_by_concurrency` keeps TLS words a plain-HTTP Config's label does not have,
/// which would join HTTP and HTTPS into one line.)
fn without_concurrency(label: &str) -> String {
    label
        .split_whitespace()
        .filter(|word| {
            !(word.len() > 1
                && word.starts_with('c')
                && word[1..].chars().all(|c| c.is_ascii_digit()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn levels(lines: &[Line]) -> Vec<f64> {
    let mut levels: Vec<f64> = lines
        .iter()
        .flat_map(|line| line.points.iter().map(|p| p.level))
        .collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    levels
}

/// Whether the chart has something to draw: two levels at least, with a rate.
pub(super) fn applies(data: &ReportData, axis: Axis) -> bool {
    let lines = lines(data, axis);
    levels(&lines).len() >= 2
        && lines
            .iter()
            .any(|line| line.points.iter().any(|p| p.rate.is_some()))
}

fn legend(lines: &[Line], axis: Axis, knees: bool) -> Vec<LegendEntry> {
    let mut entries = series_legend(lines.iter().map(|line| line.name.clone()));
    if axis == Axis::ArrivalRate {
        entries.push(LegendEntry {
            text: "achieved = asked".into(),
            color: GUIDE,
        });
        if knees {
            entries.push(LegendEntry {
                text: "the knee: latency or rate broke between these rates".into(),
                color: KNEE,
            });
        }
    }
    entries
}

const GUIDE: RGBColor = RGBColor(150, 150, 150);
const KNEE: RGBColor = RGBColor(250, 215, 160);

pub(super) fn size(data: &ReportData, style: &Style, axis: Axis) -> (u32, u32) {
    let lines = lines(data, axis);
    let knees = !knee_intervals(data).is_empty();
    (
        style.width(),
        legend_height(&legend(&lines, axis, knees), style) + style.px(620.0),
    )
}

/// The x positions: log2 of the levels when they span a factor of 8 or more.
struct Scale {
    logarithmic: bool,
    levels: Vec<f64>,
}

impl Scale {
    fn position(&self, level: f64) -> f64 {
        if self.logarithmic {
            level.log2()
        } else {
            level
        }
    }

    fn axis(&self) -> TickedAxis {
        let (left, right) = (
            self.position(self.levels[0]),
            self.position(self.levels[self.levels.len() - 1]),
        );
        let margin = (right - left) * 0.04;
        TickedAxis::new(
            left - margin..right + margin,
            self.levels
                .iter()
                .map(|level| self.position(*level))
                .collect(),
        )
    }

    fn label(&self, x: f64) -> String {
        let level = if self.logarithmic { x.exp2() } else { x };
        if (level - level.round()).abs() < 1e-6 {
            format!("{}", level.round())
        } else {
            format!("{level:.1}")
        }
    }
}

/// One panel: the levels along x, 0 to `top` up y, its descriptions (x only on the lower
/// panel), and the knees' band.
fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    scale: &Scale,
    knees: &[(f64, f64)],
    top: f64,
    (x_description, y_description): (Option<&str>, &str),
    style: &Style,
) -> Result<LevelChart<'a, DB>, ChartError>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(if x_description.is_some() { 40.0 } else { 30.0 }))
        .y_label_area_size(style.px(70.0))
        .build_cartesian_2d(scale.axis(), 0.0..top)?;
    let label = |x: &f64| scale.label(*x);
    // Whole numbers above 100 (rates), one decimal below (milliseconds).
    let number = |value: &f64| {
        if top >= 100.0 {
            format!("{value:.0}")
        } else {
            format!("{value:.1}")
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(scale.levels.len())
        .x_label_formatter(&label)
        .y_label_formatter(&number)
        .y_desc(y_description)
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210));
    if let Some(x_description) = x_description {
        mesh.x_desc(x_description);
    }
    mesh.draw()?;
    for &(from, to) in knees {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(scale.position(from), 0.0), (scale.position(to), top)],
            KNEE.mix(0.6).filled(),
        )))?;
    }
    Ok(chart)
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
    let knees = knee_intervals(data);
    let entries = legend(&lines, axis, !knees.is_empty());
    let (legend_area, plot_area) = root.split_vertically(legend_height(&entries, style));
    draw_legend(&legend_area, &entries, style)?;
    let levels = levels(&lines);
    if levels.len() < 2 {
        return Ok(());
    }
    let scale = Scale {
        logarithmic: levels[0] > 0.0 && levels[levels.len() - 1] / levels[0] >= 8.0,
        levels,
    };
    let x_description = match (axis, scale.logarithmic) {
        (Axis::Concurrency, false) => "concurrent agents",
        (Axis::Concurrency, true) => "concurrent agents (log scale)",
        (Axis::ArrivalRate, false) => "asked arrival rate, requests/s",
        (Axis::ArrivalRate, true) => "asked arrival rate, requests/s (log scale)",
    };
    let (upper, lower) = plot_area.split_vertically(plot_area.dim_in_pixel().1 / 2);

    // Above: the rate.
    let top_rate = lines
        .iter()
        .flat_map(|line| line.points.iter().filter_map(|p| p.rate))
        .chain(
            scale
                .levels
                .iter()
                .copied()
                .filter(|_| axis == Axis::ArrivalRate),
        )
        .fold(0.0, f64::max)
        * 1.08;
    let y_description = match axis {
        Axis::Concurrency => "requests per second",
        Axis::ArrivalRate => "achieved requests per second",
    };
    let mut chart = panel(
        &upper,
        &scale,
        &knees,
        top_rate.max(1.0),
        (None, y_description),
        style,
    )?;
    if axis == Axis::ArrivalRate {
        let diagonal: Vec<(f64, f64)> = scale
            .levels
            .iter()
            .map(|level| (scale.position(*level), *level))
            .collect();
        chart.draw_series(DashedLineSeries::new(
            diagonal,
            style.px(3.0),
            style.px(3.0),
            style.line(GUIDE, 1.0),
        ))?;
    }
    for (index, line) in lines.iter().enumerate() {
        let points: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter_map(|p| Some((scale.position(p.level), p.rate?)))
            .collect();
        draw_line_with_dots(&mut chart, index, points, style)?;
    }

    // Below: the request time, median and p99.
    let top_time = lines
        .iter()
        .flat_map(|line| line.points.iter().filter_map(|p| p.p99.or(p.median)))
        .fold(0.0, f64::max)
        * 1.05;
    let y_description = match axis {
        Axis::Concurrency => "request time, ms",
        Axis::ArrivalRate => "latency from intended start, ms",
    };
    let mut chart = panel(
        &lower,
        &scale,
        &knees,
        top_time.max(1e-3),
        (Some(x_description), y_description),
        style,
    )?;
    for (index, line) in lines.iter().enumerate() {
        let medians: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter_map(|p| Some((scale.position(p.level), p.median?)))
            .collect();
        let tails: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter_map(|p| Some((scale.position(p.level), p.p99?)))
            .collect();
        draw_median_and_tail(&mut chart, index, medians, tails, style)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_is_a_label_without_its_concurrency() {
        assert_eq!(
            without_concurrency("tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c20 h1 keepalive"),
            "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 h1 keepalive"
        );
        assert_eq!(
            without_concurrency("http c1 h2 keepalive"),
            "http h2 keepalive"
        );
        // Words that only look alike stay.
        assert_eq!(without_concurrency("chain1 c x25519"), "chain1 c x25519");
    }
}
