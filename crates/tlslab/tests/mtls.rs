//! End to end: mutual TLS with the lab server (`--mtls off,on`) on both libraries, what each
//! sample stores of it, and what it costs.

mod support;

use support::*;

/// A server library, its Config's `mtls`, `client_cert_profile`, the samples'
/// `client_certificate`, and how many samples say so.
type Status = (String, i64, Option<String>, Option<String>, i64);

#[test]
fn a_lab_server_that_requires_client_certificates_gets_the_labs_and_costs_more() {
    let dir = scratch("mtls");
    let Finished { db, summary, .. } = Run::new(&dir, "mtls")
        .args("--mtls off,on --backend rustls,openssl -n 200")
        .succeeds();
    let all = count(&db, "SELECT COUNT(*) FROM samples");
    assert_eq!(
        count_samples(&db, "s.outcome = 'ok'"),
        all,
        "every attempt succeeds: {summary}"
    );
    // Warm-up samples too: the server asks on every full handshake, and the client answers.
    let statuses: Vec<Status> = rows(
        &db,
        "SELECT c.server_backend, c.mtls, c.client_cert_profile, s.client_certificate, COUNT(*) \
         FROM samples s JOIN configs c ON c.id = s.config_id GROUP BY 1, 2, 3, 4 ORDER BY 1, 2",
        [],
    );
    let expected = |backend: &str, mtls: i64| {
        let (profile, status) = match mtls {
            0 => (None, "not-asked"),
            _ => (Some("ecdsa-p256".to_string()), "sent"),
        };
        (
            backend.to_string(),
            mtls,
            profile,
            Some(status.to_string()),
            220,
        )
    };
    assert_eq!(
        statuses,
        [
            expected("openssl", 0),
            expected("openssl", 1),
            expected("rustls", 0),
            expected("rustls", 1),
        ]
    );
    for backend in ["rustls", "openssl"] {
        let (off, on) = match backend {
            "rustls" => ("% c1", "% c1 mtls"),
            _ => ("% c1 openssl", "% c1 mtls openssl"),
        };
        // What mutual TLS adds to the client's own timeline: its CertificateVerify signature
        // (the `client_signing` phase) in every measured `on` handshake and in none of the
        // `off` ones. The wall clock's order of the two medians is not asserted: the tens of
        // µs of an ECDSA P-256 signature drown in a loaded machine's scheduling (seen: 543.6
        // against 544.2 µs). The server's CPU, measured per trial, shows its verification.
        let signing = |label: &str| phase_ms(&db, label, "client_signing");
        let (off_signing, on_signing) = (signing(off), signing(on));
        assert_eq!(on_signing.len(), 200, "{backend}: {summary}");
        assert!(
            on_signing.iter().all(|&ms| ms > 0.0),
            "{backend}: {on_signing:?}"
        );
        assert!(off_signing.is_empty(), "{backend}: {off_signing:?}");
        let server_cpu = |label: &str| -> f64 {
            value(
                &db,
                &format!(
                    "SELECT CAST(SUM(t.server_user_ns + t.server_system_ns) AS REAL) / SUM(t.handshakes) \
                     FROM trials t JOIN configs c ON c.id = t.config_id \
                     WHERE t.warmup = 0 AND c.label LIKE '{label}'"
                ),
            )
        };
        let (off_cpu, on_cpu) = (server_cpu(off), server_cpu(on));
        assert!(
            on_cpu > off_cpu,
            "{backend}: server CPU per handshake with mTLS {on_cpu} ns is not above {off_cpu} ns"
        );
    }
    // The Config says what the client proved, beside what it trusted.
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM configs WHERE mtls = 1 AND trust = 'lab root + client certificate'"
        ),
        2
    );
}

