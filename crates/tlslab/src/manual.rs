//! `tlslab completions` and `tlslab man`: the shell completions and the man pages, generated
//! from the same clap definitions as the parser (clap_complete, clap_mangen), so they never
//! drift from the flags.

use crate::cli::{CompletionsArgs, ManArgs};
use crate::failure::{
    CliError, EXIT_ENVIRONMENT, EXIT_FAILURES, EXIT_INTERRUPTED, EXIT_THRESHOLD, EXIT_USAGE,
};
use crate::help::command;
use crate::output;
use tlslab_workflow::files;

/// What each exit code means: the man pages' EXIT STATUS section, and, word for word after
/// its code, the README's "Exit codes" paragraph (a test holds the two together). Each entry
/// is the code, what it means, and more for the man page.
pub const EXIT_STATUS: &[(i32, &str, &str)] = &[
    (0, "success", ""),
    (
        EXIT_FAILURES,
        "the run finished but more attempts failed than --max-error-rate allows",
        "(default 0), or a scan finished but some probes got malformed answers (printed \
         without a grade).",
    ),
    (
        EXIT_USAGE,
        "usage or configuration error",
        "(values out of range included).",
    ),
    (
        EXIT_ENVIRONMENT,
        "environment problem",
        "(also a lab server that died during the run, or a full disk).",
    ),
    (
        EXIT_THRESHOLD,
        "the run completed but broke a --threshold",
        "(each broken one is named with its Config); also tlslab compare --fail-on when a \
         comparison's verdict finds what it refuses.",
    ),
    (
        EXIT_INTERRUPTED,
        "interrupted by SIGINT or SIGTERM",
        "(attempts in flight are stored as cancelled, every sample taken is stored and the \
         run is marked incomplete; a second signal exits at once).",
    ),
];

pub fn completions(args: &CompletionsArgs) -> Result<i32, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command(), "tlslab", &mut script);
    output::print(String::from_utf8_lossy(&script))?;
    Ok(0)
}

pub fn man(args: &ManArgs) -> Result<i32, CliError> {
    let command = command();
    let Some(directory) = &args.out else {
        let mut page = Vec::new();
        render(&command, &mut page)?;
        output::print(String::from_utf8_lossy(&page))?;
        return Ok(0);
    };
    let mut pages = vec![("tlslab.1".to_string(), command.clone())];
    for subcommand in command.get_subcommands() {
        // Each page names its command as a user types it.
        let name = format!("tlslab-{}", subcommand.get_name());
        pages.push((format!("{name}.1"), subcommand.clone().name(name)));
    }
    let mut rendered = Vec::new();
    for (file, page_command) in pages {
        let mut page = Vec::new();
        render(&page_command, &mut page)?;
        rendered.push((directory.join(file), page));
    }
    // Every page is checked by the rule before any is written.
    let outputs: Vec<files::Output<'_>> = rendered
        .iter()
        .map(|(path, _)| files::Output::in_directory("--out", path, files::Kind::ManPage))
        .collect();
    files::claim_all(&outputs, &[], args.force)?;
    std::fs::create_dir_all(directory).map_err(|error| files::cannot_write(directory, error))?;
    for (path, page) in &rendered {
        files::write_whole(path, page)?;
    }
    output::note(format_args!(
        "man pages written to {} (read one with: man -l {}/tlslab.1)",
        directory.display(),
        directory.display()
    ));
    Ok(0)
}

/// A page as clap_mangen renders it, with an EXIT STATUS section after the options and the
/// subcommands, where man pages have it.
fn render(command: &clap::Command, out: &mut Vec<u8>) -> Result<(), CliError> {
    let man = clap_mangen::Man::new(command.clone());
    let mut sections = || -> std::io::Result<()> {
        man.render_title(out)?;
        man.render_name_section(out)?;
        man.render_synopsis_section(out)?;
        man.render_description_section(out)?;
        if command.get_arguments().any(|arg| !arg.is_hide_set()) {
            man.render_options_section(out)?;
        }
        if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
            man.render_subcommands_section(out)?;
        }
        out.extend_from_slice(exit_status().as_bytes());
        if command.get_after_long_help().is_some() || command.get_after_help().is_some() {
            man.render_extra_section(out)?;
        }
        if command.get_version().is_some() || command.get_long_version().is_some() {
            man.render_version_section(out)?;
        }
        if command.get_author().is_some() {
            man.render_authors_section(out)?;
        }
        Ok(())
    };
    sections().map_err(|error| {
        CliError::environment(
            format!("cannot render the man page: {error}"),
            "report this as a bug",
        )
    })
}

/// The EXIT STATUS section, in roff, from [`EXIT_STATUS`].
fn exit_status() -> String {
    // roff: a backslash starts an escape and a hyphen is a hyphen, not a minus.
    let text = |words: &str| words.replace('\\', "\\e").replace('-', "\\-");
    let mut roff = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning, more) in EXIT_STATUS {
        roff.push_str(&format!(
            ".TP\n\\fB{code}\\fR\n{}\n",
            text(&format!("{meaning} {more}").trim_end().replace("  ", " "))
        ));
    }
    roff
}
