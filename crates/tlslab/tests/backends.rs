//! End to end: the rustls and OpenSSL backends against each other's lab servers, Encrypted
//! ClientHello, post-quantum key exchange and ML-DSA certificates, legacy TLS 1.2 suites.

mod common;

use common::*;

fn count(db: &std::path::Path, sql: &str) -> i64 {
    open(db).query_row(sql, [], |row| row.get(0)).unwrap()
}

/// Median of an integer sample column over the successful samples of Configs whose label
/// matches `label_like`.
fn median_of(db: &std::path::Path, column: &str, label_like: &str) -> i64 {
    let connection = open(db);
    let mut statement = connection
        .prepare(&format!(
            "SELECT s.{column} FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.label LIKE ?1 AND s.outcome = 'ok' AND s.{column} IS NOT NULL ORDER BY s.{column}"
        ))
        .unwrap();
    let values: Vec<i64> = statement
        .query_map([label_like], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!values.is_empty(), "no {column} for '{label_like}'");
    values[values.len() / 2]
}

fn run(dir: &std::path::Path, name: &str, args: &[&str]) -> (std::path::PathBuf, String) {
    let db = dir.join(format!("{name}.db"));
    let mut all = vec!["run", "--quiet", "--out", db.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = tlslab(&all);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&output),
        stderr(&output)
    );
    (db, stdout(&output))
}

#[test]
fn ech_is_accepted_on_every_sample_and_compared_with_the_studys_statistics() {
    let dir = scratch("backend-ech");
    let (db, summary) = run(
        &dir,
        "ech",
        &["--backend", "openssl", "--ech", "on,off", "-n", "100"],
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.ech = 'on' AND s.warmup = 0 AND s.outcome = 'ok' AND s.ech = 'accepted'"),
        100,
        "{summary}"
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.ech = 'off' AND s.warmup = 0 AND s.outcome = 'ok' AND s.ech = 'not_offered'"),
        100
    );
    // The comparison carries the three statistics of the ECH study.
    for statistic in ["Mann-Whitney U", "rank-biserial", "95% CI"] {
        assert!(summary.contains(statistic), "no {statistic} in:\n{summary}");
    }
    assert!(summary.contains("ech        accepted 100"), "{summary}");
    // The encrypted inner ClientHello travels inside the outer one.
    assert!(
        median_of(&db, "client_hello_bytes", "% ech")
            > median_of(&db, "client_hello_bytes", "% openssl"),
        "{summary}"
    );
}

#[test]
fn the_rustls_client_gets_ech_accepted_by_the_openssl_server_and_greases_everywhere() {
    let dir = scratch("backend-rustls-ech");
    let (db, summary) = run(
        &dir,
        "rustls-ech",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "openssl",
            "--ech",
            "on,grease",
            "-n",
            "20",
        ],
    );
    for (client, mode, status) in [
        ("rustls", "on", "accepted"),
        ("rustls", "grease", "grease"),
        ("openssl", "on", "accepted"),
        ("openssl", "grease", "grease"),
    ] {
        assert_eq!(
            count(&db, &format!("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.client_backend = '{client}' AND c.ech = '{mode}' AND s.warmup = 0 AND s.outcome = 'ok' AND s.ech = '{status}'")),
            20,
            "{client} {mode}: {summary}"
        );
    }
}

#[test]
fn post_quantum_key_exchange_is_negotiated_on_both_backends_with_a_large_client_hello() {
    let dir = scratch("backend-pq");
    let (db, summary) = run(
        &dir,
        "pq",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "rustls,openssl",
            "--group",
            "x25519,x25519mlkem768",
            "-n",
            "20",
        ],
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.outcome = 'ok' AND s.\"group\" = c.\"group\""),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "every handshake succeeds and stores the group it negotiated: {summary}"
    );
    for client in ["rustls", "openssl"] {
        let hybrid = median_of(
            &db,
            "client_hello_bytes",
            &format!("%x25519mlkem768% {client}/%"),
        );
        let classic = median_of(&db, "client_hello_bytes", &format!("%x25519 % {client}/%"));
        // ML-KEM-768's encapsulation key alone is 1,184 bytes.
        assert!(hybrid > 1100, "{client}: {hybrid}");
        assert!(classic < 400, "{client}: {classic}");
    }
}

