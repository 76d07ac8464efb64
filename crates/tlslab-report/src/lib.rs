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

#![forbid(unsafe_code)]
#![warn(missing_docs)]

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
pub use samples::{parse_samples, read_samples};
pub use summary::{ConfigSummary, Distribution, Gain, RunSummary};
pub use text::{
    duration, quiet_warnings, render_details_of_each, render_text, result_line, TextOptions,
};
pub use verdict::{Verdict, VerdictKind};

/// Why a report, a comparison or a sample file could not be made or read. What failed
/// underneath (the store, the statistics, the CSV reader, the chart library) is kept as
/// the [`source`](std::error::Error::source), so the terminal can show the whole chain;
/// [`ReportError::hint`] says what to do and [`ReportError::is_input`] whose problem it is,
/// which decides the exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The results store could not be read.
    #[error(transparent)]
    Store(#[from] tlslab_store::StoreError),
    /// What was asked cannot be answered from what was given: a label no Config has, a
    /// dimension the run did not vary, a sample file without numbers.
    #[error("{message}")]
    Input {
        /// What is wrong, naming the user's words (escaped for a terminal).
        message: String,
        /// What would do instead.
        hint: String,
    },
    /// The statistics refused the values of a metric (too few, not finite).
    #[error("cannot compare {metric}")]
    Compare {
        /// The metric compared.
        metric: String,
        /// What each Config needs, which depends on the comparison.
        hint: &'static str,
        /// What the statistics said.
        #[source]
        source: tlslab_stats::StatsError,
    },
    /// A sample file the CSV reader cannot read (a quote never closed, bytes that are not
    /// UTF-8 in a header).
    #[error("cannot read {name}")]
    SampleFile {
        /// The file's name, escaped for a terminal.
        name: String,
        /// What the CSV reader said.
        #[source]
        source: csv::Error,
    },
    /// The chart library failed to draw a chart: a bug, since the data is tlslab's own.
    #[error("cannot draw the {chart} chart")]
    Draw {
        /// The chart's name.
        chart: &'static str,
        /// What the chart library said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The PNG encoder failed on a drawn chart: a bug too.
    #[error("cannot encode the {chart} chart")]
    Encode {
        /// The chart's title.
        chart: &'static str,
        /// What the encoder said.
        #[source]
        source: png::EncodingError,
    },
}

impl ReportError {
    /// Whether this is the user's input (exit code 2) rather than the machine or a bug
    /// (exit code 3).
    pub fn is_input(&self) -> bool {
        match self {
            ReportError::Store(error) => error.kind() == tlslab_store::StoreErrorKind::Input,
            ReportError::Input { .. }
            | ReportError::Compare { .. }
            | ReportError::SampleFile { .. } => true,
            ReportError::Draw { .. } | ReportError::Encode { .. } => false,
        }
    }

    /// What the user can do about it, in words.
    pub fn hint(&self) -> String {
        match self {
            ReportError::Store(error) => error.hint(),
            ReportError::Input { hint, .. } => hint.clone(),
            ReportError::Compare { hint, .. } => (*hint).into(),
            ReportError::SampleFile { .. } => {
                "give a text file of numbers, one per line, or a CSV file with --column".into()
            }
            ReportError::Draw { .. } => {
                "this is a bug in tlslab; please report it with the results file".into()
            }
            ReportError::Encode { .. } => "report this as a bug".into(),
        }
    }
}

/// `error` and each of its causes on one line, joined by colons: for the warnings inside a
/// report, where there is no room for the terminal's `caused by:` lines.
pub(crate) fn in_one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        line.push_str(": ");
        line.push_str(&error.to_string());
        cause = error.source();
    }
    line
}

/// Every chart that applies, as PNG images with their file names (`<chart>.png`), in memory:
/// the caller checks where they may go before it writes any (`tlslab report --png`).
pub fn png_charts(data: &ReportData) -> Result<Vec<(String, Vec<u8>)>, ReportError> {
    charts_for(data)
        .into_iter()
        .map(|kind| Ok((markdown::png_name(kind), render_png(kind, data)?)))
        .collect()
}
