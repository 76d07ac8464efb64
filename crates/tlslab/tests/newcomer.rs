//! A newcomer's path without snags (issue 31): what the default summary shows without
//! `--verbose` (the phase that moved, ECH's status, the replay result), how it names
//! Configs (the user's labels whole, no row that repeats the shared words, `--backend` as
//! `backend`), `compare --baseline` taking the name the summary printed, page loads' real
//! transfer rate, and docs that cite only files the repository has.

mod support;

use std::path::{Path, PathBuf};

use support::*;

/// A run's summary text and its results file.
fn run(dir: &Path, name: &str, args: &[&str]) -> (String, PathBuf) {
    let db = dir.join(format!("{name}.db"));
    let mut all = args.to_vec();
    all.extend(["--warmup", "2", "--out", db.to_str().unwrap()]);
    let mut full = vec!["run"];
    full.extend(all);
    (tlslab_succeeds(&full), db)
}

#[test]
fn the_users_labels_are_shown_whole_and_backend_rows_are_named_by_their_library() {
    let dir = scratch("labels");
    // examples/ech.toml labels its Configs "without ECH" and "with ECH".
    let (text, db) = run(&dir, "ech", &[&example("ech.toml"), "-n", "20"]);
    assert!(!text.contains("all: ECH"), "{text}");
    let rows: Vec<&str> = text.lines().skip(1).take(2).collect();
    assert!(
        rows[0].starts_with("without ECH ") && rows[1].starts_with("with ECH "),
        "the table's rows: {text}"
    );
    assert!(text.contains("  with ECH [ech]: "), "{text}");
    // `compare --baseline` takes the label as printed.
    let compared = tlslab_succeeds(&["compare", db.to_str().unwrap(), "--baseline", "with ECH"]);
    assert!(compared.contains("baseline 'with ECH'"), "{compared}");

    // --backend sets both sides: the contrast is `backend`, and the rustls row (whose label
    // has no word the other lacks) is named by its library, not by the shared words again.
    let (text, db) = run(
        &dir,
        "backend",
        &["--backend", "rustls,openssl", "-n", "20"],
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], "all: tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1",
        "{text}"
    );
    assert!(lines[2].starts_with("rustls "), "{text}");
    assert!(lines[3].starts_with("openssl "), "{text}");
    assert!(text.contains("  openssl [backend]: "), "{text}");
    assert!(!text.contains("client-backend"), "{text}");
    // The summary's short names are what compare takes and prints too.
    let compared = tlslab_succeeds(&["compare", db.to_str().unwrap(), "--baseline", "openssl"]);
    assert!(compared.starts_with("all: tls1.3 aes128gcm"), "{compared}");
    assert!(compared.contains("baseline 'openssl'"), "{compared}");
    assert!(compared.contains("\n  rustls [backend]: "), "{compared}");
    let by = tlslab_succeeds(&["compare", db.to_str().unwrap(), "--by", "backend"]);
    assert!(by.contains("openssl vs rustls"), "{by}");
    // A name that is no Config's is still refused, listing the names.
    assert_user_error(
        &tlslab(&["compare", db.to_str().unwrap(), "--baseline", "boringssl"]),
        2,
        "'rustls', 'openssl'",
    );
}

#[test]
fn the_default_summary_names_the_phase_that_moved_and_the_ech_and_replay_results() {
    let dir = scratch("outcomes");
    let (text, _) = run(&dir, "versions", &["--tls", "1.2,1.3", "-n", "40"]);
    let line = text
        .lines()
        .find(|line| line.starts_with("most changed phase: "))
        .unwrap_or_else(|| panic!("no phase line: {text}"));
    assert!(
        line.ends_with("(tls1.3 vs tls1.2 [tls])") && (line.contains(" +") || line.contains(" -")),
        "{line}"
    );
    // One line, not the per-phase wall of --verbose.
    assert!(!text.contains("phases     "), "{text}");
    // Configs that cross dimensions: said by dimension, the others held, as the verdicts
    // are (never one Config against another that differs in two dimensions).
    let (text, _) = run(
        &dir,
        "crossed",
        &["--tls", "1.2,1.3", "-c", "1,2", "-n", "30"],
    );
    let line = text
        .lines()
        .find(|line| line.starts_with("most changed phase: "))
        .unwrap_or_else(|| panic!("no phase line: {text}"));
    assert!(
        line.ends_with(" vs 1.2 at concurrency 1)")
            || line.ends_with(" vs 1.2 at concurrency 2)")
            || line.ends_with("(concurrency 2 vs 1 at tls 1.2)")
            || line.ends_with("(concurrency 2 vs 1 at tls 1.3)"),
        "{line}"
    );

    let (text, _) = run(
        &dir,
        "ech",
        &["--backend", "openssl", "--ech", "off,on", "-n", "20"],
    );
    assert!(
        text.lines()
            .any(|line| line == "ech: 'ech' accepted 20 of 20 successful handshakes"),
        "{text}"
    );

    let (text, _) = run(
        &dir,
        "replay",
        &[
            "--resume",
            "tickets",
            "--early-data",
            "1024",
            "--http",
            "1.1",
            "--replay",
            "-n",
            "20",
        ],
    );
    let line = text
        .lines()
        .find(|line| line.starts_with("replay: "))
        .unwrap_or_else(|| panic!("no replay line: {text}"));
    assert!(
        line.contains("0-RTT flights re-sent: ") && line.ends_with(", 0 accepted"),
        "{line}"
    );
}