#[test]
fn ml_dsa_certificates_are_served_and_verified_by_both_backends() {
    let dir = scratch("backend-mldsa");
    let (db, summary) = run(
        &dir,
        "mldsa",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "rustls,openssl",
            "--cert",
            "mldsa65",
            "-n",
            "10",
        ],
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE outcome = 'ok' AND signature_scheme = 'ML_DSA_65' AND cert_verify_end > cert_verify_start"),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "{summary}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(DISTINCT client_backend || server_backend) FROM configs"
        ),
        4
    );
    // An ML-DSA-65 certificate carries a 1,952-byte key and a 3,309-byte signature.
    assert!(
        median_of(&db, "server_flight_bytes", "%") > 5000,
        "{summary}"
    );
}

#[test]
fn every_client_backend_interoperates_with_every_server_backend() {
    let dir = scratch("backend-interop");
    let (db, summary) = run(
        &dir,
        "interop",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "rustls,openssl",
            "--tls",
            "1.2,1.3",
            "--suite",
            "aes128gcm,aes256gcm,chacha20",
            "--group",
            "x25519,secp256r1,secp384r1,secp256r1mlkem768,mlkem768,mlkem1024",
            "--cert",
            "ecdsa-p256,rsa2048",
            "--skip-invalid",
            "-n",
            "3",
            "--warmup",
            "0",
        ],
    );
    // 4 pairs × (TLS 1.2: 3 suites × 3 groups + TLS 1.3: 3 suites × 6 groups) × 2 certificates.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM configs"), 4 * (9 + 18) * 2);
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE outcome != 'ok'"),
        0,
        "{summary}"
    );
    // What was negotiated is what the Config asked for, whichever library answered.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.version IS NOT c.version OR s.\"group\" IS NOT c.\"group\" OR (c.version = '1.3' AND s.suite NOT LIKE '%' || upper(replace(replace(replace(c.suite, 'aes128gcm', 'AES_128_GCM'), 'aes256gcm', 'AES_256_GCM'), 'chacha20', 'CHACHA20_POLY1305')) || '%') OR (c.version = '1.2' AND s.suite NOT LIKE CASE c.cert WHEN 'rsa2048' THEN 'TLS_ECDHE_RSA_%' ELSE 'TLS_ECDHE_ECDSA_%' END)"),
        0
    );
}

#[test]
fn legacy_tls12_suites_and_finite_field_groups_run_on_openssl_and_are_labelled_legacy() {
    let dir = scratch("backend-legacy");
    let (db, summary) = run(
        &dir,
        "legacy",
        &[
            "--backend",
            "openssl",
            "--tls",
            "1.2",
            "--cert",
            "rsa2048",
            "--suite",
            "ECDHE-RSA-AES128-SHA,DHE-RSA-AES128-GCM-SHA256,AES256-GCM-SHA384",
            "--group",
            "x25519,secp256r1,ffdhe2048,ffdhe3072",
            "--skip-invalid",
            "-n",
            "5",
        ],
    );
    // ECDHE-CBC with both curves, DHE with both ffdhe groups, RSA key transport once (it
    // agrees on no group).
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM configs WHERE label LIKE '% legacy %'"
        ),
        5,
        "{summary}"
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.outcome = 'ok' AND s.suite = c.suite"),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "{summary}"
    );
    for group in ["ffdhe2048", "ffdhe3072"] {
        assert_eq!(
            count(&db, &format!("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.\"group\" = '{group}' AND s.\"group\" = '{group}'")),
            count(&db, &format!("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.\"group\" = '{group}'")),
            "the DHE suite agrees on keys over {group}"
        );
    }
}

