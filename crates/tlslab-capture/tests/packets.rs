//! Real captures of real traffic: tcpdump (and dumpcap, for pcapng) record a TCP connection and
//! a UDP datagram that each test makes on loopback, and `packets::read` must find all of it.
//!
//! Needs root and tcpdump (Debian package tcpdump); the pcapng test needs dumpcap or editcap
//! (tshark or wireshark-common). Without them a test says why on stderr and passes unchecked.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tlslab_capture::packets::{self, Summary, Transport};

const CLIENT_BYTES: &[u8] = b"hello from the client, over TCP";
const SERVER_BYTES: &[u8] = b"hello from the server, over TCP";
const DATAGRAM: &[u8] = b"one datagram, over UDP";

fn installed(program: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether this test can capture with `program`, saying why not.
fn can_capture(test: &str, program: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test} skipped: capturing on lo needs root");
        return false;
    }
    if !installed(program) {
        eprintln!("{test} skipped: {program} is not installed");
        return false;
    }
    true
}

/// A capture program running until `stop`.
struct Recorder {
    child: Child,
    program: String,
    /// Ok once it is ready, then its whole stderr once it has ended.
    said: mpsc::Receiver<Result<(), String>>,
}

impl Recorder {
    /// Starts `program` and waits until its stderr says `ready`: only then is the filter in
    /// place and the traffic sure to be seen.
    fn start(program: &str, arguments: &[&str], ready: &'static str) -> Recorder {
        let mut child = Command::new(program)
            .args(arguments)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|problem| panic!("cannot start {program}: {problem}"));
        let stderr = child.stderr.take().expect("stderr is piped");
        let (sender, receiver) = mpsc::channel();
        // Keeps reading after `ready`, so that the program never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut said = String::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains(ready) {
                    let _ = sender.send(Ok(()));
                }
                said.push_str(&line);
                said.push('\n');
            }
            let _ = sender.send(Err(said));
        });
        let ready = receiver.recv_timeout(Duration::from_secs(30));
        let recorder = Recorder {
            child,
            program: program.to_owned(),
            said: receiver,
        };
        match ready {
            Ok(Ok(())) => recorder,
            Ok(Err(said)) => panic!("{program} {arguments:?} stopped before capturing:\n{said}"),
            Err(_) => panic!("{program} {arguments:?} did not start capturing within 30 s"),
        }
    }

    /// Stops the capture and returns what the program said on stderr.
    fn stop(mut self) -> String {
        // SIGINT drops what the kernel has not handed over yet: give it time to.
        std::thread::sleep(Duration::from_millis(700));
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
        // SAFETY: kill has no memory preconditions; the pid is our child, not yet waited for.
        let sent = unsafe { libc::kill(pid, libc::SIGINT) };
        assert_eq!(sent, 0, "cannot signal {}", self.program);
        let status = self.child.wait().expect("wait for the capture program");
        let said = loop {
            match self.said.recv_timeout(Duration::from_secs(10)) {
                Ok(Ok(())) => continue,
                Ok(Err(said)) => break said,
                Err(_) => break String::new(),
            }
        };
        assert!(
            status.success(),
            "{} ended with {status}:\n{said}",
            self.program
        );
        said
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // A failed assertion must not leave a capture running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn now_ns() -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since_epoch.as_nanos()).unwrap()
}

/// The sockets, bound before the capture starts so that its filter can name their ports.
struct Endpoints {
    listener: TcpListener,
    receiver: UdpSocket,
}

/// What the traffic was, to look for in the capture.
struct Exchange {
    client: SocketAddr,
    server: SocketAddr,
    datagram_from: SocketAddr,
    datagram_to: SocketAddr,
    began_ns: u64,
    ended_ns: u64,
}

impl Endpoints {
    fn new() -> Endpoints {
        Endpoints {
            listener: TcpListener::bind("127.0.0.1:0").unwrap(),
            receiver: UdpSocket::bind("127.0.0.1:0").unwrap(),
        }
    }

    fn filter(&self) -> String {
        format!(
            "tcp port {} or udp port {}",
            self.listener.local_addr().unwrap().port(),
            self.receiver.local_addr().unwrap().port()
        )
    }

