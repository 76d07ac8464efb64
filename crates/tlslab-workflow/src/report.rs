//! `report`: a results store → an HTML or Markdown report, and PNG charts; a store of scans
//! alone → a report of its scans.

use std::path::{Path, PathBuf};

use tlslab_report::{
    png_charts, render_html, render_markdown, render_scan_report_html, render_scan_report_markdown,
    ReportData,
};

use crate::files;
use crate::results::Results;
use crate::{Control, Notice, WorkflowError};

/// The report's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// Self-contained HTML with charts.
    Html,
    /// Markdown tables, for papers and pull requests.
    Markdown,
}

/// The store to report on, and where and how.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// A results store's run: a file, or a database's run.
    pub results: Results,
    /// The report file; the store's path with `.html` or `.md` when `None` (for a database's
    /// run, `DATABASE-runN.html` here: [`Results::beside`]).
    pub output: Option<PathBuf>,
    /// The format; the output's extension names it when `None` (`.md` or `.markdown`:
    /// Markdown; else HTML).
    pub format: Option<ReportFormat>,
    /// A directory to write every chart into as a PNG, too.
    pub png: Option<PathBuf>,
    /// Whether an output may replace a file of another kind (never an input or a store).
    pub force: bool,
    /// The phase the summary table, comparisons and gains use; the question's when `None`.
    pub metric: Option<String>,
}

impl ReportRequest {
    /// The HTML report of `results` beside it.
    pub fn new(results: impl Into<Results>) -> ReportRequest {
        ReportRequest {
            results: results.into(),
            output: None,
            format: None,
            png: None,
            force: false,
            metric: None,
        }
    }
}

/// A report written.
#[derive(Debug, Clone)]
pub struct ReportOutcome {
    /// The report file.
    pub output: PathBuf,
    /// Its format.
    pub format: ReportFormat,
    /// Whether the store held scans alone (a report of its scans, no run to summarize).
    pub scans_only: bool,
    /// The PNG charts written, when asked for.
    pub charts: Vec<PathBuf>,
}

impl ReportRequest {
    /// The format asked for, or the one the output file's extension names.
    pub fn format(&self) -> ReportFormat {
        if let Some(format) = self.format {
            return format;
        }
        match self
            .output
            .as_deref()
            .and_then(Path::extension)
            .and_then(|extension| extension.to_str())
        {
            Some("md" | "markdown") => ReportFormat::Markdown,
            _ => ReportFormat::Html,
        }
    }
}

/// `path` relative to `base`'s directory when it lies below it (for links in Markdown),
/// otherwise as given.
fn link_from(base: &Path, path: &Path) -> String {
    let directory = base.parent().unwrap_or(Path::new(""));
    let relative = if directory.as_os_str().is_empty() {
        Some(path)
    } else {
        path.strip_prefix(directory).ok()
    };
    relative.unwrap_or(path).display().to_string()
}

/// Writes the report `request` asks for, each output checked by the file rule first.
/// `control`'s notices say when the store holds a run that did not finish, and when the
/// charts are written ([`Notice::ChartsWritten`]).
pub fn report(request: &ReportRequest, control: &Control) -> Result<ReportOutcome, WorkflowError> {
    crate::experiment::check_metric(request.metric.as_deref())?;
    let format = request.format();
    let (store, results, output) = open(request, control)?;
    let report = files::Output::new("-o", &output, files::Kind::Report);
    let inputs: Vec<&Path> = request.results.path().into_iter().collect();
    let mut outcome = ReportOutcome {
        output: output.clone(),
        format,
        scans_only: false,
        charts: Vec::new(),
    };
    // A store of scans alone (`tlslab scan --out`) has no run to summarize.
    if !store.has_run()? {
        let scans = store.scans()?;
        let name = results.to_string();
        let text = match format {
            ReportFormat::Html => render_scan_report_html(&name, &scans),
            ReportFormat::Markdown => render_scan_report_markdown(&name, &scans),
        };
        files::write_whole(&output, text.as_bytes())?;
        outcome.scans_only = true;
        return Ok(outcome);
    }
    let mut data = ReportData::from_store_on(&store, request.metric.as_deref())?;
    // A database's run is named with its number: the database holds many.
    data.summary.store = results.to_string();
    if let Some(directory) = &request.png {
        outcome.charts = write_charts(&data, directory, (report, &inputs), request, control)?;
    }
    let text = match format {
        ReportFormat::Html => render_html(&data)?,
        ReportFormat::Markdown => {
            let links = request.png.as_deref().map(|png| link_from(&output, png));
            render_markdown(&data, links.as_deref())
        }
    };
    files::write_whole(&output, text.as_bytes())?;
    Ok(outcome)
}

/// The store opened, its run named, and the report's file, checked by the file rule: for a
/// file, before the store is opened (it is never written over); for a database's run, once
/// the run's number names it.
fn open(
    request: &ReportRequest,
    control: &Control,
) -> Result<(tlslab_store::Store, Results, PathBuf), WorkflowError> {
    let extension = match request.format() {
        ReportFormat::Html => "html",
        ReportFormat::Markdown => "md",
    };
    let claim = |output: &Path| {
        let inputs: Vec<&Path> = request.results.path().into_iter().collect();
        let report = files::Output::new("-o", output, files::Kind::Report);
        files::claim(&report, &inputs, request.force)
    };
    if request.results.path().is_some() {
        let output = request
            .output
            .clone()
            .unwrap_or_else(|| request.results.beside(extension));
        claim(&output)?;
        let store = request.results.open(control)?;
        return Ok((store, request.results.clone(), output));
    }
    let store = request.results.open(control)?;
    let results = request.results.named(&store);
    let output = request
        .output
        .clone()
        .unwrap_or_else(|| results.beside(extension));
    claim(&output)?;
    Ok((store, results, output))
}

/// `png`: every chart as `DIR/<chart>.png`, each file checked by the rule before any is
/// written.
fn write_charts(
    data: &ReportData,
    directory: &Path,
    (report, inputs): (files::Output<'_>, &[&Path]),
    request: &ReportRequest,
    control: &Control,
) -> Result<Vec<PathBuf>, WorkflowError> {
    let charts = png_charts(data)?;
    let paths: Vec<PathBuf> = charts
        .iter()
        .map(|(name, _)| directory.join(name))
        .collect();
    let mut outputs = vec![report];
    outputs.extend(
        paths
            .iter()
            .map(|path| files::Output::in_directory("--png", path, files::Kind::Chart)),
    );
    files::claim_all(&outputs, inputs, request.force)?;
    std::fs::create_dir_all(directory).map_err(|error| files::cannot_write(directory, error))?;
    for ((_, png), path) in charts.iter().zip(&paths) {
        files::write_whole(path, png)?;
    }
    control.notice(Notice::ChartsWritten {
        count: paths.len(),
        directory: directory.to_path_buf(),
    });
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_links_are_relative_to_the_report() {
        assert_eq!(
            link_from(Path::new("out/report.md"), Path::new("out/charts")),
            "charts"
        );
        assert_eq!(
            link_from(Path::new("report.md"), Path::new("charts")),
            "charts"
        );
        assert_eq!(
            link_from(Path::new("a/report.md"), Path::new("/tmp/charts")),
            "/tmp/charts"
        );
    }
}