#[test]
fn page_loads_report_the_bytes_they_moved() {
    let dir = scratch("page-rate");
    let db = dir.join("page.db");
    let text = tlslab_succeeds(&[
        "load",
        "--page",
        "4:30KB",
        "--http",
        "1.1,2",
        "-n",
        "10",
        "--warmup",
        "2",
        "--out",
        db.to_str().unwrap(),
    ]);
    for line in text
        .lines()
        .filter(|line| line.trim_start().starts_with("rate "))
    {
        assert!(!line.ends_with(" 0.0 KiB/s"), "{line}");
    }
    // Every page's bytes on the wire: its bodies, their headers and TLS records.
    assert_eq!(
        count_samples(
            &db,
            "s.warmup = 0 AND s.response_wire_bytes > s.response_bytes \
             AND s.response_bytes >= 4 * 30000"
        ),
        20,
        "{text}"
    );
    let ab = tlslab_succeeds(&[
        "load",
        "--page",
        "4:30KB",
        "-n",
        "5",
        "--warmup",
        "1",
        "--format",
        "ab",
        "--out",
        dir.join("ab.db").to_str().unwrap(),
    ]);
    let rate = ab
        .lines()
        .find_map(|line| line.strip_prefix("Transfer rate:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no transfer rate: {ab}"));
    assert!(rate > 0.0, "{ab}");
}

/// Every file a Markdown file, an example or the README cites: a Markdown file by name
/// (`docs/studies.md`, `STUDIES.md`), a path in one of the repository's top directories
/// (`examples/ech.toml`, `@examples/page.txt`, `crates/tlslab-capture/src/samples.rs`), or a
/// crate's path (`tlslab-backend/src/server_socket.rs`). A module named alone (`routes.rs`)
/// is its crate's, said beside it.
fn cited_paths(text: &str) -> Vec<String> {
    const TOPS: [&str; 7] = [
        "docs/",
        "examples/",
        "crates/",
        "scripts/",
        "bench/",
        "fuzz/",
        "tools/",
    ];
    text.split(|c: char| c.is_whitespace() || "`'\"()[]<>,;:|".contains(c))
        .map(|word| word.trim_start_matches('@').trim_end_matches(['.', '*']))
        .filter(|word| {
            !word.is_empty()
                && !word.contains("://")
                && (word.ends_with(".md")
                    || TOPS.iter().any(|top| word.starts_with(top))
                    || (word.starts_with("tlslab-")
                        && ["/src/", "/tests/", "/examples/"]
                            .iter()
                            .any(|part| word.contains(part))))
        })
        .map(String::from)
        .collect()
}

#[test]
fn docs_examples_and_the_readme_cite_only_files_the_repository_has() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    for directory in ["docs", "examples"] {
        for entry in std::fs::read_dir(root.join(directory)).unwrap() {
            let path = entry.unwrap().path();
            let text_file = path
                .extension()
                .is_some_and(|extension| extension == "md" || extension == "toml");
            if text_file {
                files.push(path);
            }
        }
    }
    // Names a user writes for their own files, which the text offers as examples.
    let theirs = [
        "experiment.toml",
        "report.md",
        "nginx.conf",
        "RESULTS.md",
        "Cargo.toml",
    ];
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let directory = file.parent().unwrap();
        for cited in cited_paths(&text) {
            if theirs.iter().any(|name| cited.ends_with(name)) {
                continue;
            }
            // A path is the repository's, or (in docs/) relative to its own file; a glob
            // or a directory names one that exists.
            let bare = cited.trim_end_matches('/');
            let exists = |base: &Path| {
                let path = base.join(bare);
                path.exists()
                    || (bare.contains('*') && path.parent().is_some_and(|parent| parent.is_dir()))
            };
            if !(exists(&root) || exists(directory) || exists(&root.join("crates"))) {
                missing.push(format!(
                    "{}: {cited}",
                    file.strip_prefix(&root).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files cited that the repository lacks:\n{}",
        missing.join("\n")
    );
    // And the studies our examples reproduce are the project's own page.
    let studies = std::fs::read_to_string(root.join("docs/studies.md")).unwrap();
    for example in [
        "ech.toml",
        "cipher-cert-matrix.toml",
        "rtt-sweep.toml",
        "tcp-vs-quic.toml",
        "session-techniques.toml",
        "tls12-vs-tls13.toml",
        "explicit-configs.toml",
    ] {
        assert!(
            studies.contains(&format!("examples/{example}")),
            "{example}"
        );
        let text = std::fs::read_to_string(root.join("examples").join(example)).unwrap();
        assert!(
            text.contains("docs/studies.md"),
            "{example} cites its study"
        );
    }
}

#[test]
fn the_readme_names_every_field_export_writes() {
    let dir = scratch("newcomer-export-fields");
    let (_, db) = run(&dir, "fields", &["-n", "2"]);
    let csv = tlslab_succeeds(&["export", db.to_str().unwrap(), "--format", "csv"]);
    let header = csv.lines().next().unwrap();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let section = readme
        .split_once("## Export fields")
        .and_then(|(_, rest)| rest.split_once("\n## "))
        .map(|(section, _)| section)
        .expect("the README's Export fields section");
    // Each column, as the README writes a field: in code marks.
    let missing: Vec<&str> = header
        .split(',')
        .filter(|field| !section.contains(&format!("`{field}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "the README's Export fields lack {missing:?}"
    );
}
