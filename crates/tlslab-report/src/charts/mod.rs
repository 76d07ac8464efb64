//! Charts, drawn with plotters: as SVG for the HTML report and as PNG for papers. One module
//! per chart kind; this module holds what they share (sizes, fonts, colours, the row layout of
//! per-Config charts, legends) and the two renderers.
//!
//! Per-Config charts draw one horizontal row per Config, so 30 Configs (or 300) stay legible:
//! the chart grows downwards and every row carries its label. Rows keep the run's Config order
//! in every chart, so a row can be followed from chart to chart.

mod box_plot;
mod ecdf;
mod interaction;
mod load;
mod median_interval;
mod phases;
mod rounds;
mod scaling;
mod tail;
mod usage;

use std::ops::Range;
use std::sync::Once;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::data::ReportData;
use crate::ReportError;

pub(crate) type ChartError = Box<dyn std::error::Error + Send + Sync>;

/// The chart kinds, in the order the report shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// The median of each phase per Config: where the time goes.
    Phases,
    /// The median handshake per Config with its 95% interval: whether two differ.
    MedianInterval,
    /// The distribution of handshake times (ECDF): shapes a median hides.
    Ecdf,
    /// The share slower than each time (1 − ECDF) on log axes, p99 and p99.9 marked.
    Tail,
    /// Box plots of handshake times per Config.
    BoxPlot,
    /// Each round's median handshake, warm-up rounds apart: drift over the run.
    Rounds,
    /// The median and p99 against concurrency: how a server scales.
    Concurrency,
    /// The median against the emulated round trip: how many round trips a handshake waits.
    Rtt,
    /// The median against one dimension, a line per level of another (a crossed matrix).
    Interaction,
    /// The server's and the client's CPU per handshake.
    Usage,
    /// Requests per second and request time against concurrency (`tlslab load -c 1,20,...`).
    Requests,
    /// Achieved rate and latency against the asked arrival rate, with the knee (a ramp).
    ArrivalRate,
}

impl ChartKind {
    /// Every kind, in the order the report shows them.
    pub const ALL: [ChartKind; 12] = [
        ChartKind::Requests,
        ChartKind::ArrivalRate,
        ChartKind::Phases,
        ChartKind::MedianInterval,
        ChartKind::Ecdf,
        ChartKind::Tail,
        ChartKind::BoxPlot,
        ChartKind::Rounds,
        ChartKind::Concurrency,
        ChartKind::Rtt,
        ChartKind::Interaction,
        ChartKind::Usage,
    ];

