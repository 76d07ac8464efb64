//! The CLI explains itself: shell completions bash can source, man pages `man -l` renders,
//! and a long `--version` that names the libraries linked.

mod support;

use std::process::Command;

use support::*;

#[test]
fn bash_sources_the_completion_script_and_completes_subcommands() {
    let dir = scratch("completions");
    let script = dir.join("tlslab.bash");
    std::fs::write(&script, stdout(&tlslab(&["completions", "bash"]))).unwrap();
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p tlslab && COMP_WORDS=(tlslab ca); COMP_CWORD=1; \
             COMP_LINE='tlslab ca'; COMP_POINT=9; _tlslab tlslab ca tlslab; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("-F _tlslab tlslab"), "{text}");
    assert!(
        text.contains("capture"),
        "`tlslab ca<TAB>` offers capture: {text}"
    );
    for shell in ["zsh", "fish", "powershell"] {
        assert!(
            !stdout(&tlslab(&["completions", shell])).is_empty(),
            "{shell}"
        );
    }
}

#[test]
fn the_man_pages_render() {
    let dir = scratch("man");
    let page = stdout(&tlslab(&["man"]));
    assert!(page.contains(".TH tlslab 1"), "{page}");
    let pages = dir.join("man1");
    tlslab_succeeds(&["man", "--out", pages.to_str().unwrap()]);
    let run_page = pages.join("tlslab-run.1");
    let roff = std::fs::read_to_string(&run_page).unwrap();
    assert!(roff.contains("hello\\-retry"), "every flag is documented");
    match Command::new("man")
        .env("MANWIDTH", "80")
        .arg("-l")
        .arg(&run_page)
        .output()
    {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(text.contains("tlslab-run"), "{text}");
            assert!(text.contains("--threshold"), "{text}");
        }
        _ => println!("skipped rendering: man is not installed here (the roff was checked)"),
    }
}

#[test]
fn the_long_version_names_the_commit_and_the_tls_libraries() {
    let text = stdout(&tlslab(&["--version"]));
    assert!(text.starts_with("tlslab 0."), "{text}");
    assert!(text.contains("(commit "), "{text}");
    // Each library with a version number after its name.
    for name in ["rustls", "aws-lc-rs", "aws-lc-sys", "OpenSSL"] {
        let version = text
            .split_once(&format!("{name} "))
            .and_then(|(_, rest)| rest.split([' ', ')', '\n']).next())
            .unwrap_or_default();
        assert!(
            version.split('.').count() >= 3
                && version
                    .split('.')
                    .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit())),
            "{name} has no version number: {text}"
        );
    }
    // The commit is the checkout's HEAD (a worktree's too, where `.git` is a file), or
    // "unknown" where the sources are not in git.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    assert!(
        text.contains(&format!("(commit {head})")),
        "HEAD {head}: {text}"
    );
}

#[test]
fn run_help_groups_its_flags_and_ends_with_examples() {
    let help = stdout(&tlslab(&["run", "--help"]));
    for heading in [
        "Matrix (",
        "Sessions:",
        "Transport and HTTP:",
        "Target (",
        "Network emulation:",
        "Plan and stopping:",
        "Output:",
        "Examples:",
    ] {
        assert!(help.contains(heading), "{heading} missing: {help}");
    }
    assert!(help.find("Matrix (").unwrap() < help.find("Examples:").unwrap());
}
