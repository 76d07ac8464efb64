//! Every bad input in `tests/data/bad_inputs.tsv` (flags, experiment files, stores, sample
//! files, outputs, server options) gets its documented exit code, an `error:` line and a
//! `hint:` line, and never a panic. The table of what each printed is written to
//! `$CARGO_TARGET_TMPDIR/bad_inputs.md`, which `scripts/reliability` puts into
//! `docs/reliability.md`.

mod support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::Path;

use support::*;

const CASES: &str = include_str!("data/bad_inputs.tsv");

/// The files and values the cases name in braces, made fresh in `dir`.
fn fixtures(dir: &Path) -> HashMap<&'static str, String> {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let write = |name: &str, contents: &[u8]| {
        std::fs::write(dir.join(name), contents).unwrap();
        path(name)
    };
    let store = Run::new(dir, "store")
        .args("--tls 1.2,1.3 -n 10 --warmup 0")
        .succeeds()
        .db;
    let other = Run::new(dir, "other")
        .args("--tls 1.2,1.3 -n 5 --warmup 0")
        .succeeds()
        .db;
    let one_config = Run::new(dir, "one").args("-n 5 --warmup 0").succeeds().db;
    std::os::unix::fs::symlink(&store, dir.join("link.db")).unwrap();
    let future = dir.join("future.db");
    std::fs::copy(&store, &future).unwrap();
    rusqlite::Connection::open(&future)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let sqlite_other = dir.join("other-program.db");
    rusqlite::Connection::open(&sqlite_other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hi');")
        .unwrap();
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    // A lab certificate and another profile's key: a client certificate pair that does not
    // belong together (copied here, so the table shows DIR paths, not the cache's).
    let lab_file = |cert: &str, name: &str, copy: &str| {
        let source = stdout(&tlslab(&["pki", "--cert", cert]))
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")).map(String::from))
            .unwrap();
        write(copy, &std::fs::read(source).unwrap())
    };
    HashMap::from([
        (
            "lab_chain",
            lab_file("ecdsa-p256", "chain", "lab-chain.pem"),
        ),
        ("other_key", lab_file("rsa-2048", "key", "other.key")),
        ("dir", dir.to_str().unwrap().to_string()),
        ("missing", path("missing.toml")),
        ("garbage", write("garbage.bin", &garbage)),
        ("text", write("text.txt", b"hello, world\n")),
        ("invalid_toml", write("invalid.toml", b"tls = [")),
        ("unknown_key", write("unknown.toml", b"handshake = 5\n")),
        ("wrong_type", write("type.toml", b"handshakes = \"many\"\n")),
        (
            "huge_numbers",
            write("huge.toml", b"handshakes = 99999999999999999999\n"),
        ),
        (
            "bad_duration_file",
            write("duration.toml", b"timeout = \"5h\"\n"),
        ),
        (
            "bare_duration_file",
            write("bare.toml", b"timeout = \"30\"\n"),
        ),
        ("empty_list", write("empty-list.toml", b"tls = []\n")),
        (
            "run_level_in_config_table",
            write("config-table.toml", b"[[config]]\nhandshakes = 5\n"),
        ),
        (
            "label_for_a_crossed_table",
            write(
                "config-label.toml",
                b"[[config]]\ntls = [\"1.2\", \"1.3\"]\nlabel = \"both\"\n",
            ),
        ),
        ("store", store.to_str().unwrap().to_string()),
        ("other_store", other.to_str().unwrap().to_string()),
        ("store_link", path("link.db")),
        ("one_config_store", one_config.to_str().unwrap().to_string()),
        ("sqlite_other", sqlite_other.to_str().unwrap().to_string()),
        ("future_store", future.to_str().unwrap().to_string()),
        ("empty_file", write("empty.csv", b"")),
        ("csv_a", write("a.csv", b"value\n1\n2\n3\n")),
        ("csv_b", write("b.csv", b"value\n4\n5\n6\n")),
        ("one_value", write("one.csv", b"1\n")),
        ("not_numbers", write("words.csv", b"a\nb\nc\n")),
        ("two_columns", write("two.csv", b"1,2\n3,4\n")),
        ("infinite", write("infinite.csv", b"1\ninf\n")),
    ])
}

/// `argument` with every `{name}` replaced by its fixture.
fn expand(argument: &str, fixtures: &HashMap<&'static str, String>) -> String {
    let mut expanded = argument.to_string();
    for (name, value) in fixtures {
        expanded = expanded.replace(&format!("{{{name}}}"), value);
    }
    expanded
}

#[test]
fn every_bad_input_gets_its_exit_code_an_error_and_a_hint() {
    let dir = scratch("bad-inputs");
    let mut fixtures = fixtures(&dir);
    // A port something else holds.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    fixtures.insert("busy_port", busy.local_addr().unwrap().port().to_string());
    fixtures.insert("closed_port", closed_port().to_string());

    let mut table = String::new();
    let mut wrong = Vec::new();
    let cases = CASES
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty());
    for (number, case) in cases.enumerate() {
        let mut fields = case.split('\t');
        let expected: i32 = fields.next().unwrap().parse().unwrap();
        let arguments: Vec<String> = fields.map(|field| expand(field, &fixtures)).collect();
        let typed: Vec<&str> = arguments.iter().map(String::as_str).collect();
        // `tlslab` itself fails the test on any panic.
        let output = tlslab(&typed);
        let text = stderr(&output);
        let code = output.status.code();
        let shaped = text.starts_with("error: ") && text.contains("\nhint: ");
        if code != Some(expected) || !shaped {
            wrong.push(format!(
                "case {} `{}`: exit {code:?} (expected {expected}): {text}",
                number + 1,
                case.replace('\t', " ")
            ));
        }
        let line = |prefix: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(prefix))
                .unwrap_or_default()
                .to_string()
        };
        // The error with its causes, as a reader needs them (`caused by:` lines joined).
        let error = std::iter::once(line("error: "))
            .chain(
                text.lines()
                    .filter_map(|line| line.strip_prefix("caused by: "))
                    .map(str::to_string),
            )
            .collect::<Vec<_>>()
            .join(" ← ");
        let shown = |text: &str| {
            text.replace(dir.to_str().unwrap(), "DIR")
                .replace('|', "\\|")
        };
        let _ = writeln!(
            table,
            "| {} | `tlslab {}` | {} | {} | {} |",
            number + 1,
            shown(&case.split('\t').skip(1).collect::<Vec<_>>().join(" ")),
            code.map_or("signal".into(), |code| code.to_string()),
            shown(&error),
            shown(&line("hint: "))
        );
    }
    std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad_inputs.md"),
        table,
    )
    .unwrap();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