    /// The file stem of the chart's PNG and the id of its figure in the HTML.
    pub fn name(self) -> &'static str {
        match self {
            ChartKind::Phases => "phases",
            ChartKind::MedianInterval => "median-ci",
            ChartKind::Ecdf => "ecdf",
            ChartKind::Tail => "tail",
            ChartKind::BoxPlot => "box-plot",
            ChartKind::Rounds => "rounds",
            ChartKind::Concurrency => "concurrency",
            ChartKind::Rtt => "rtt",
            ChartKind::Usage => "cpu-per-handshake",
            ChartKind::Interaction => "interaction",
            ChartKind::Requests => "requests",
            ChartKind::ArrivalRate => "arrival-rate",
        }
    }

    /// The chart's heading in the report.
    pub fn title(self) -> &'static str {
        match self {
            ChartKind::Phases => "Where the time goes: median of each phase",
            ChartKind::MedianInterval => "Median handshake with its 95% confidence interval",
            ChartKind::Ecdf => "Distribution of handshake times (ECDF)",
            ChartKind::Tail => "The tail: share of handshakes slower than each time (log scale)",
            ChartKind::BoxPlot => "Handshake times: quartiles and tails",
            ChartKind::Rounds => "Median handshake per round: warm-up and drift",
            ChartKind::Concurrency => "Median and p99 handshake against concurrency",
            ChartKind::Rtt => "Median and p99 handshake against round-trip time",
            ChartKind::Usage => "CPU per handshake",
            ChartKind::Interaction => {
                "Interaction: the median against one dimension, a line per level of another"
            }
            ChartKind::Requests => "Requests per second and request time against concurrency",
            ChartKind::ArrivalRate => "Achieved rate and latency against the asked arrival rate",
        }
    }

    /// What the reader must know to read the chart right.
    pub fn caption(self) -> &'static str {
        match self {
            ChartKind::Phases => "Each bar stacks the medians of the seven additive phases of successful handshakes; the black tick is the median of the whole handshake (a sum of medians need not equal the median of sums).",
            ChartKind::MedianInterval => "Bars end at the median handshake; whiskers show the 95% bootstrap confidence interval of the median. Non-overlapping intervals suggest a real difference; the comparisons table decides.",
            ChartKind::Ecdf => "Share of successful handshakes completed within each time, a step at each sample; the x axis ends at the largest 99.5th percentile so the tails do not squash the body (the tail chart shows them).",
            ChartKind::Tail => "1 − ECDF: the share of successful handshakes slower than each time, both axes logarithmic, a step at each sample down to the slowest (whose drop ends at the bottom edge). Dashed lines at 1% and 0.1%: a curve crosses them at its p99 and p99.9, marked by dots (p99 from 100 samples, p99.9 from 1,000).",
            ChartKind::BoxPlot => "Box: 25th to 75th percentile, with the median as a thick line; whiskers: 1st to 99th percentile.",
            ChartKind::Rounds => "Each Config's median handshake in each round of the plan (rounds interleave the Configs, so a machine that gets busier slows every line alike). Hollow circles: warm-up rounds, not measured; a slope across the filled dots is drift the summary's statistics assume away.",
            ChartKind::Concurrency => "Solid lines and dots: median; dashed lines and triangles: 99th percentile; one line per combination of the other dimensions.",
            ChartKind::Rtt => "Solid lines and dots: median; dashed lines and triangles: 99th percentile; grey dashes: the round-trip floors of a full handshake over TCP (2 × RTT for TLS 1.3, 3 × RTT for TLS 1.2). A median below its floor means the emulation failed.",
            ChartKind::Usage => "CPU time (user + system) per measured attempt: the lab server's (dark) and the load generator's own (light). Client CPU includes the results writer.",
            ChartKind::Interaction => "Each line is one level of the second dimension; Configs that differ in further dimensions are pooled by the median of their medians. Parallel lines: the second dimension's effect does not depend on the first; converging, diverging or crossing lines: it does (the by-dimension table tests it).",
            ChartKind::Requests => "Above: requests per second of each Config (complete requests over the time taken). Below: request time, median (solid lines, dots) and 99th percentile (dashed lines, triangles). One line per combination of the other dimensions, HTTPS and plain HTTP side by side.",
            ChartKind::ArrivalRate => "Each ramp's steps. Above: the rate achieved against the rate asked; on the grey diagonal the schedule was kept. Below: latency from each request's intended start (no coordinated omission), median (solid) and 99th percentile (dashed). The shaded band is the knee: where the median doubled or the rate fell below 95% of the asked.",
        }
    }

    /// Whether the data has what the chart draws.
    pub fn applies(self, data: &ReportData) -> bool {
        let any_samples = data.configs.iter().any(|c| !c.handshake_ms.is_empty());
        match self {
            ChartKind::Interaction => interaction::applies(data),
            ChartKind::Requests => load::applies(data, load::Axis::Concurrency),
            ChartKind::ArrivalRate => load::applies(data, load::Axis::ArrivalRate),
            ChartKind::Rounds => rounds::applies(data),
            ChartKind::Concurrency => any_samples && data.concurrency_varies(),
            ChartKind::Rtt => any_samples && data.rtt_varies(),
            ChartKind::Usage => data
                .summary
                .configs
                .iter()
                .any(|c| c.client_cpu_per_handshake_ms.is_some()),
            _ => any_samples,
        }
    }

    fn size(self, data: &ReportData, style: &Style) -> (u32, u32) {
        match self {
            ChartKind::Phases => phases::size(data, style),
            ChartKind::MedianInterval => median_interval::size(data, style),
            ChartKind::Ecdf => ecdf::size(data, style),
            ChartKind::Tail => tail::size(data, style),
            ChartKind::BoxPlot => box_plot::size(data, style),
            ChartKind::Rounds => rounds::size(data, style),
            ChartKind::Concurrency => scaling::size(data, style, scaling::Axis::Concurrency),
            ChartKind::Rtt => scaling::size(data, style, scaling::Axis::Rtt),
            ChartKind::Usage => usage::size(data, style),
            ChartKind::Interaction => interaction::size(data, style),
            ChartKind::Requests => load::size(data, style, load::Axis::Concurrency),
            ChartKind::ArrivalRate => load::size(data, style, load::Axis::ArrivalRate),
        }
    }

    fn draw<DB: DrawingBackend>(
        self,
        root: &DrawingArea<DB, Shift>,
        data: &ReportData,
        style: &Style,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        match self {
            ChartKind::Phases => phases::draw(root, data, style),
            ChartKind::MedianInterval => median_interval::draw(root, data, style),
            ChartKind::Ecdf => ecdf::draw(root, data, style),
            ChartKind::Tail => tail::draw(root, data, style),
            ChartKind::BoxPlot => box_plot::draw(root, data, style),
            ChartKind::Rounds => rounds::draw(root, data, style),
            ChartKind::Concurrency => scaling::draw(root, data, style, scaling::Axis::Concurrency),
            ChartKind::Rtt => scaling::draw(root, data, style, scaling::Axis::Rtt),
            ChartKind::Usage => usage::draw(root, data, style),
            ChartKind::Interaction => interaction::draw(root, data, style),
            ChartKind::Requests => load::draw(root, data, style, load::Axis::Concurrency),
            ChartKind::ArrivalRate => load::draw(root, data, style, load::Axis::ArrivalRate),
        }
    }
}

