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

/// The help text of one option of `tlslab COMMAND --help`: its line and the lines that
/// continue it, whitespace made single.
fn option_help(help: &str, flag: &str) -> String {
    let mut lines = help
        .lines()
        .skip_while(|line| !line.trim_start().split([',', ' ']).any(|word| word == flag));
    let mut text: Vec<&str> = lines.next().into_iter().collect();
    // The option's own text continues on lines indented past the flags, up to the next
    // option or heading.
    text.extend(lines.take_while(|line| {
        let trimmed = line.trim_start();
        !trimmed.is_empty() && !trimmed.starts_with('-') && line.starts_with("  ")
    }));
    text.join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn run_help_shows_every_default_from_the_experiments_defaults() {
    let help = stdout(&tlslab(&["run", "--help"]));
    // The same values `--dump-experiment` writes for a run with no flags.
    let dumped = stdout(&tlslab(&["run", "--dump-experiment"]));
    for (flag, key) in [
        ("--tls", "tls"),
        ("--handshakes", "handshakes"),
        ("--concurrency", "concurrency"),
        ("--warmup", "warmup"),
        ("--timeout", "timeout"),
        ("--suite", "suite"),
        ("--group", "group"),
        ("--cert", "cert"),
        ("--backend", "backend"),
        ("--body", "body"),
    ] {
        let value = dumped
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} in {dumped}"))
            .trim_matches(['[', ']'])
            .replace(['"', ' '], "");
        let text = option_help(&help, flag);
        assert!(
            text.ends_with(&format!("[default: {value}]")),
            "{flag} should say [default: {value}]: {text}"
        );
    }
    assert!(option_help(&help, "--block").contains("[default: a tenth of -n"));
    // `tlslab load` says its own: a load tester's.
    let load = stdout(&tlslab(&["load", "--help"]));
    assert!(option_help(&load, "--http").ends_with("[default: 1.1]"));
    assert!(option_help(&load, "--keep-alive").ends_with("[default: on]"));
}

#[test]
fn bash_completes_the_values_of_dimension_flags() {
    let dir = scratch("value-completions");
    let script = dir.join("tlslab.bash");
    std::fs::write(&script, stdout(&tlslab(&["completions", "bash"]))).unwrap();
    let complete = |words: &[&str]| -> Vec<String> {
        let current = words.last().copied().unwrap_or_default();
        let previous = words[words.len() - 2];
        let line = words.join(" ");
        let output = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {} && COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; \
                 COMP_POINT={}; _tlslab tlslab '{current}' '{previous}'; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display(),
                words
                    .iter()
                    .map(|word| format!("'{word}'"))
                    .collect::<Vec<_>>()
                    .join(" "),
                words.len() - 1,
                line.len()
            ))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(String::from)
            .collect()
    };
    assert_eq!(complete(&["tlslab", "run", "--tls", ""]), ["1.2", "1.3"]);
    assert_eq!(complete(&["tlslab", "load", "--tls", ""]), ["1.2", "1.3"]);
    let certs = complete(&["tlslab", "run", "--cert", ""]);
    assert!(
        certs.contains(&"ecdsa-p256".to_string()) && certs.contains(&"mldsa65".to_string()),
        "{certs:?}"
    );
    assert_eq!(
        complete(&["tlslab", "run", "--group", "x25519m"]),
        ["x25519mlkem768"]
    );
    assert!(complete(&["tlslab", "run", "--suite", "chacha"]).contains(&"chacha20".to_string()));
    assert_eq!(
        complete(&["tlslab", "run", "--backend", ""]),
        ["rustls", "openssl"]
    );
    assert!(complete(&["tlslab", "serve", "--cert", "ed"]).contains(&"ed25519".to_string()));
    // zsh and fish get the same values (neither shell is needed to read the script).
    let zsh = stdout(&tlslab(&["completions", "zsh"]));
    assert!(zsh.contains(":TLS:(1.2 1.3)"), "zsh: {zsh}");
    let fish = stdout(&tlslab(&["completions", "fish"]));
    assert!(
        fish.lines()
            .any(|line| line.contains("-l group") && line.contains("x25519mlkem768")),
        "fish"
    );
    // Completion offers values; lists still parse, and core still judges them.
    assert!(
        tlslab_succeeds(&["run", "--tls", "1.2,1.3", "--dump-experiment"])
            .contains("tls = [\"1.2\", \"1.3\"]")
    );
    assert_user_error(&tlslab(&["run", "--tls", "1.4"]), 2, "unknown TLS version");
}

#[test]
fn the_man_pages_have_the_readmes_exit_status() {
    let page = stdout(&tlslab(&["man"]));
    let section = page
        .split_once(".SH \"EXIT STATUS\"")
        .map(|(_, rest)| rest.split(".SH ").next().unwrap_or(rest).to_string())
        .expect("an EXIT STATUS section");
    // The README's paragraph, as a reader sees it (no code marks).
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let paragraph = readme
        .split("\n\n")
        .find(|paragraph| paragraph.starts_with("Exit codes:"))
        .expect("the README's exit codes")
        .replace('`', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut codes = Vec::new();
    for entry in section.split(".TP\n").skip(1) {
        let (code, meaning) = entry
            .strip_prefix("\\fB")
            .and_then(|entry| entry.split_once("\\fR\n"))
            .expect("a code in bold, then its meaning");
        let meaning = meaning.replace("\\-", "-");
        // The README says, after the code, the meaning's first words.
        let start: String = meaning.split(" (").next().unwrap().trim().to_string();
        let start = start.split(';').next().unwrap().trim_end_matches('.');
        assert!(
            paragraph.contains(&format!("{code} {start}")),
            "the README's exit codes lack '{code} {start}': {paragraph}"
        );
        codes.push(code.to_string());
    }
    assert_eq!(codes, ["0", "1", "2", "3", "4", "130"]);
    // Every command's page has it too.
    let dir = scratch("man-exit");
    tlslab_succeeds(&["man", "--out", dir.to_str().unwrap()]);
    let run_page = std::fs::read_to_string(dir.join("tlslab-run.1")).unwrap();
    assert!(run_page.contains(".SH \"EXIT STATUS\""));
}

#[test]
fn a_swapped_letter_in_a_flag_suggests_the_flag_meant() {
    let output = tlslab(&["run", "--tsl", "1.2"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("'--tls'"), "{text}");
    assert!(!text.contains("--mtls"), "{text}");
    // Where clap's own tip is right, it stays.
    let text = stderr(&tlslab(&["run", "--handshake", "5"]));
    assert!(text.contains("'--handshakes'"), "{text}");
}
