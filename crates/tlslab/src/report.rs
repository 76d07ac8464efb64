//! `tlslab report`: a results store → an HTML or Markdown report, and PNG charts.

use std::path::{Path, PathBuf};

use tlslab_report::{
    png_charts, render_html, render_markdown, render_scan_report_html, render_scan_report_markdown,
    ReportData,
};

use crate::cli::{ReportArgs, ReportFormat};
use crate::failure::CliError;
use crate::output;
use tlslab_workflow::files;

/// The format the user asked for, or the one the output file's extension names.
fn format(args: &ReportArgs) -> ReportFormat {
    if let Some(format) = args.format {
        return format;
    }
    match args
        .output
        .as_deref()
        .and_then(Path::extension)
        .and_then(|extension| extension.to_str())
    {
        Some("md" | "markdown") => ReportFormat::Md,
        _ => ReportFormat::Html,
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

pub fn report(args: &ReportArgs) -> Result<i32, CliError> {
    tlslab_workflow::experiment::check_metric(args.metric.as_deref())?;
    let format = format(args);
    let output = args.output.clone().unwrap_or_else(|| {
        args.results.with_extension(match format {
            ReportFormat::Html => "html",
            ReportFormat::Md => "md",
        })
    });
    let report = files::Output::new("-o", &output, files::Kind::Report);
    files::claim(&report, &[&args.results], args.force)?;
    let store = output::open_store(&args.results)?;
    // A store of scans alone (`tlslab scan --out`) has no run to summarize.
    if !store.has_run()? {
        let scans = store.scans()?;
        let name = args.results.display().to_string();
        let text = match format {
            ReportFormat::Html => render_scan_report_html(&name, &scans),
            ReportFormat::Md => render_scan_report_markdown(&name, &scans),
        };
        files::write_whole(&output, text.as_bytes())?;
        crate::output::note(format_args!("wrote {}", output.display()));
        return Ok(0);
    }
    let data = ReportData::from_store_on(&store, args.metric.as_deref())?;
    if let Some(directory) = &args.png {
        write_charts(&data, directory, report, &args.results, args.force)?;
    }
    let text = match format {
        ReportFormat::Html => render_html(&data)?,
        ReportFormat::Md => {
            let links = args.png.as_deref().map(|png| link_from(&output, png));
            render_markdown(&data, links.as_deref())
        }
    };
    files::write_whole(&output, text.as_bytes())?;
    crate::output::note(format_args!("wrote {}", output.display()));
    Ok(0)
}

/// `--png DIR`: every chart as `DIR/<chart>.png`, each file checked by the rule before any
/// is written.
fn write_charts(
    data: &ReportData,
    directory: &Path,
    report: files::Output<'_>,
    results: &Path,
    force: bool,
) -> Result<(), CliError> {
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
    files::claim_all(&outputs, &[results], force)?;
    std::fs::create_dir_all(directory).map_err(|error| files::cannot_write(directory, error))?;
    for ((_, png), path) in charts.iter().zip(&paths) {
        files::write_whole(path, png)?;
    }
    output::note(format_args!(
        "wrote {} charts to {}",
        charts.len(),
        directory.display()
    ));
    Ok(())
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