/// Draws the Configs' legend (a colour per Config) at the top of `root`, and returns the area
/// below it, where the chart's plot goes.
fn below_config_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ReportData,
    style: &Style,
) -> Result<DrawingArea<DB, Shift>, ChartError>
where
    DB::ErrorType: 'static,
{
    let entries = config_legend(data);
    let (legend_area, plot_area) = root.split_vertically(legend_height(&entries, style));
    draw_legend(&legend_area, &entries, style)?;
    Ok(plot_area)
}

/// The charts that apply to this data, in report order.
pub fn charts_for(data: &ReportData) -> Vec<ChartKind> {
    ChartKind::ALL
        .into_iter()
        .filter(|kind| kind.applies(data))
        .collect()
}

/// The chart as an SVG document (CSS pixels).
pub fn render_svg(kind: ChartKind, data: &ReportData) -> Result<String, ReportError> {
    register_fonts();
    let style = Style { scale: 1.0 };
    let size = kind.size(data, &style);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_on(&root, kind, data, &style)?;
    }
    Ok(svg)
}

/// Pixel density of PNG charts relative to the SVG ones: 2× reads sharply in print.
const PNG_SCALE: f64 = 2.0;

/// The chart as a PNG image, in memory: the caller decides where it may be written.
pub fn render_png(kind: ChartKind, data: &ReportData) -> Result<Vec<u8>, ReportError> {
    register_fonts();
    let style = Style { scale: PNG_SCALE };
    let (width, height) = kind.size(data, &style);
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        draw_on(&root, kind, data, &style)?;
    }
    let failure = |source| ReportError::Encode {
        chart: kind.title(),
        source,
    };
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failure)?;
    writer.write_image_data(&pixels).map_err(failure)?;
    writer.finish().map_err(failure)?;
    Ok(png)
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    kind: ChartKind,
    data: &ReportData,
    style: &Style,
) -> Result<(), ReportError>
where
    DB::ErrorType: 'static,
{
    let result = root
        .fill(&WHITE)
        .map_err(ChartError::from)
        .and_then(|()| kind.draw(root, data, style))
        .and_then(|()| root.present().map_err(ChartError::from));
    result.map_err(|source| ReportError::Draw {
        chart: kind.name(),
        source,
    })
}

/// The font family the charts use. Text is measured with the embedded DejaVu Sans, and SVGs
/// name the generic family, so browsers draw it with their own sans-serif face.
const FAMILY: &str = "sans-serif";

fn register_fonts() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The embedded fonts are valid TrueType files; failing here is a packaging bug.
        register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("embedded DejaVu Sans is unreadable"));
        register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold())
            .unwrap_or_else(|_| panic!("embedded DejaVu Sans Bold is unreadable"));
    });
}