#[test]
fn each_mutual_tls_step_is_timed_on_both_sides_in_every_pairing() {
    // Every client library against every server library, TLS 1.2 and 1.3, with an RSA and an
    // ECDSA client certificate in two runs: the client's signature is the `client_signing`
    // phase of every `on` sample, the messages it added are `client_certificate_bytes`, and
    // the lab server's checks are counted and timed per trial.
    let dir = scratch("mtls-steps");
    for profile in ["rsa2048", "ecdsa-p256"] {
        let Finished { db, summary, .. } = Run::new(&dir, profile)
            .args("--mtls off,on --client-backend rustls,openssl --server-backend rustls,openssl")
            .args("--tls 1.2,1.3 -n 20 --warmup 2 --verbose")
            .option("--client-cert-profile", profile)
            .succeeds();
        // The summary gives each step of the eight `on` Configs, and none for the `off` ones.
        let steps: Vec<&str> = summary
            .lines()
            .filter(|line| line.trim_start().starts_with("mutual TLS client signature"))
            .collect();
        assert_eq!(steps.len(), 8, "{summary}");
        assert!(
            steps
                .iter()
                .all(|line| line.contains("ms per certificate (mean of ")
                    && line.contains("Certificate + CertificateVerify")),
            "{steps:?}"
        );
        let all = count(&db, "SELECT COUNT(*) FROM samples");
        assert_eq!(all, 16 * 22, "{summary}");
        assert_eq!(count_samples(&db, "s.outcome = 'ok'"), all, "{summary}");
        // On: a signature of its own, after the server's certificate was verified and before
        // the client's Finished went out; and the messages' bytes.
        assert_eq!(
            count_samples(
                &db,
                "c.mtls = 1 AND s.client_signing > 0 AND s.client_sign_start >= s.cert_verify_end \
                 AND s.client_sign_end <= s.client_finished_sent AND s.client_certificate_bytes > 0"
            ),
            all / 2,
            "{profile}: {summary}"
        );
        // Off: nothing to sign, nothing sent.
        assert_eq!(
            count_samples(
                &db,
                "c.mtls = 0 AND s.client_signing IS NULL AND s.client_sign_start IS NULL \
                 AND s.client_certificate_bytes IS NULL"
            ),
            all / 2
        );
        // The phases still add up to the handshake, the signature being one of them.
        assert_eq!(
            count_samples(
                &db,
                "COALESCE(s.dns, 0) + s.tcp_connect + s.client_hello_build + s.server_response \
                 + s.server_flight + COALESCE(s.cert_validation, 0) + COALESCE(s.client_signing, 0) \
                 + s.client_finish + s.server_finish = s.handshake"
            ),
            all
        );
        // Each library sends the same messages every time (an ECDSA signature's DER length
        // varies by a byte or two). With an RSA client certificate both send the same
        // chain; with the ECDSA P-256 one, whose root is also the root the client trusts for
        // the server, OpenSSL completes the chain from its trust store and sends the root too
        // (its automatic chain building), about 430 bytes more.
        for version in ["1.2", "1.3"] {
            let sizes: Vec<(String, i64, i64)> = rows(
                &db,
                "SELECT c.client_backend, MIN(s.client_certificate_bytes), MAX(s.client_certificate_bytes) \
                 FROM samples s JOIN configs c ON c.id = s.config_id \
                 WHERE c.mtls = 1 AND s.version = ?1 GROUP BY 1 ORDER BY 1",
                [version],
            );
            let [(_, openssl_low, openssl_high), (_, rustls_low, rustls_high)] = sizes[..] else {
                panic!("{sizes:?}");
            };
            assert!(
                openssl_high - openssl_low <= 4 && rustls_high - rustls_low <= 4,
                "{sizes:?}"
            );
            assert!(rustls_low > 300, "{sizes:?}");
            let extra = openssl_low - rustls_low;
            match profile {
                "rsa2048" => assert!(extra.abs() <= 4, "{profile} TLS {version}: {sizes:?}"),
                _ => assert!(
                    (300..600).contains(&extra),
                    "{profile} TLS {version}: {sizes:?}"
                ),
            }
        }
        // The server: `on` trials count and time its checks of client certificates, `off`
        // trials check nothing. Per trial the count need not match the attempts: in TLS 1.3
        // the client is done once its Finished is sent, so the server may check the last
        // certificate of a trial during the next trial of that server (or never, when the
        // client's reset arrives first). Every TLS 1.2 handshake was checked before the server's
        // Finished, so at least those are counted, and never more than were attempted.
        let (on_trials, timed, verified, attempted): (i64, i64, i64, i64) = row(
            &db,
            "SELECT COUNT(*), SUM(t.server_client_verify_ns IS NOT NULL), \
             SUM(t.server_client_verifications), SUM(t.attempted) \
             FROM trials t JOIN configs c ON c.id = t.config_id WHERE c.mtls = 1",
        );
        assert_eq!(timed, on_trials);
        let tls12 = count_samples(&db, "c.mtls = 1 AND s.version = '1.2'");
        assert!(
            (tls12..=attempted).contains(&verified),
            "{profile}: {verified} verified, {attempted} attempted"
        );
        assert!(
            count(
                &db,
                "SELECT SUM(t.server_client_verify_ns) FROM trials t JOIN configs c ON c.id = t.config_id \
                 WHERE c.mtls = 1"
            ) > 0
        );
        assert_eq!(
            count(
                &db,
                "SELECT COUNT(*) FROM trials t JOIN configs c ON c.id = t.config_id \
                 WHERE c.mtls = 0 AND t.server_client_verifications IS NOT NULL"
            ),
            0
        );
        // The export carries the new columns.
        let exported = tlslab_succeeds(&["export", db.to_str().unwrap()]);
        let header = exported.lines().next().unwrap_or_default();
        for column in [
            "client_certificate_bytes",
            "client_sign_start",
            "client_sign_end",
            "client_signing",
        ] {
            assert!(
                header.split(',').any(|name| name == column),
                "{column} not in {header}"
            );
        }
    }
}

