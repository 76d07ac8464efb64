//! `tlslab completions` and `tlslab man`: the shell completions and the man pages, generated
//! from the same clap definitions as the parser (clap_complete, clap_mangen), so they never
//! drift from the flags.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::failure::CliError;
use crate::files;
use crate::output;

pub fn completions(args: &CompletionsArgs) -> Result<i32, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "tlslab", &mut script);
    output::print(String::from_utf8_lossy(&script))?;
    Ok(0)
}

pub fn man(args: &ManArgs) -> Result<i32, CliError> {
    let command = Cli::command();
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

fn render(command: &clap::Command, out: &mut Vec<u8>) -> Result<(), CliError> {
    clap_mangen::Man::new(command.clone())
        .render(out)
        .map_err(|error| {
            CliError::environment(
                format!("cannot render the man page: {error}"),
                "report this as a bug",
            )
        })
}
