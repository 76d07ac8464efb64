//! The interaction chart: the median handshake against the levels of one dimension, one line
//! per level of another (`data::Interaction`). Parallel lines mean the second dimension's
//! effect does not depend on the first; lines that converge, diverge or cross mean it does,
//! which the by-dimension table's "depends on" column tests.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    draw_legend, draw_line_with_dots, legend_height, series_legend, ChartError, LegendEntry, Style,
    TickedAxis,
};
use crate::data::{Interaction, ReportData};

fn legend(interaction: &Interaction) -> Vec<LegendEntry> {
    series_legend(
        interaction
            .lines
            .iter()
            .map(|(level, _)| format!("{} {level}", interaction.line)),
    )
}

pub(super) fn applies(data: &ReportData) -> bool {
    data.interaction.as_ref().is_some_and(|interaction| {
        interaction.x_levels.len() >= 2
            && interaction
                .lines
                .iter()
                .any(|(_, medians)| medians.iter().filter(|m| m.is_some()).count() >= 2)
    })
}

pub(super) fn size(data: &ReportData, style: &Style) -> (u32, u32) {
    let entries = data.interaction.as_ref().map(legend).unwrap_or_default();
    (
        style.width(),
        legend_height(&entries, style) + style.px(380.0),
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
    let Some(interaction) = &data.interaction else {
        return Ok(());
    };
    let entries = legend(interaction);
    let (legend_area, plot_area) = root.split_vertically(legend_height(&entries, style));
    draw_legend(&legend_area, &entries, style)?;
    // The levels are categories, evenly spaced whatever their values.
    let count = interaction.x_levels.len();
    let ticks: Vec<f64> = (0..count).map(|index| index as f64).collect();
    let x_axis = TickedAxis::new(-0.3..(count as f64 - 0.7), ticks);
    let top = interaction
        .lines
        .iter()
        .flat_map(|(_, medians)| medians.iter().flatten().copied())
        .fold(0.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(style.px(10.0))
        .x_label_area_size(style.px(40.0))
        .y_label_area_size(style.px(60.0))
        .build_cartesian_2d(x_axis, 0.0..top.max(1e-3))?;
    let label = |x: &f64| {
        let index = x.round();
        if (x - index).abs() < 1e-6 && index >= 0.0 {
            interaction
                .x_levels
                .get(index as usize)
                .cloned()
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(count)
        .x_label_formatter(&label)
        .x_desc(interaction.x.as_str())
        .y_desc("median handshake, milliseconds")
        .label_style(style.text())
        .axis_desc_style(style.text())
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    for (index, (_, medians)) in interaction.lines.iter().enumerate() {
        let points: Vec<(f64, f64)> = medians
            .iter()
            .enumerate()
            .filter_map(|(level, median)| Some((level as f64, (*median)?)))
            .collect();
        draw_line_with_dots(&mut chart, index, points, style)?;
    }
    Ok(())
}
