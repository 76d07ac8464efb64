//! Text from the network and from files reaches the terminal escaped (issue 31): a hostile
//! peer's escape sequences and line breaks show as `\x1b` and `\n`, never as a coloured,
//! cleared or forged line. Every peer here is real: a raw TCP client sending a hand-built
//! ClientHello whose server name holds ESC and a newline, captured by tcpdump and read by
//! `tlslab pcap`; a small HTTP/1.1 server whose `Server` field holds ESC, loaded by `tlslab
//! load`; `openssl s_server` with a certificate whose subject and names hold controls,
//! scanned by `tlslab scan`; and files (an experiment's labels, a CSV file's columns).
//! `--json` keeps the bytes as received (JSON escapes them) and so does the store.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

const ESC: char = '\u{1b}';

/// Asserts that nothing in `text` is a control a terminal would obey: line feeds only.
fn assert_no_controls(text: &str, what: &str) {
    let controls: Vec<char> = text
        .chars()
        .filter(|character| character.is_control() && *character != '\n')
        .collect();
    assert!(
        controls.is_empty(),
        "{what} holds controls {controls:?}:\n{text}"
    );
}

/// Both streams of a finished tlslab, checked for controls.
fn assert_clean(output: &Output) {
    assert_no_controls(&stdout(output), "stdout");
    assert_no_controls(&stderr(output), "stderr");
}

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TLS 1.3 ClientHello record naming `server_name` byte for byte, which no TLS library
/// would send: one suite, the server name, supported versions and groups, an X25519 share.
fn client_hello(server_name: &[u8]) -> Vec<u8> {
    fn extension(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut bytes = kind.to_be_bytes().to_vec();
        bytes.extend_from_slice(&(body.len() as u16).to_be_bytes());
        bytes.extend_from_slice(body);
        bytes
    }
    let mut name = vec![0]; // host_name
    name.extend_from_slice(&(server_name.len() as u16).to_be_bytes());
    name.extend_from_slice(server_name);
    let mut list = (name.len() as u16).to_be_bytes().to_vec();
    list.extend_from_slice(&name);
    let mut share = vec![0, 36, 0, 0x1d, 0, 32];
    share.extend_from_slice(&[9; 32]);
    let mut extensions = extension(0, &list);
    extensions.extend(extension(0x2b, &[2, 3, 4])); // supported_versions: TLS 1.3
    extensions.extend(extension(0x0a, &[0, 2, 0, 0x1d])); // supported_groups: x25519
    extensions.extend(extension(0x0d, &[0, 2, 4, 3])); // ecdsa_secp256r1_sha256
    extensions.extend(extension(0x33, &share));
    let mut body = vec![3, 3];
    body.extend_from_slice(&[7; 32]); // random
    body.push(0); // session id
    body.extend_from_slice(&[0, 2, 0x13, 0x01]); // TLS_AES_128_GCM_SHA256
    body.extend_from_slice(&[1, 0]); // compression: null
    body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    body.extend_from_slice(&extensions);
    let mut message = vec![1]; // client_hello
    message.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    message.extend_from_slice(&body);
    let mut record = vec![0x16, 3, 1];
    record.extend_from_slice(&(message.len() as u16).to_be_bytes());
    record.extend_from_slice(&message);
    record
}

/// A server name with a colour, a window title and a line that imitates tlslab's own.
const HOSTILE_NAME: &str = "evil\u{1b}[31m.example\u{1b}]0;pwned\u{7}\nerror: forged";