/// A server child, killed on drop (also when an assertion fails).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A lab server started by hand (`tlslab serve --client-cert-profile`) of library `backend`,
/// requiring a client certificate issued by the lab root of `profile`: the server a target
/// run meets. Its address; killed on drop.
struct Requiring {
    child: std::process::Child,
    address: String,
}

impl Requiring {
    fn start(backend: &str, profile: &str) -> Requiring {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args(["serve", "--control", "--listen", "127.0.0.1:0", "--backend"])
            .arg(backend)
            .args(["--client-cert-profile", profile, "--pki-dir"])
            .arg(pki_dir())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        let ready: serde_json::Value = serde_json::from_str(&ready).unwrap();
        let address = ready["listening"].as_str().unwrap().to_string();
        Requiring { child, address }
    }
}

impl Drop for Requiring {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lab root the lab servers' certificates chain to, and the lab's client certificate and
/// key of `profile`.
fn lab_root_and_client(profile: tlslab_core::CertProfile) -> (String, String, String) {
    let pki = tlslab_pki::Pki::open(pki_dir()).unwrap();
    let root = pki.chain(tlslab_core::CertProfile::EcdsaP256, 1).unwrap();
    let client = pki.client_certificate(profile).unwrap();
    let text = |path: &std::path::Path| path.display().to_string();
    (
        text(&root.root_pem),
        text(&client.certificate_pem),
        text(&client.key_pem),
    )
}

#[test]
fn a_lab_server_that_requires_a_client_certificate_refuses_a_client_without_one_and_says_why() {
    // `tlslab serve --client-cert-profile` by hand is the server a target run meets: without
    // --client-cert every attempt fails, and the summary names the missing certificate.
    let dir = scratch("mtls-refused");
    let server = Requiring::start("rustls", "ed25519");
    let (root, certificate, key) = lab_root_and_client(tlslab_core::CertProfile::Ed25519);
    let common = format!(
        "--target {} --sni localhost --ca {root} -n 5 --warmup 0",
        server.address
    );
    let refused = Run::new(&dir, "without")
        .args(&common)
        .args("--client-backend rustls,openssl --tls 1.2,1.3")
        .output();
    let text = format!("{}{}", stdout(&refused), stderr(&refused));
    assert_eq!(refused.status.code(), Some(1), "{text}");
    assert!(text.contains("--client-cert"), "{text}");
    let accepted = Run::new(&dir, "with")
        .args(&common)
        .args("--client-backend rustls,openssl --tls 1.2,1.3")
        .option("--client-cert", certificate)
        .option("--client-key", key)
        .succeeds();
    assert_eq!(
        count_samples(
            &accepted.db,
            "s.outcome = 'ok' AND s.client_certificate = 'sent'"
        ),
        20
    );
}

#[test]
fn tls13_handshakes_the_server_refuses_after_the_clients_finished_are_failures() {
    // A TLS 1.3 server judges the client's certificate (here: its absence) after the client's
    // Finished, when the client's handshake is already done, and refuses it by an alert
    // (certificate_required) that follows. Every attempt waits for the server's verdict, so
    // each one fails with it: both clients over TCP against both lab servers, and over QUIC,
    // where the server closes the connection with the alert. (Until a Config's server has
    // answered once, the wait is one handshake's time, which a loaded machine may outlast:
    // the warm-up attempts learn that this server answers, and the measured ones wait for it
    // as long as it takes.)
    let dir = scratch("mtls-refused-13");
    let (root, certificate, key) = lab_root_and_client(tlslab_core::CertProfile::EcdsaP256);
    let rustls_server = Requiring::start("rustls", "ecdsa-p256");
    let openssl_server = Requiring::start("openssl", "ecdsa-p256");
    let runs = [
        (
            "rustls-tcp",
            &rustls_server,
            "--client-backend rustls,openssl",
        ),
        (
            "openssl-tcp",
            &openssl_server,
            "--client-backend rustls,openssl",
        ),
        ("rustls-quic", &rustls_server, "--transport quic"),
    ];
    for (name, server, arguments) in runs {
        let run = Run::new(&dir, name)
            .option("--target", &server.address)
            .args("--sni localhost --tls 1.3 -n 10 --warmup 3")
            .option("--ca", &root)
            .args(arguments);
        let output = run.output();
        let text = format!("{}{}", stdout(&output), stderr(&output));
        assert_eq!(output.status.code(), Some(1), "{name}: {text}");
        let all = count(run.db(), "SELECT COUNT(*) FROM samples WHERE warmup = 0");
        // Each attempt completed its handshake, then read the refusal: class alert, the
        // alert named, when it came, and why.
        assert_eq!(
            count_samples(
                run.db(),
                "s.warmup = 0 AND s.outcome = 'error' AND s.error = 'alert' AND s.version = '1.3' \
                 AND s.handshake_done IS NOT NULL AND s.server_accepted IS NULL \
                 AND s.client_certificate = 'asked-none-sent' \
                 AND s.error_detail LIKE 'alert 116 (%), after the client''s Finished; \
                 the server asked for a client certificate and none was sent'"
            ),
            all,
            "{name}: {text}"
        );
        let configs = count(run.db(), "SELECT COUNT(*) FROM configs");
        assert_eq!(
            text.matches(" alert: why: the server requires a client certificate and none was sent: pass --client-cert FILE --client-key FILE")
                .count(),
            configs as usize,
            "{name}: {text}"
        );
    }

    // With the certificate the same servers accept every handshake. The lab servers send
    // nothing unasked after a fresh TLS 1.3 handshake (no tickets): over TCP the client sees
    // no sign of acceptance, only no refusal; over QUIC the server confirms the handshake
    // (HANDSHAKE_DONE), which the sample records at the handshake's end or after it (the
    // confirmation may be in before the client's task woke to mark the end).
    for (name, server, arguments) in runs {
        let finished = Run::new(&dir, &format!("{name}-with"))
            .option("--target", &server.address)
            .args("--sni localhost --tls 1.3 -n 10 --warmup 0")
            .option("--ca", &root)
            .option("--client-cert", &certificate)
            .option("--client-key", &key)
            .args(arguments)
            .succeeds();
        let all = count(&finished.db, "SELECT COUNT(*) FROM samples");
        assert_eq!(
            count_samples(
                &finished.db,
                "s.outcome = 'ok' AND s.client_certificate = 'sent'"
            ),
            all,
            "{name}: {}",
            finished.summary
        );
        let confirmed = match name {
            "rustls-quic" => "s.server_accepted >= s.handshake_done",
            _ => "s.server_accepted IS NULL",
        };
        assert_eq!(count_samples(&finished.db, confirmed), all, "{name}");
    }
}

/// `openssl` (4.0.3 when the build cache holds its command, else the system's), or `None`.
fn openssl_command() -> Option<std::path::PathBuf> {
    let built = std::path::Path::new("/root/.cache/tlslab/openssl-4.0.3/bin/openssl");
    let command = match built.is_file() {
        true => built.to_path_buf(),
        false => std::path::PathBuf::from("openssl"),
    };
    std::process::Command::new(&command)
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success())
        .then_some(command)
}