    /// A connection with bytes both ways and a close from each side, then a datagram.
    fn exchange(self) -> Exchange {
        let began_ns = now_ns();
        let server = self.listener.local_addr().unwrap();
        let mut client = TcpStream::connect(server).unwrap();
        let (mut accepted, client_address) = self.listener.accept().unwrap();
        client.write_all(CLIENT_BYTES).unwrap();
        let mut received = vec![0; CLIENT_BYTES.len()];
        accepted.read_exact(&mut received).unwrap();
        assert_eq!(received, CLIENT_BYTES);
        accepted.write_all(SERVER_BYTES).unwrap();
        let mut received = vec![0; SERVER_BYTES.len()];
        client.read_exact(&mut received).unwrap();
        assert_eq!(received, SERVER_BYTES);
        client.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        accepted.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        accepted.shutdown(Shutdown::Write).unwrap();
        client.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        drop((client, accepted));

        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let datagram_to = self.receiver.local_addr().unwrap();
        sender.send_to(DATAGRAM, datagram_to).unwrap();
        let mut received = [0; 64];
        let (length, _) = self.receiver.recv_from(&mut received).unwrap();
        assert_eq!(&received[..length], DATAGRAM);
        Exchange {
            client: client_address,
            server,
            datagram_from: sender.local_addr().unwrap(),
            datagram_to,
            began_ns,
            ended_ns: now_ns(),
        }
    }
}

/// Captures the exchange with tcpdump and `options` (before `-w`) into `directory`.
fn tcpdump(directory: &Path, name: &str, options: &[&str]) -> (PathBuf, Exchange) {
    let path = directory.join(name);
    let endpoints = Endpoints::new();
    let filter = endpoints.filter();
    let path_text = path.to_str().unwrap();
    let mut arguments = options.to_vec();
    // -U and immediate mode: each packet written as it comes. Immediate mode gives each packet
    // a ring slot as large as the snap length, so the default 256 KiB would leave the 2 MiB
    // ring 8 slots and the kernel would drop most of a burst on `any`: 2 KiB is ample here.
    // -Z root: Debian's tcpdump would otherwise drop to the tcpdump user, who cannot write in
    // the private temporary directory.
    arguments.extend([
        "-U",
        "--immediate-mode",
        "-s",
        "2048",
        "-Z",
        "root",
        "-w",
        path_text,
        &filter,
    ]);
    let recorder = Recorder::start("tcpdump", &arguments, "listening on");
    let exchange = endpoints.exchange();
    let said = recorder.stop();
    // Otherwise a missing packet would look like the reader's fault.
    assert!(
        said.lines()
            .any(|line| line == "0 packets dropped by kernel"),
        "tcpdump lost packets:\n{said}"
    );
    (path, exchange)
}

/// A segment copied out of the callback.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    timestamp_ns: u64,
    interface: u32,
    source: SocketAddr,
    destination: SocketAddr,
    /// (syn, ack, fin) for TCP, None for UDP.
    flags: Option<(bool, bool, bool)>,
    payload: Vec<u8>,
}