#[test]
fn a_captured_server_name_with_escapes_and_a_newline_shows_them_escaped() {
    let dir = scratch("hostile-sni");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some(capture) = tcpdump_in(None, "lo", &dir, "hostile", &format!("tcp port {port}")) else {
        return;
    };
    // The server reads the ClientHello and refuses it with a fatal alert, as a server that
    // cannot use the name does; the client reads to the end and closes.
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut hello = [0u8; 512];
        let _ = stream.read(&mut hello);
        // handshake_failure
        stream.write_all(&[0x15, 3, 3, 0, 2, 2, 40]).unwrap();
    });
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client
        .write_all(&client_hello(HOSTILE_NAME.as_bytes()))
        .unwrap();
    let mut answer = Vec::new();
    let _ = client.read_to_end(&mut answer);
    drop(client);
    server.join().unwrap();
    let file = capture.stop();

    let db = dir.join("hostile.db");
    let output = tlslab(&[
        "pcap",
        file.to_str().unwrap(),
        "--out",
        db.to_str().unwrap(),
    ]);
    let text = assert_success(&output);
    assert_clean(&output);
    assert!(
        text.contains("sni=evil\\x1b[31m.example\\x1b]0;pwned\\x07\\nerror: forged"),
        "{text}"
    );
    assert!(
        !text.lines().any(|line| line.starts_with("error: forged")),
        "{text}"
    );
    // The store keeps the name as it was sent.
    let labels: Vec<String> = column(&db, "SELECT label FROM configs", []);
    assert!(
        labels
            .iter()
            .any(|label| label.contains(&format!("sni={HOSTILE_NAME}"))),
        "{labels:?}"
    );
    // So does JSON, whose strings escape it their own way.
    let json = tlslab(&[
        "pcap",
        file.to_str().unwrap(),
        "--out",
        dir.join("hostile-json.db").to_str().unwrap(),
        "--json",
    ]);
    let value: serde_json::Value = serde_json::from_str(&assert_success(&json)).unwrap();
    assert!(
        value["summary"]["configs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|config| config["label"]
                .as_str()
                .unwrap()
                .contains(&format!("sni={HOSTILE_NAME}"))),
        "{value}"
    );
    // A report of the store: Markdown shows the name escaped, on its line.
    let report = dir.join("hostile.md");
    assert_success(&tlslab(&[
        "report",
        db.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]));
    let markdown = std::fs::read_to_string(&report).unwrap();
    assert_no_controls(&markdown, "the Markdown report");
    assert!(markdown.contains("evil\\x1b[31m.example"), "{markdown}");
    assert!(
        !markdown
            .lines()
            .any(|line| line.starts_with("error: forged")),
        "{markdown}"
    );
}

/// An HTTP/1.1 server on a port of its own that answers every request `200 OK` with
/// `server` as its `Server` field, on kept connections.
fn hostile_http_server(server: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || answer(stream, server));
        }
    });
    port
}

/// Answers each request on `stream` (GET or HEAD, no body) until the client closes.
fn answer(stream: TcpStream, server: &str) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let end = line == "\r\n" || line == "\n";
            head.push_str(&line);
            if end {
                break;
            }
        }
        let body = if head.starts_with("HEAD") { "" } else { "ok\n" };
        let response = format!(
            "HTTP/1.1 200 OK\r\nServer: {server}\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\n{body}"
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn a_server_field_with_escapes_shows_them_escaped_in_both_layouts() {
    let dir = scratch("hostile-server-field");
    let port = hostile_http_server("evil\u{1b}[31m\u{1b}[2J\u{7}/1.0");
    let url = format!("http://127.0.0.1:{port}/");
    for (name, format) in [("text", None), ("ab", Some("ab"))] {
        let db = dir.join(format!("{name}.db"));
        let mut line = vec![
            "load",
            url.as_str(),
            "-n",
            "20",
            "--warmup",
            "0",
            "--out",
            db.to_str().unwrap(),
        ];
        if let Some(format) = format {
            line.extend(["--format", format]);
        }
        let output = tlslab(&line);
        let text = assert_success(&output);
        assert_clean(&output);
        assert!(text.contains("evil\\x1b[31m\\x1b[2J\\x07/1.0"), "{text}");
        // The store keeps the field as the server sent it.
        let kept: Vec<String> = column(
            &db,
            "SELECT DISTINCT server_software FROM samples WHERE server_software IS NOT NULL",
            [],
        );
        assert!(kept.iter().any(|field| field.contains(ESC)), "{kept:?}");
    }
}

/// A self-signed certificate for `localhost` whose subject and names hold controls, made by
/// `openssl req`: (certificate, key).
fn hostile_certificate(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (certificate, key) = (dir.join("certificate.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj"])
        .arg("/CN=evil\u{1b}[31mred\u{1b}]0;pwned\u{7}/O=line\nerror: forged")
        .arg("-addext")
        .arg("subjectAltName=DNS:localhost,DNS:evil\u{1b}[2J.example")
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&certificate)
        .output();
    match made {
        Ok(made) if made.status.success() => Some((certificate, key)),
        Ok(made) => panic!(
            "openssl req failed: {}",
            String::from_utf8_lossy(&made.stderr)
        ),
        Err(error) => {
            println!("skipped: openssl does not run here ({error}); .ci/run installs it");
            None
        }
    }
}

