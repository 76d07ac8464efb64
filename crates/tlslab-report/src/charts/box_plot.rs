//! Per Config, a horizontal box plot: quartiles, median, and whiskers to the 1st and 99th
//! percentiles (handshake tails matter; Tukey's 1.5·IQR fences would hide them).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, row_labels, row_y, rows_chart, zero_to, ChartError, Style};
use crate::data::ReportData;

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    (style.width(), style.rows_height(data.configs.len()))
}

pub(super) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ReportData,
    style: &Style,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let largest = data
        .configs
        .iter()
        .filter_map(|config| config.quantile(0.99))
        .fold(0.0, f64::max);
    let labels = row_labels(data);
    let mut chart = rows_chart(
        root,
        style,
        &labels,
        zero_to(largest),
        "handshake, milliseconds",
    )?;
    let rows = data.configs.len();
    for (index, config) in data.configs.iter().enumerate() {
        let quantiles = [0.01, 0.25, 0.5, 0.75, 0.99].map(|q| config.quantile(q));
        let [Some(p1), Some(q1), Some(median), Some(q3), Some(p99)] = quantiles else {
            continue;
        };
        let y = row_y(index, rows);
        let outline = style.line(BLACK, 1.0);
        chart.draw_series([
            PathElement::new(vec![(p1, y), (q1, y)], outline),
            PathElement::new(vec![(q3, y), (p99, y)], outline),
            PathElement::new(vec![(p1, y - 0.2), (p1, y + 0.2)], outline),
            PathElement::new(vec![(p99, y - 0.2), (p99, y + 0.2)], outline),
        ])?;
        chart.draw_series([
            Rectangle::new(
                [(q1, y - 0.35), (q3, y + 0.35)],
                color(index).mix(0.6).filled(),
            ),
            Rectangle::new([(q1, y - 0.35), (q3, y + 0.35)], outline),
        ])?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(median, y - 0.35), (median, y + 0.35)],
            style.line(BLACK, 2.5),
        )))?;
    }
    Ok(())
}