fn read_capture(path: &Path) -> (Summary, Vec<Seen>) {
    let mut seen = Vec::new();
    let summary = packets::read(path, |segment| {
        seen.push(Seen {
            timestamp_ns: segment.timestamp_ns,
            interface: segment.interface,
            source: segment.source,
            destination: segment.destination,
            flags: match segment.transport {
                Transport::Tcp(tcp) => Some((tcp.syn, tcp.ack, tcp.fin)),
                Transport::Udp { .. } => None,
            },
            payload: segment.transport.payload().to_vec(),
        })
    })
    .unwrap_or_else(|problem| panic!("{}: {}", problem.message, problem.hint));
    (summary, seen)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Reads the capture at `path` and checks that it holds the whole exchange.
fn check(path: &Path, exchange: &Exchange) -> (Summary, Vec<Seen>) {
    let (summary, seen) = read_capture(path);
    let context = format!("{}: {summary:?}", path.display());
    assert!(!summary.truncated, "{context}");
    assert!(summary.skipped.is_empty(), "{context}");
    assert_eq!(summary.packets, summary.decoded, "{context}");
    assert_eq!(summary.decoded, seen.len() as u64, "{context}");

    let tcp = |from: SocketAddr, to: SocketAddr| {
        seen.iter()
            .filter(move |segment| segment.source == from && segment.destination == to)
            .filter_map(|segment| segment.flags.map(|flags| (flags, &segment.payload)))
    };
    let (client, server) = (exchange.client, exchange.server);
    assert!(
        tcp(client, server).any(|((syn, ack, _), _)| syn && !ack),
        "no SYN in {context}"
    );
    assert!(
        tcp(server, client).any(|((syn, ack, _), _)| syn && ack),
        "no SYN-ACK in {context}"
    );
    assert!(
        tcp(client, server).any(|((_, _, fin), _)| fin),
        "no client FIN in {context}"
    );
    assert!(
        tcp(server, client).any(|((_, _, fin), _)| fin),
        "no server FIN in {context}"
    );
    let sent: Vec<u8> = tcp(client, server)
        .flat_map(|(_, payload)| payload.clone())
        .collect();
    let answered: Vec<u8> = tcp(server, client)
        .flat_map(|(_, payload)| payload.clone())
        .collect();
    assert!(contains(&sent, CLIENT_BYTES), "{context}");
    assert!(contains(&answered, SERVER_BYTES), "{context}");
    assert!(
        seen.iter().any(|segment| segment.flags.is_none()
            && segment.source == exchange.datagram_from
            && segment.destination == exchange.datagram_to
            && segment.payload == DATAGRAM),
        "no datagram in {context}"
    );

    // Each interface's clock only goes forward, and it is the clock of this test's traffic.
    let interfaces: BTreeSet<u32> = seen.iter().map(|segment| segment.interface).collect();
    for interface in interfaces {
        let times: Vec<u64> = seen
            .iter()
            .filter(|segment| segment.interface == interface)
            .map(|segment| segment.timestamp_ns)
            .collect();
        assert!(times.is_sorted(), "{context}: {times:?}");
    }
    let second = 1_000_000_000;
    for segment in &seen {
        assert!(
            (exchange.began_ns - second..exchange.ended_ns + second)
                .contains(&segment.timestamp_ns),
            "{context}: {} is not between {} and {}",
            segment.timestamp_ns,
            exchange.began_ns,
            exchange.ended_ns
        );
    }
    (summary, seen)
}

/// The link type in a pcap file header.
fn pcap_link_type(path: &Path) -> u32 {
    let bytes = std::fs::read(path).unwrap();
    u32::from_le_bytes(bytes[20..24].try_into().unwrap())
}

#[test]
fn tcpdump_microseconds_on_ethernet() {
    if !can_capture("tcpdump_microseconds_on_ethernet", "tcpdump") {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let (path, exchange) = tcpdump(directory.path(), "lo.pcap", &["-i", "lo"]);
    assert_eq!(pcap_link_type(&path), 1);
    let (_, seen) = check(&path, &exchange);
    // Microseconds: the last three digits are zero.
    assert!(seen.iter().all(|segment| segment.timestamp_ns % 1000 == 0));
}

#[test]
fn tcpdump_nanoseconds() {
    if !can_capture("tcpdump_nanoseconds", "tcpdump") {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let (path, exchange) = tcpdump(
        directory.path(),
        "nano.pcap",
        &["-i", "lo", "--time-stamp-precision=nano"],
    );
    let magic = std::fs::read(&path).unwrap()[..4].to_vec();
    assert_eq!(magic, [0x4d, 0x3c, 0xb2, 0xa1]);
    let (_, seen) = check(&path, &exchange);
    assert!(seen.iter().any(|segment| segment.timestamp_ns % 1000 != 0));
}

#[test]
fn tcpdump_any_linux_cooked_version_2() {
    if !can_capture("tcpdump_any_linux_cooked_version_2", "tcpdump") {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let (path, exchange) = tcpdump(directory.path(), "any.pcap", &["-i", "any"]);
    assert_eq!(pcap_link_type(&path), 276);
    check(&path, &exchange);
}

#[test]
fn tcpdump_any_linux_cooked_version_1() {
    if !can_capture("tcpdump_any_linux_cooked_version_1", "tcpdump") {
        return;
    }
    let supported = Command::new("tcpdump")
        .args(["-i", "any", "-L"])
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).contains("LINUX_SLL "))
        .unwrap_or(false);
    if !supported {
        eprintln!("tcpdump_any_linux_cooked_version_1 skipped: tcpdump -i any has no LINUX_SLL");
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let (path, exchange) = tcpdump(
        directory.path(),
        "any-v1.pcap",
        &["-i", "any", "-y", "LINUX_SLL"],
    );
    assert_eq!(pcap_link_type(&path), 113);
    check(&path, &exchange);
}

#[test]
fn compressed_and_cut_captures() {
    if !can_capture("compressed_and_cut_captures", "tcpdump") {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let (path, exchange) = tcpdump(directory.path(), "plain.pcap", &["-i", "lo"]);
    let (summary, seen) = check(&path, &exchange);
    let bytes = std::fs::read(&path).unwrap();

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&bytes).unwrap();
    let compressed = [
        ("capture.pcap.gz", gzip.finish().unwrap()),
        ("capture.pcap.zst", zstd::encode_all(&bytes[..], 3).unwrap()),
    ];
    for (name, compressed) in compressed {
        let compressed_path = directory.path().join(name);
        std::fs::write(&compressed_path, compressed).unwrap();
        assert_eq!(
            check(&compressed_path, &exchange),
            (summary.clone(), seen.clone())
        );
    }

    // As if tcpdump had been killed in the middle of writing its last packet.
    let cut_path = directory.path().join("cut.pcap");
    std::fs::write(&cut_path, &bytes[..bytes.len() - 10]).unwrap();
    let (cut_summary, cut_seen) = read_capture(&cut_path);
    assert!(cut_summary.truncated);
    assert_eq!(cut_summary.packets, summary.packets - 1);
    assert_eq!(cut_seen, seen[..seen.len() - 1]);
}

#[test]
fn pcapng() {
    let test = "pcapng";
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test} skipped: capturing on lo needs root");
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    if installed("dumpcap") {
        // Two interfaces in one file: lo (Ethernet) and any (Linux cooked), each with its own
        // link type and timestamp resolution.
        let path = directory.path().join("dumpcap.pcapng");
        let endpoints = Endpoints::new();
        let filter = endpoints.filter();
        let arguments = [
            "-f",
            &filter,
            "-i",
            "lo",
            "-i",
            "any",
            "-w",
            path.to_str().unwrap(),
        ];
        // Not "Capturing on", which dumpcap prints before it opens the interfaces: "File:"
        // comes once they are open, filtered, and the file is made.
        let recorder = Recorder::start("dumpcap", &arguments, "File: ");
        let exchange = endpoints.exchange();
        let said = recorder.stop();
        eprintln!("dumpcap said:\n{said}");
        assert_eq!(std::fs::read(&path).unwrap()[..4], [0x0a, 0x0d, 0x0d, 0x0a]);
        let (_, seen) = check(&path, &exchange);
        let interfaces: BTreeSet<u32> = seen.iter().map(|segment| segment.interface).collect();
        assert_eq!(interfaces, BTreeSet::from([0, 1]));
    } else if installed("editcap") && installed("tcpdump") {
        let (path, exchange) = tcpdump(directory.path(), "lo.pcap", &["-i", "lo"]);
        let converted = directory.path().join("converted.pcapng");
        let status = Command::new("editcap")
            .args(["-F", "pcapng"])
            .arg(&path)
            .arg(&converted)
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(
            std::fs::read(&converted).unwrap()[..4],
            [0x0a, 0x0d, 0x0d, 0x0a]
        );
        assert_eq!(check(&converted, &exchange), check(&path, &exchange));
    } else {
        eprintln!(
            "{test} skipped: to write pcapng it needs dumpcap, or editcap and tcpdump \
             (Debian: tshark or wireshark-common)"
        );
    }
}
