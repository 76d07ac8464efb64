//! Per Config, CPU time per handshake: the lab server's and the load generator's own.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    draw_legend, legend_height, row_labels, row_y, rows_chart, zero_to, ChartError, LegendEntry,
    Style,
};
use crate::data::ReportData;

const SERVER: RGBColor = RGBColor(49, 130, 189);
const CLIENT: RGBColor = RGBColor(158, 202, 225);

fn legend() -> Vec<LegendEntry> {
    vec![
        LegendEntry {
            text: "lab server".into(),
            color: SERVER,
        },
        LegendEntry {
            text: "client (tlslab)".into(),
            color: CLIENT,
        },
    ]
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
    let largest = configs
        .iter()
        .flat_map(|c| [c.server_cpu_per_handshake_ms, c.client_cpu_per_handshake_ms])
        .flatten()
        .fold(0.0, f64::max);
    let labels = row_labels(data);
    let mut chart = rows_chart(
        &plot_area,
        style,
        &labels,
        zero_to(largest),
        "CPU milliseconds per handshake",
    )?;
    let rows = configs.len();
    for (index, config) in configs.iter().enumerate() {
        let y = row_y(index, rows);
        if let Some(server) = config.server_cpu_per_handshake_ms {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y), (server, y + 0.38)],
                SERVER.filled(),
            )))?;
        }
        if let Some(client) = config.client_cpu_per_handshake_ms {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.38), (client, y)],
                CLIENT.filled(),
            )))?;
        }
    }
    Ok(())
}