#[test]
fn what_a_backend_lacks_is_a_usage_error_that_names_the_fix() {
    let output = tlslab(&["run", "--ech", "on", "-n", "1"]);
    assert_user_error(&output, 2, "--server-backend openssl");
    let output = tlslab(&[
        "run",
        "--tls",
        "1.2",
        "--cert",
        "rsa2048",
        "--suite",
        "AES256-GCM-SHA384",
        "-n",
        "1",
    ]);
    assert_user_error(&output, 2, "--client-backend openssl");
    let output = tlslab(&[
        "run",
        "--backend",
        "openssl",
        "--transport",
        "quic",
        "-n",
        "1",
    ]);
    assert_user_error(&output, 2, "QUIC runs on rustls");
    let output = tlslab(&["run", "--target", "127.0.0.1:1", "--ech", "on", "-n", "1"]);
    assert_user_error(&output, 2, "--ech-config");
    let output = tlslab(&["run", "--backend", "boringssl", "-n", "1"]);
    assert_user_error(&output, 2, "openssl");
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_ech_example_runs_both_arms_and_compares_them() {
    let dir = scratch("example-ech");
    let (db, summary) = run(&dir, "ech-example", &[&example("ech.toml")]);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND outcome = 'ok'"
        ),
        200,
        "{summary}"
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.label = 'with ECH' AND s.warmup = 0 AND s.ech = 'accepted'"),
        100
    );
    assert!(
        summary.contains("against baseline 'without ECH'") && summary.contains("rank-biserial"),
        "{summary}"
    );
}

#[test]
fn the_study_examples_expand_to_their_matrices() {
    // (file, Configs): the cipher/certificate matrix keeps 7 per round trip; the TLS 1.2 vs
    // 1.3 study crosses three suites, two versions and three agent counts.
    for (file, configs) in [("cipher-cert-matrix.toml", 21), ("tls12-vs-tls13.toml", 18)] {
        let output = tlslab(&["run", &example(file), "--dump-experiment"]);
        assert_eq!(output.status.code(), Some(0), "{file}: {}", stderr(&output));
        // One label for the whole matrix is refused with the matrix's size.
        let output = tlslab(&["run", &example(file), "--label", "one"]);
        assert_user_error(&output, 2, &format!("1 labels given for {configs} configs"));
    }
}

#[test]
fn every_backend_pair_resumes_sends_0rtt_and_refuses_its_replays() {
    let dir = scratch("backend-sessions");
    let (db, summary) = run(
        &dir,
        "resume",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "rustls,openssl",
            "--tls",
            "1.2,1.3",
            "--resume",
            "tickets,session-id",
            "--http",
            "1.1,2",
            "-n",
            "10",
            "--warmup",
            "0",
        ],
    );
    // 4 pairs × 2 versions × 2 modes × 2 HTTP versions, one agent each: every handshake after
    // the agent's first resumes, and every request is answered.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM configs"), 32);
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE resumed = 1"),
        32 * 9,
        "{summary}"
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE http_status IS NOT 200 OR response_bytes IS NOT 1024"),
        0
    );

    let (db, summary) = run(
        &dir,
        "zero-rtt",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "rustls,openssl",
            "--resume",
            "tickets",
            "--early-data",
            "512",
            "--replay",
            "-n",
            "40",
            "--warmup",
            "0",
        ],
    );
    // Each Config's first handshake is full; the other 39 carry the request as early data.
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM samples WHERE early_data_accepted = 1 AND http_status = 200"
        ),
        4 * 39,
        "{summary}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM replays WHERE sent >= 30 AND rejected = sent AND accepted = 0"
        ),
        4,
        "{summary}"
    );
}

#[test]
fn both_clients_measure_the_same_server_flight_when_it_spans_many_packets() {
    if let Some(reason) = emulation_unavailable() {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let dir = scratch("backend-flight");
    // A 20 kB ML-DSA chain over a slow link arrives in many reads; OpenSSL verifies the
    // chain as soon as the Certificate message is in, rustls after CertificateVerify.
    let (db, summary) = run(
        &dir,
        "flight",
        &[
            "--client-backend",
            "rustls,openssl",
            "--server-backend",
            "openssl",
            "--cert",
            "mldsa65",
            "--chain",
            "3",
            "--rtt",
            "10ms",
            "--rate",
            "20mbit",
            "-n",
            "5",
            "--warmup",
            "1",
        ],
    );
    let rustls = median_of(&db, "server_flight_bytes", "% rustls/openssl %");
    let openssl = median_of(&db, "server_flight_bytes", "% openssl %");
    assert!(rustls > 15_000, "{summary}");
    assert_eq!(rustls, openssl, "{summary}");
}