#[test]
fn openssl_s_server_with_verify_refuses_tls13_without_a_certificate_and_accepts_with_one() {
    // A real external server: `openssl s_server -Verify 1` requires a client certificate. In
    // TLS 1.3 it refuses a handshake without one after the client's Finished; with one it
    // accepts and sends its session tickets, which are the sign of acceptance the sample
    // records (`server_accepted`), after the handshake and outside its time.
    let Some(openssl) = openssl_command() else {
        eprintln!("skipping: the openssl command is not installed (.ci/run installs it)");
        return;
    };
    let dir = scratch("mtls-s-server");
    let pki = tlslab_pki::Pki::open(pki_dir()).unwrap();
    let served = pki.chain(tlslab_core::CertProfile::EcdsaP256, 1).unwrap();
    let (root, certificate, key) = lab_root_and_client(tlslab_core::CertProfile::EcdsaP256);
    let port = closed_port();
    let _server = Killed(
        std::process::Command::new(&openssl)
            .arg("s_server")
            .args(["-accept", &format!("127.0.0.1:{port}"), "-cert"])
            .arg(&served.chain_pem)
            .arg("-key")
            .arg(&served.key_pem)
            .args(["-CAfile", &root, "-Verify", "1", "-www", "-quiet"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "openssl s_server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let run = |name: &str| {
        Run::new(&dir, name)
            .option("--target", format!("127.0.0.1:{port}"))
            .args("--sni localhost --tls 1.3 -n 10 --warmup 3 --client-backend rustls,openssl")
            .option("--ca", &root)
    };
    let refused = run("without").fails(1, "client certificate");
    assert_eq!(
        count_samples(
            &refused.db,
            "s.warmup = 0 AND s.outcome = 'error' AND s.error = 'alert' AND s.error_detail LIKE 'alert 116 (%' \
             AND s.error_detail LIKE '%after the client''s Finished; the server asked for a client certificate and none was sent'"
        ),
        20,
        "{}",
        refused.summary
    );
    assert_eq!(
        refused
            .summary
            .matches(" alert: why: the server requires a client certificate and none was sent")
            .count(),
        2,
        "{}",
        refused.summary
    );
    let accepted = run("with")
        .option("--client-cert", &certificate)
        .option("--client-key", &key)
        .succeeds();
    // Accepted, and seen to be: the tickets came after the handshake, whose time ends where
    // it did before (the client could send), without the wait.
    assert_eq!(
        count_samples(
            &accepted.db,
            "s.warmup = 0 AND s.outcome = 'ok' AND s.client_certificate = 'sent' \
             AND s.server_accepted > s.handshake_done AND s.handshake = s.handshake_done - s.start"
        ),
        20,
        "{}",
        accepted.summary
    );
}

#[test]
fn a_client_certificate_profile_without_mtls_on_is_said_to_do_nothing() {
    let dir = scratch("mtls-profile-alone");
    let finished = Run::new(&dir, "alone")
        .args("-n 5 --warmup 0 --client-cert-profile rsa2048")
        .succeeds();
    assert!(
        finished
            .stderr
            .contains("warning: --client-cert-profile has no effect without --mtls on"),
        "{}",
        finished.stderr
    );
}
