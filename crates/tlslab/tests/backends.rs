//! End to end: the rustls and OpenSSL backends against each other's lab servers, Encrypted
//! ClientHello, post-quantum key exchange and ML-DSA certificates, legacy TLS 1.2 suites.

mod support;

use support::*;

#[test]
fn ech_is_accepted_on_every_sample_and_compared_with_the_studys_statistics() {
    let dir = scratch("backend-ech");
    let Finished { db, summary, .. } = Run::new(&dir, "ech")
        .args("--backend openssl --ech on,off -n 100 --verbose")
        .succeeds();
    assert_eq!(
        count_samples(
            &db,
            "c.ech = 'on' AND s.warmup = 0 AND s.outcome = 'ok' AND s.ech = 'accepted'"
        ),
        100,
        "{summary}"
    );
    assert_eq!(
        count_samples(
            &db,
            "c.ech = 'off' AND s.warmup = 0 AND s.outcome = 'ok' AND s.ech = 'not_offered'"
        ),
        100
    );
    // The comparison carries the three statistics of the ECH study.
    for statistic in ["Mann-Whitney U", "rank-biserial", "95% CI"] {
        assert!(summary.contains(statistic), "no {statistic} in:\n{summary}");
    }
    assert!(summary.contains("ech        accepted 100"), "{summary}");
    // The encrypted inner ClientHello travels inside the outer one.
    let client_hello = |label_like| {
        median(values_of(
            &db,
            "client_hello_bytes",
            label_like,
            Samples::All,
        ))
    };
    assert!(
        client_hello("% ech") > client_hello("% openssl"),
        "{summary}"
    );
}

#[test]
fn the_rustls_client_gets_ech_accepted_by_the_openssl_server_and_greases_everywhere() {
    let dir = scratch("backend-rustls-ech");
    let Finished { db, summary, .. } = Run::new(&dir, "rustls-ech")
        .args("--client-backend rustls,openssl --server-backend openssl --ech on,grease -n 20")
        .succeeds();
    for (client, mode, status) in [
        ("rustls", "on", "accepted"),
        ("rustls", "grease", "grease"),
        ("openssl", "on", "accepted"),
        ("openssl", "grease", "grease"),
    ] {
        assert_eq!(
            count_samples(&db, &format!("c.client_backend = '{client}' AND c.ech = '{mode}' AND s.warmup = 0 AND s.outcome = 'ok' AND s.ech = '{status}'")),
            20,
            "{client} {mode}: {summary}"
        );
    }
}

#[test]
fn post_quantum_key_exchange_is_negotiated_on_both_backends_with_a_large_client_hello() {
    let dir = scratch("backend-pq");
    let Finished { db, summary, .. } = Run::new(&dir, "pq")
        .args("--client-backend rustls,openssl --server-backend rustls,openssl")
        .args("--group x25519,x25519mlkem768 -n 20")
        .succeeds();
    assert_eq!(
        count_samples(&db, "s.outcome = 'ok' AND s.\"group\" = c.\"group\""),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "every handshake succeeds and stores the group it negotiated: {summary}"
    );
    let client_hello = |label_like: String| {
        median(values_of(
            &db,
            "client_hello_bytes",
            &label_like,
            Samples::All,
        ))
    };
    for client in ["rustls", "openssl"] {
        let hybrid = client_hello(format!("%x25519mlkem768% {client}/%"));
        let classic = client_hello(format!("%x25519 % {client}/%"));
        // ML-KEM-768's encapsulation key alone is 1,184 bytes.
        assert!(hybrid > 1100, "{client}: {hybrid}");
        assert!(classic < 400, "{client}: {classic}");
    }
}

#[test]
fn ml_dsa_certificates_are_served_and_verified_by_both_backends() {
    let dir = scratch("backend-mldsa");
    let Finished { db, summary, .. } = Run::new(&dir, "mldsa")
        .args("--client-backend rustls,openssl --server-backend rustls,openssl")
        .args("--cert mldsa65 -n 10")
        .succeeds();
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
        median(values_of(&db, "server_flight_bytes", "%", Samples::All)) > 5000,
        "{summary}"
    );
}

#[test]
fn every_client_backend_interoperates_with_every_server_backend() {
    let dir = scratch("backend-interop");
    let Finished { db, summary, .. } = Run::new(&dir, "interop")
        .args("--client-backend rustls,openssl --server-backend rustls,openssl --tls 1.2,1.3")
        .args("--suite aes128gcm,aes256gcm,chacha20")
        .args("--group x25519,secp256r1,secp384r1,secp256r1mlkem768,mlkem768,mlkem1024")
        .args("--cert ecdsa-p256,rsa2048 --skip-invalid -n 3 --warmup 0")
        .succeeds();
    // 4 pairs × (TLS 1.2: 3 suites × 3 groups + TLS 1.3: 3 suites × 6 groups) × 2 certificates.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM configs"), 4 * (9 + 18) * 2);
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE outcome != 'ok'"),
        0,
        "{summary}"
    );
    // What was negotiated is what the Config asked for, whichever library answered.
    assert_eq!(
        count_samples(&db, "s.version IS NOT c.version OR s.\"group\" IS NOT c.\"group\" OR (c.version = '1.3' AND s.suite NOT LIKE '%' || upper(replace(replace(replace(c.suite, 'aes128gcm', 'AES_128_GCM'), 'aes256gcm', 'AES_256_GCM'), 'chacha20', 'CHACHA20_POLY1305')) || '%') OR (c.version = '1.2' AND s.suite NOT LIKE CASE c.cert WHEN 'rsa2048' THEN 'TLS_ECDHE_RSA_%' ELSE 'TLS_ECDHE_ECDSA_%' END)"),
        0
    );
}

