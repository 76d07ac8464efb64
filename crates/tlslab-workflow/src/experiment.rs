//! The experiment a request describes: a TOML file's (or a base), with overrides on top, and
//! the checks made before anything runs.

use std::path::Path;

use tlslab_core::{Experiment, Overrides};

use crate::WorkflowError;

/// The experiment `file` holds (or `base` without one), with `overrides` applied; and the
/// warnings it earns (an option that has no effect as combined).
pub fn build(
    file: Option<&Path>,
    base: Experiment,
    mut overrides: Overrides,
) -> Result<(Experiment, Vec<String>), WorkflowError> {
    let mut experiment = match file {
        Some(path) => read(path)?,
        None => base,
    };
    if let Some(page) = overrides.page.as_mut() {
        if let Some(path) = page.strip_prefix('@') {
            *page = page_description(Path::new(path))?;
        }
    }
    experiment.apply(&overrides)?;
    let mut warnings = Vec::new();
    if overrides.client_cert_profile.is_some() && !experiment.mtls.contains(&tlslab_core::Mtls::On)
    {
        warnings.push(
            "--client-cert-profile has no effect without --mtls on (the lab server asks for no client certificate)"
                .to_string(),
        );
    }
    Ok((experiment, warnings))
}

/// The experiment of a TOML file.
fn read(path: &Path) -> Result<Experiment, WorkflowError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        WorkflowError::usage_because(
            format!("cannot read experiment file {}", path.display()),
            "give the path of a TOML experiment file (tlslab run --dump-experiment prints one)",
            error,
        )
    })?;
    Experiment::from_toml(&text).map_err(|error| {
        WorkflowError::usage(
            format!(
                "experiment file {} is invalid: {}",
                path.display(),
                error.to_string().trim()
            ),
            "fix the key or value named above; tlslab run --dump-experiment prints a valid file",
        )
    })
}

/// `--page @FILE`: the page a description file lists (lines of COUNT:SIZE, or a HAR file a
/// browser saved), as the COUNT:SIZE list that is stored with the Config.
fn page_description(path: &Path) -> Result<String, WorkflowError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        WorkflowError::usage_because(
            format!("cannot read page description {}", path.display()),
            "--page @FILE takes a file of COUNT:SIZE lines or a HAR file (saved from a browser's network panel)",
            error,
        )
    })?;
    tlslab_core::Page::from_description(&text)
        .map(|page| page.to_string())
        .map_err(|problem| {
            WorkflowError::usage_because(
                format!("page description {}: {problem}", path.display()),
                "each line is COUNT:SIZE or SIZE (30KB, 1MiB), or the file is a HAR 1.2 JSON file",
                problem,
            )
        })
}

/// `--metric`, checked before anything runs (a misspelt phase found after a long run would
/// cost the run its summary): a phase or an event.
pub fn check_metric(metric: Option<&str>) -> Result<(), WorkflowError> {
    let Some(name) = metric else {
        return Ok(());
    };
    let known = tlslab_core::Phase::from_name(name).is_some()
        || tlslab_core::Event::ALL
            .iter()
            .any(|event| event.name() == name);
    if known {
        return Ok(());
    }
    let phases: Vec<&str> = tlslab_core::Phase::ALL
        .iter()
        .map(|phase| phase.name())
        .collect();
    Err(WorkflowError::usage(
        format!("--metric {name}: not a phase or event"),
        format!(
            "give a phase ({}) or an event (first_byte, response_done, ...)",
            phases.join(", ")
        ),
    ))
}
