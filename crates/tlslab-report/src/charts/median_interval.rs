//! Per Config, the median handshake as a bar with its 95% confidence interval as whiskers.

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
        .filter_map(|config| config.median_ci.map(|(_, upper)| upper))
        .chain(data.configs.iter().filter_map(|c| c.quantile(0.5)))
        .fold(0.0, f64::max);
    let labels = row_labels(data);
    let mut chart = rows_chart(
        root,
        style,
        &labels,
        zero_to(largest),
        "median handshake, milliseconds",
    )?;
    let rows = data.configs.len();
    for (index, config) in data.configs.iter().enumerate() {
        let Some(median) = config.quantile(0.5) else {
            continue;
        };
        let y = row_y(index, rows);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.3), (median, y + 0.3)],
            color(index).mix(0.8).filled(),
        )))?;
        if let Some((lower, upper)) = config.median_ci {
            let whisker = style.line(BLACK, 1.5);
            chart.draw_series([
                PathElement::new(vec![(lower, y), (upper, y)], whisker),
                PathElement::new(vec![(lower, y - 0.2), (lower, y + 0.2)], whisker),
                PathElement::new(vec![(upper, y - 0.2), (upper, y + 0.2)], whisker),
            ])?;
        }
    }
    Ok(())
}