#[test]
fn legacy_tls12_suites_and_finite_field_groups_run_on_openssl_and_are_labelled_legacy() {
    let dir = scratch("backend-legacy");
    let Finished { db, summary, .. } = Run::new(&dir, "legacy")
        .args("--backend openssl --tls 1.2 --cert rsa2048")
        .args("--suite ECDHE-RSA-AES128-SHA,DHE-RSA-AES128-GCM-SHA256,AES256-GCM-SHA384")
        .args("--group x25519,secp256r1,ffdhe2048,ffdhe3072 --skip-invalid -n 5")
        .succeeds();
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
        count_samples(&db, "s.outcome = 'ok' AND s.suite = c.suite"),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "{summary}"
    );
    for group in ["ffdhe2048", "ffdhe3072"] {
        assert_eq!(
            count_samples(
                &db,
                &format!("c.\"group\" = '{group}' AND s.\"group\" = '{group}'")
            ),
            count_samples(&db, &format!("c.\"group\" = '{group}'")),
            "the DHE suite agrees on keys over {group}"
        );
    }
}

#[test]
fn what_a_backend_lacks_is_a_usage_error_that_names_the_fix() {
    for (args, mentions) in [
        ("--ech on", "--server-backend openssl"),
        (
            "--tls 1.2 --cert rsa2048 --suite AES256-GCM-SHA384",
            "--client-backend openssl",
        ),
        ("--backend openssl --transport quic", "QUIC runs on rustls"),
        ("--target 127.0.0.1:1 --ech on", "--ech-config"),
        ("--backend boringssl", "openssl"),
    ] {
        let mut full = vec!["run"];
        full.extend(args.split_whitespace());
        full.extend(["-n", "1"]);
        assert_user_error(&tlslab(&full), 2, mentions);
    }
}

#[test]
fn the_ech_example_runs_both_arms_and_compares_them() {
    let dir = scratch("example-ech");
    let Finished { db, summary, .. } = Run::new(&dir, "ech-example")
        .arg(example("ech.toml"))
        .arg("--verbose")
        .succeeds();
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND outcome = 'ok'"
        ),
        200,
        "{summary}"
    );
    assert_eq!(
        count_samples(
            &db,
            "c.label = 'with ECH' AND s.warmup = 0 AND s.ech = 'accepted'"
        ),
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
        tlslab_succeeds(&["run", &example(file), "--dump-experiment"]);
        // One label for the whole matrix is refused with the matrix's size.
        let output = tlslab(&["run", &example(file), "--label", "one"]);
        assert_user_error(&output, 2, &format!("1 labels given for {configs} configs"));
    }
}

#[test]
fn every_backend_pair_resumes_sends_0rtt_and_refuses_its_replays() {
    let dir = scratch("backend-sessions");
    let every_pair = "--client-backend rustls,openssl --server-backend rustls,openssl";
    let Finished { db, summary, .. } = Run::new(&dir, "resume")
        .args(every_pair)
        .args("--tls 1.2,1.3 --resume tickets,session-id --http 1.1,2 -n 10 --warmup 0")
        .succeeds();
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

    let Finished { db, summary, .. } = Run::new(&dir, "zero-rtt")
        .args(every_pair)
        .args("--resume tickets --early-data 512 --replay -n 40 --warmup 0")
        .succeeds();
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
    require_emulation!();
    let dir = scratch("backend-flight");
    // A 20 kB ML-DSA chain over a slow link arrives in many reads; OpenSSL verifies the
    // chain as soon as the Certificate message is in, rustls after CertificateVerify.
    let Finished { db, summary, .. } = Run::new(&dir, "flight")
        .args("--client-backend rustls,openssl --server-backend openssl")
        .args("--cert mldsa65 --chain 3 --rtt 10ms --bandwidth 20mbit -n 5 --warmup 1")
        .succeeds();
    let server_flight = |label_like| {
        median(values_of(
            &db,
            "server_flight_bytes",
            label_like,
            Samples::All,
        ))
    };
    let rustls = server_flight("% rustls/openssl %");
    let openssl = server_flight("% openssl %");
    assert!(rustls > 15_000, "{summary}");
    assert_eq!(rustls, openssl, "{summary}");
}
