//! Reports for tlslab results: the terminal summary of a run (text or JSON), comparisons in
//! words, a self-contained HTML report with charts, a Markdown report for papers and pull
//! requests, and each chart as a PNG.
//!
//! ```no_run
//! let store = tlslab_store::Store::open("results.db".as_ref()).unwrap();
//! let summary = tlslab_report::RunSummary::from_store(&store).unwrap();
//! print!("{}", tlslab_report::render_text(&summary, &Default::default()));
//!
//! let data = tlslab_report::ReportData::from_store(&store).unwrap();
//! std::fs::write("report.html", tlslab_report::render_html(&data).unwrap()).unwrap();
//! for (name, png) in tlslab_report::png_charts(&data).unwrap() {
//!     std::fs::write(name, png).unwrap();
//! }
//! ```

mod answer;
pub mod bottleneck;
mod charts;
mod comparison;
mod data;
mod diagnosis;
pub mod dimensions;
pub mod factorial;
mod flights;
mod html;
mod levels;
pub mod load;
mod markdown;
pub mod metric;
mod names;
pub mod outcomes;
mod samples;
mod scans;
pub mod schedule;
mod summary;
mod tables;
mod terminal;
mod text;
pub mod thresholds;
pub mod verdict;

use std::fmt;

pub use charts::{charts_for, render_png, render_svg, ChartKind};
pub use comparison::{
    compare_comparable, compare_store, render_comparisons, render_store_comparisons, Compared,
    Comparisons,
};
pub use data::{distinguishing_words, ConfigData, ReportData};
pub use html::{escape, render_html, render_scan_report_html};
pub use markdown::{render_markdown, render_scan_report_markdown};
pub use metric::Metric;
pub use names::{given_labels, Names};
pub use samples::{parse_samples, read_samples, SampleFileError};
pub use summary::{ConfigSummary, Distribution, Gain, RunSummary};
pub use text::{
    duration, quiet_warnings, render_details_of_each, render_text, result_line, TextOptions,
};
pub use verdict::{Verdict, VerdictKind};

/// Why a report could not be made, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportError {
    pub message: String,
    pub hint: String,
}

impl fmt::Display for ReportError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for ReportError {}

impl From<tlslab_store::StoreError> for ReportError {
    fn from(error: tlslab_store::StoreError) -> Self {
        ReportError {
            message: error.message,
            hint: error.hint,
        }
    }
}

/// Every chart that applies, as PNG images with their file names (`<chart>.png`), in memory:
/// the caller checks where they may go before it writes any (`tlslab report --png`).
pub fn png_charts(data: &ReportData) -> Result<Vec<(String, Vec<u8>)>, ReportError> {
    charts_for(data)
        .into_iter()
        .map(|kind| Ok((markdown::png_name(kind), render_png(kind, data)?)))
        .collect()
}
