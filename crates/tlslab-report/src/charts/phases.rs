//! "Where does the time go": per Config, the medians of the additive phases stacked.

use plotters::coord::Shift;
use plotters::prelude::*;
use tlslab_core::Phase;

use super::{
    draw_legend, legend_height, row_labels, row_y, rows_chart, zero_to, ChartError, LegendEntry,
    Style,
};
use crate::data::ReportData;

/// One colour per additive phase, in phase order: network waits in blues, client work in
/// greens, the server's in oranges.
/// One per [`Phase::PARTS`], so no part goes without its colour (a shorter list made `zip`
/// drop the last parts silently).
const PHASE_COLORS: [RGBColor; Phase::PARTS.len()] = [
    RGBColor(198, 219, 239), // dns
    RGBColor(158, 202, 225), // tcp_connect
    RGBColor(116, 196, 118), // client_hello_build
    RGBColor(253, 141, 60),  // server_response
    RGBColor(253, 190, 133), // server_flight
    RGBColor(35, 139, 69),   // cert_validation
    RGBColor(0, 90, 50),     // client_signing
    RGBColor(161, 217, 155), // client_finish
    RGBColor(49, 130, 189),  // server_finish
];

fn legend() -> Vec<LegendEntry> {
    Phase::PARTS
        .iter()
        .zip(PHASE_COLORS)
        .map(|(phase, color)| LegendEntry {
            text: phase.name().to_string(),
            color,
        })
        .collect()
}

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    (
        style.width(),
        legend_height(&legend(), style) + style.rows_height(data.configs.len()),
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
    let entries = legend();
    let (legend_area, plot_area) = root.split_vertically(legend_height(&entries, style));
    draw_legend(&legend_area, &entries, style)?;
    let configs = &data.summary.configs;
    let stacked = |index: usize| -> Vec<f64> {
        Phase::PARTS
            .iter()
            .map(|phase| {
                configs[index]
                    .phase_medians_ms
                    .get(phase.name())
                    .copied()
                    .unwrap_or(0.0)
            })
            .collect()
    };
    let largest = (0..configs.len())
        .map(|index| {
            let total: f64 = stacked(index).iter().sum();
            let median = configs[index].handshake_ms.map_or(0.0, |d| d.median);
            total.max(median)
        })
        .fold(0.0, f64::max);
    let labels = row_labels(data);
    let mut chart = rows_chart(
        &plot_area,
        style,
        &labels,
        zero_to(largest),
        "milliseconds (median per phase)",
    )?;
    let rows = configs.len();
    for (index, config) in configs.iter().enumerate() {
        let y = row_y(index, rows);
        let mut start = 0.0;
        let mut bars = Vec::new();
        for (part, color) in stacked(index).into_iter().zip(PHASE_COLORS) {
            if part > 0.0 {
                bars.push(Rectangle::new(
                    [(start, y - 0.35), (start + part, y + 0.35)],
                    color.filled(),
                ));
            }
            start += part;
        }
        chart.draw_series(bars)?;
        if let Some(handshake) = config.handshake_ms {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(handshake.median, y - 0.45), (handshake.median, y + 0.45)],
                style.line(BLACK, 2.0),
            )))?;
        }
    }
    Ok(())
}