/// Sizes in CSS pixels, multiplied by the output's pixel density.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    pub scale: f64,
}

/// The chart width in CSS pixels: fits a laptop screen and an A4 page at print scale.
const WIDTH: f64 = 960.0;
/// Height of one Config's row in per-Config charts.
const ROW: f64 = 24.0;
const FONT_SIZE: f64 = 13.0;

impl Style {
    pub fn px(&self, css_pixels: f64) -> u32 {
        (css_pixels * self.scale).round() as u32
    }

    pub fn width(&self) -> u32 {
        self.px(WIDTH)
    }

    pub fn font(&self) -> FontDesc<'static> {
        (FAMILY, FONT_SIZE * self.scale).into_font()
    }

    pub fn text(&self) -> TextStyle<'static> {
        self.font().color(&BLACK)
    }

    pub fn line(&self, color: RGBColor, css_width: f64) -> ShapeStyle {
        color.stroke_width(self.px(css_width).max(1))
    }

    /// Width and height of a text in this style's font, in output pixels.
    pub fn measure(&self, text: &str) -> (u32, u32) {
        register_fonts();
        self.font().box_size(text).unwrap_or((
            text.chars().count() as u32 * self.px(7.5),
            self.px(FONT_SIZE),
        ))
    }

    /// Height of a chart with one row per label, plus the axis and margins.
    pub fn rows_height(&self, rows: usize) -> u32 {
        self.px(ROW * rows.max(1) as f64 + 70.0)
    }
}

/// The Tableau 20 colours, strong ones first: distinct on screen, in print and for most colour-
/// blind readers when neighbours differ.
const PALETTE: [RGBColor; 20] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
    RGBColor(255, 152, 150),
    RGBColor(197, 176, 213),
    RGBColor(196, 156, 148),
    RGBColor(247, 182, 210),
    RGBColor(199, 199, 199),
    RGBColor(219, 219, 141),
    RGBColor(158, 218, 229),
];

pub(crate) fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// A continuous axis whose ticks are exactly the values given: rows of per-Config charts, the
/// measured levels of a dimension. (plotters' own key-point binding loses the f64 formatter.)
pub(crate) struct TickedAxis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl TickedAxis {
    pub fn new(range: Range<f64>, ticks: Vec<f64>) -> TickedAxis {
        TickedAxis {
            inner: range.into(),
            ticks,
        }
    }
}

