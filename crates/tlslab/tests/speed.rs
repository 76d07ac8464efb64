//! `tlslab speed`: the price list of a handshake's primitives, on both backends, as a reader
//! would read it. Only orderings physics guarantees are asserted (an RSA private-key
//! operation against a public-key one, thousands of times apart at 2048 bits), never a time.

mod support;

use serde_json::Value;
use support::*;

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

fn find<'a>(rows: &'a [Value], backend: &str, primitive: &str, operation: &str) -> &'a Value {
    rows.iter()
        .find(|row| {
            row["backend"] == backend
                && row["primitive"] == primitive
                && row["operation"] == operation
        })
        .unwrap_or_else(|| panic!("no {backend} {primitive} {operation} row"))
}

#[test]
fn speed_json_prices_both_backends_and_says_what_a_backend_lacks() {
    let text = tlslab_succeeds(&[
        "speed",
        "rsa2048",
        "ed25519",
        "ed448",
        "ffdhe2048",
        "x25519mlkem768",
        "--seconds",
        "0.03",
        "--json",
    ]);
    let rows = lines(&text);
    for backend in ["rustls", "openssl"] {
        // CPU time, which other work on the machine does not stretch (about 14 times apart
        // at 2048 bits; the wall-clock rates are only asserted to exist).
        let cpu = |operation| {
            find(&rows, backend, "rsa2048", operation)["cpu_seconds_per_operation"]
                .as_f64()
                .unwrap()
        };
        let (sign, verify) = (cpu("sign"), cpu("verify"));
        assert!(
            sign > 3.0 * verify,
            "{backend}: sign {sign} s, verify {verify} s"
        );
        assert!(
            find(&rows, backend, "rsa2048", "verify")["per_second"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        for operation in ["sign", "verify"] {
            let row = find(&rows, backend, "ed25519", operation);
            assert_eq!(row["supported"], true, "{row}");
            assert!(row["per_second"].as_f64().unwrap() > 0.0, "{row}");
        }
        // The hybrid is the sum of its parts, said in its row.
        let hybrid = find(&rows, backend, "x25519mlkem768", "server_share");
        assert!(
            hybrid["note"]
                .as_str()
                .unwrap()
                .starts_with("sum of x25519 keygen"),
            "{hybrid}"
        );
        assert!(
            hybrid["cpu_seconds_per_operation"].as_f64().unwrap() > 0.0,
            "{hybrid}"
        );
        // Every row carries the machine and the build.
        assert!(find(&rows, backend, "rsa2048", "sign")["build"]
            .as_str()
            .unwrap()
            .contains("OpenSSL 4."));
    }
    // What aws-lc-rs lacks is a row that says so, not a missing row.
    for (primitive, operation, says) in
        [("ed448", "sign", "Ed448"), ("ffdhe2048", "derive", "FFDHE")]
    {
        let row = find(&rows, "rustls", primitive, operation);
        assert_eq!(row["supported"], false, "{row}");
        assert!(row["per_second"].is_null(), "{row}");
        assert!(row["note"].as_str().unwrap().contains(says), "{row}");
        assert_eq!(
            find(&rows, "openssl", primitive, operation)["supported"],
            true
        );
    }
    assert!(
        find(&rows, "openssl", "ed448", "verify")["per_second"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn speed_table_is_laid_out_as_openssl_speed_and_stored_for_export() {
    let dir = scratch("speed");
    let store = dir.join("speed.db");
    let store_text = store.to_str().unwrap();
    let text = tlslab_succeeds(&[
        "speed",
        "rsa512",
        "rsa2048",
        "aes128gcm",
        "--backend",
        "rustls,openssl",
        "--threads",
        "1,2",
        "--seconds",
        "0.02",
        "--out",
        store_text,
    ]);
    // openssl speed's columns, per backend and thread count.
    assert!(text.contains("\nrustls: aws-lc-rs 1."), "{text}");
    assert!(text.contains("\nopenssl: OpenSSL 4."), "{text}");
    assert!(text.contains("2 threads"), "{text}");
    let heading = text
        .lines()
        .find(|line| line.starts_with("signatures"))
        .unwrap();
    assert_eq!(
        heading.split_whitespace().collect::<Vec<_>>(),
        ["signatures", "sign", "verify", "sign/s", "verify/s"]
    );
    let rsa512: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("rsa 512 bits"))
        .collect();
    // Not in aws-lc-rs (at either thread count), measured by OpenSSL (at both).
    assert_eq!(rsa512.len(), 4, "{text}");
    assert_eq!(
        rsa512
            .iter()
            .filter(|line| line.contains("not measured: aws-lc-rs"))
            .count(),
        2,
        "{text}"
    );
    assert!(
        text.contains("TLS_AES_128_GCM_SHA256 16384 bytes"),
        "{text}"
    );
    assert!(text.contains("TLS_AES_128_GCM_SHA256 1024 bytes"), "{text}");
    assert!(text.contains("seal MB/s"), "{text}");

    // Stored with the machine, and exported as JSON Lines.
    assert_eq!(
        count(&store, "SELECT count(*) FROM speed WHERE cores >= 1"),
        2 * 2 * (2 + 2 + 2 * 2)
    );
    let exported = tlslab_succeeds(&["export", store_text, "--speed"]);
    let rows = lines(&exported);
    assert_eq!(rows.len(), 32);
    let openssl_verify = rows
        .iter()
        .find(|row| {
            row["backend"] == "openssl"
                && row["primitive"] == "rsa512"
                && row["operation"] == "verify"
                && row["threads"] == 2
        })
        .unwrap();
    assert!(openssl_verify["per_second"].as_f64().unwrap() > 0.0);
    assert!(!openssl_verify["cpu_model"].as_str().unwrap().is_empty());
}

#[test]
fn speed_refuses_what_cannot_work_with_a_hint() {
    let output = tlslab(&["speed", "rsa2049", "--seconds", "0.01"]);
    assert_user_error(&output, 2, "rsa2049: no such primitive");
    let output = tlslab(&["speed", "ed25519", "--seconds", "0"]);
    assert_user_error(&output, 2, "--seconds 0");
    // A database that cannot be reached: refused before measuring, exit 3.
    let unreachable = format!("postgres://lab@127.0.0.1:{}/tlslab", closed_port());
    let output = tlslab(&["speed", "ed25519", "--store", &unreachable]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot reach PostgreSQL"),
        "{}",
        stderr(&output)
    );
    assert!(
        stdout(&output).is_empty(),
        "nothing measured: {}",
        stdout(&output)
    );
}
