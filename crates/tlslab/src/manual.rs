//! `tlslab completions` and `tlslab man`: the shell completions and the man pages, generated
//! from the same clap definitions as the parser (clap_complete, clap_mangen), so they never
//! drift from the flags.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::failure::CliError;
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
    let cannot = |error: std::io::Error| {
        CliError::environment(
            format!(
                "cannot write the man pages into {}: {error}",
                directory.display()
            ),
            "give a directory you can write",
        )
    };
    std::fs::create_dir_all(directory).map_err(cannot)?;
    let mut pages = vec![("tlslab.1".to_string(), command.clone())];
    for subcommand in command.get_subcommands() {
        // Each page names its command as a user types it.
        let name = format!("tlslab-{}", subcommand.get_name());
        pages.push((format!("{name}.1"), subcommand.clone().name(name)));
    }
    for (file, page_command) in pages {
        let mut page = Vec::new();
        render(&page_command, &mut page)?;
        std::fs::write(directory.join(&file), page).map_err(cannot)?;
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