impl Ranged for TickedAxis {
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

/// A per-Config chart's coordinates: x in the chart's unit, y the row (the first Config on top).
pub(crate) type RowCoordinates = Cartesian2d<RangedCoordf64, TickedAxis>;

/// The y value of row `index` of `rows`: the first row is drawn on top.
pub(crate) fn row_y(index: usize, rows: usize) -> f64 {
    (rows - 1 - index) as f64
}

/// Sets up a chart with one labelled row per Config, x from `x_range`, and draws the mesh.
pub(crate) fn rows_chart<'a, DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    style: &Style,
    labels: &[String],
    x_range: Range<f64>,
    x_description: &str,
) -> Result<ChartContext<'a, DB, RowCoordinates>, ChartError>
where
    DB::ErrorType: 'static,
{
    let rows = labels.len().max(1);
    let label_width = labels
        .iter()
        .map(|label| style.measure(label).0)
        .max()
        .unwrap_or(0)
        .min(style.px(420.0));
    let key_points: Vec<f64> = (0..rows).map(|row| row as f64).collect();
    let y_range = TickedAxis::new(-0.6..rows as f64 - 0.4, key_points);
    let mut chart = ChartBuilder::on(area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(40.0))
        .y_label_area_size(label_width + style.px(12.0))
        .build_cartesian_2d(x_range, y_range)?;
    let formatter = |y: &f64| {
        let row = y.round() as usize;
        if row < rows {
            labels[rows - 1 - row].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows)
        .y_label_formatter(&formatter)
        .x_desc(x_description)
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    Ok(chart)
}

/// An x range from 0 to a little above `largest`, so the longest bar does not touch the edge.
pub(crate) fn zero_to(largest: f64) -> Range<f64> {
    let end = if largest.is_finite() && largest > 0.0 {
        largest * 1.05
    } else {
        1.0
    };
    0.0..end
}

/// One legend entry: a colour swatch (solid or dashed line style) and its text.
pub(crate) struct LegendEntry {
    pub text: String,
    pub color: RGBColor,
}

/// Height of a legend laid out in rows across the chart width.
pub(crate) fn legend_height(entries: &[LegendEntry], style: &Style) -> u32 {
    legend_layout(entries, style).1
}

/// Positions of each entry and the total height: entries flow left to right and wrap.
fn legend_layout(entries: &[LegendEntry], style: &Style) -> (Vec<(i32, i32)>, u32) {
    let (swatch, gap, line) = (style.px(14.0), style.px(18.0), style.px(20.0));
    let (left, width) = (style.px(10.0), style.width() - style.px(20.0));
    let mut positions = Vec::with_capacity(entries.len());
    let (mut x, mut y) = (left, style.px(6.0));
    for entry in entries {
        let wide = swatch + style.px(6.0) + style.measure(&entry.text).0;
        if x > left && x + wide > left + width {
            x = left;
            y += line;
        }
        positions.push((x as i32, y as i32));
        x += wide + gap;
    }
    let height = if entries.is_empty() {
        0
    } else {
        y + line + style.px(4.0)
    };
    (positions, height)
}

/// Draws the legend at the top of `area` (which should be [`legend_height`] tall).
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
    style: &Style,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let (positions, _) = legend_layout(entries, style);
    let swatch = style.px(14.0) as i32;
    for (entry, (x, y)) in entries.iter().zip(positions) {
        area.draw(&Rectangle::new(
            [(x, y + 2), (x + swatch, y + swatch)],
            entry.color.filled(),
        ))?;
        area.draw(&Text::new(
            entry.text.clone(),
            (x + swatch + style.px(6.0) as i32, y),
            style.text(),
        ))?;
    }
    Ok(())
}

/// Per-Config legend entries (short labels, chart colours).
pub(crate) fn config_legend(data: &ReportData) -> Vec<LegendEntry> {
    data.configs
        .iter()
        .enumerate()
        .map(|(index, config)| LegendEntry {
            text: config.short_label.clone(),
            color: color(index),
        })
        .collect()
}

/// The row labels of per-Config charts.
pub(crate) fn row_labels(data: &ReportData) -> Vec<String> {
    data.configs.iter().map(|c| c.short_label.clone()).collect()
}

/// A chart whose x axis is ticked at measured levels and whose y axis is a number.
pub(crate) type LevelChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<TickedAxis, RangedCoordf64>>;

/// One legend entry per series, in the series' colours (by position, as the lines are drawn).
pub(crate) fn series_legend(names: impl IntoIterator<Item = String>) -> Vec<LegendEntry> {
    names
        .into_iter()
        .enumerate()
        .map(|(index, text)| LegendEntry {
            text,
            color: color(index),
        })
        .collect()
}

/// Series `index` as a solid line with a dot at each point, in its colour.
pub(crate) fn draw_line_with_dots<DB: DrawingBackend>(
    chart: &mut LevelChart<'_, DB>,
    index: usize,
    points: Vec<(f64, f64)>,
    style: &Style,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let marker = style.px(4.0) as i32;
    chart.draw_series(
        points
            .iter()
            .map(|point| Circle::new(*point, marker, color(index).filled())),
    )?;
    chart.draw_series(LineSeries::new(points, style.line(color(index), 2.0)))?;
    Ok(())
}

/// One series' median (solid line, dots) and 99th percentile (dashed line, triangles), in the
/// series' colour: how the scaling and load charts draw a line of levels.
pub(crate) fn draw_median_and_tail<DB: DrawingBackend>(
    chart: &mut LevelChart<'_, DB>,
    index: usize,
    medians: Vec<(f64, f64)>,
    tails: Vec<(f64, f64)>,
    style: &Style,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let marker = style.px(4.0) as i32;
    let stroke = style.line(color(index), 2.0);
    draw_line_with_dots(chart, index, medians, style)?;
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
    Ok(())
}