#[test]
fn a_certificate_subject_with_escapes_shows_them_escaped() {
    let dir = scratch("hostile-certificate");
    let Some((certificate, key)) = hostile_certificate(&dir) else {
        return;
    };
    let port = closed_port();
    let server = Killed(
        Command::new("openssl")
            .args(["s_server", "-quiet", "-www"])
            .args(["-accept", &format!("127.0.0.1:{port}")])
            .arg("-cert")
            .arg(&certificate)
            .arg("-key")
            .arg(&key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl runs"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "openssl s_server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let target = format!("127.0.0.1:{port}");
    let output = tlslab(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--ca",
        certificate.to_str().unwrap(),
        "--no-timing",
    ]);
    let text = assert_success(&output);
    assert_clean(&output);
    assert!(
        text.contains("CN=evil\\x1b[31mred\\x1b]0;pwned\\x07, O=line\\nerror: forged"),
        "{text}"
    );
    assert!(text.contains("issuer CN=evil\\x1b[31mred"), "{text}");
    assert!(text.contains("evil\\x1b[2J.example"), "{text}");
    assert!(
        !text.lines().any(|line| line.starts_with("error: forged")),
        "{text}"
    );
    // JSON keeps the subject as the certificate has it.
    let json = tlslab(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--ca",
        certificate.to_str().unwrap(),
        "--no-timing",
        "--json",
    ]);
    let value: serde_json::Value = serde_json::from_str(&assert_success(&json)).unwrap();
    let subject = value[0]["certificates"]["chain"][0]["subject"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(subject.contains(ESC) && subject.contains('\n'), "{value}");

    // A run that asks for another name fails; the peer's names in the failure's example
    // are escaped, and the store keeps them as rustls said them.
    let db = dir.join("wrong-name.db");
    let output = tlslab(&[
        "run",
        "--target",
        &target,
        "--sni",
        "other.example",
        "--ca",
        certificate.to_str().unwrap(),
        "-n",
        "3",
        "--warmup",
        "0",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_clean(&output);
    let text = stdout(&output);
    assert!(
        text.contains("only valid for DnsName(\"localhost\") or DnsName(\"evil\\x1b[2J.example\")"),
        "{text}"
    );
    let details: Vec<String> = column(
        &db,
        "SELECT DISTINCT error_detail FROM samples WHERE error_detail IS NOT NULL",
        [],
    );
    assert!(
        details
            .iter()
            .any(|detail| detail.contains("evil\u{1b}[2J")),
        "{details:?}"
    );
    drop(server);
}

#[test]
fn labels_from_an_experiment_file_show_escaped() {
    let dir = scratch("hostile-labels");
    let experiment = dir.join("experiment.toml");
    std::fs::write(
        &experiment,
        "tls = [\"1.2\", \"1.3\"]\nlabels = [\"old\\u001b[2J\", \"new\\nerror: forged\"]\n",
    )
    .unwrap();
    let run = Run::new(&dir, "labels")
        .arg(experiment.to_str().unwrap())
        .args("-n 20 --warmup 0");
    let db = run.db().to_str().unwrap().to_string();
    let output = run.output();
    let text = assert_success(&output);
    // The store's labels, wherever a command shows them: the summary, a comparison, a
    // plan, the labels an error lists.
    let compared = tlslab(&["compare", &db]);
    let planned = tlslab(&["plan", &db]);
    let wrong_baseline = tlslab(&["compare", &db, "--baseline", "nope"]);
    assert_user_error(&wrong_baseline, 2, "no config is labelled 'nope'");
    for output in [&output, &compared, &planned, &wrong_baseline] {
        assert_clean(output);
        let text = format!("{}{}", stdout(output), stderr(output));
        assert!(text.contains("old\\x1b[2J"), "{text}");
        assert!(text.contains("new\\nerror: forged"), "{text}");
        assert!(
            !text.lines().any(|line| line.starts_with("error: forged")),
            "{text}"
        );
    }
    assert!(text.starts_with("handshake "), "{text}");
}

#[test]
fn a_csv_files_column_names_show_escaped_in_its_error() {
    let dir = scratch("hostile-columns");
    let (first, second) = (dir.join("a.csv"), dir.join("b.csv"));
    for path in [&first, &second] {
        std::fs::write(path, "\"evil\u{1b}[2J\",\"two\nerror: forged\"\n1,2\n3,4\n").unwrap();
    }
    let output = tlslab(&[
        "compare",
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "--column",
        "nothing",
    ]);
    assert_user_error(&output, 2, "has no column 'nothing'");
    assert_clean(&output);
    let text = stderr(&output);
    assert!(
        text.contains("its columns are: evil\\x1b[2J, two\\nerror: forged"),
        "{text}"
    );
    assert!(
        !text.lines().any(|line| line.starts_with("error: forged")),
        "{text}"
    );
}
