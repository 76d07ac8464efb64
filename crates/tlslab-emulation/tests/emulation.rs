//! End-to-end tests of the emulators with real traffic.
//!
//! The tun tests need root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and /dev/net/tun. Without them they
//! print why and return; with them, a tun emulator that fails to come up fails the test.
//! Every test uses its own run id, so they run in parallel, and every network is removed by
//! its Drop even when an assertion fails.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use tlslab_emulation::{
    available, choose, remove_leftovers, EmulatorChoice, EmulatorKind, Network, NetworkProfile,
    SERVER_ADDRESS,
};

/// Whether this process has what the tun emulator needs, judged independently of the crate.
fn privileged() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let capabilities = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    let needed = (1 << 12) | (1 << 21); // CAP_NET_ADMIN, CAP_SYS_ADMIN
    capabilities & needed == needed && std::path::Path::new("/dev/net/tun").exists()
}

/// A tun network, or `None` (with the reason printed) where this machine cannot have one.
fn tun_network(run_id: &str) -> Option<Network> {
    if let Err(error) = available(EmulatorKind::Tun) {
        assert!(
            !privileged(),
            "the tun emulator should run with these privileges: {error} ({})",
            error.hint
        );
        eprintln!("skipping: {error} ({})", error.hint);
        return None;
    }
    Some(Network::create(EmulatorKind::Tun, run_id).expect("create the tun network"))
}

/// Runs `work` on a thread inside the client namespace. Sockets it creates stay in that
/// namespace and may be used from any thread afterwards.
fn in_client<T: Send>(network: &Network, work: impl FnOnce() -> T + Send) -> T {
    let handle = network.clone_handle();
    thread::scope(|scope| {
        scope
            .spawn(move || {
                handle
                    .enter_client_namespace()
                    .expect("enter the client namespace");
                work()
            })
            .join()
            .expect("client-side work panicked")
    })
}

fn in_server<T: Send>(network: &Network, work: impl FnOnce() -> T + Send) -> T {
    let handle = network.clone_handle();
    thread::scope(|scope| {
        scope
            .spawn(move || {
                handle
                    .enter_server_namespace()
                    .expect("enter the server namespace");
                work()
            })
            .join()
            .expect("server-side work panicked")
    })
}

/// Echoes datagrams until `stop` is set.
fn udp_echo(socket: UdpSocket, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    thread::spawn(move || {
        let mut buffer = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((length, peer)) = socket.recv_from(&mut buffer) {
                let _ = socket.send_to(&buffer[..length], peer);
            }
        }
    })
}

/// Sets a flag on drop, so helper threads stop even when an assertion unwinds.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[test]
fn tun_adds_the_round_trip_delay() {
    let Some(network) = tun_network("delay") else {
        return;
    };
    let rtt = Duration::from_millis(20);
    network.set_profile(&NetworkProfile::with_rtt(rtt)).unwrap();

    let server = in_server(&network, || UdpSocket::bind((SERVER_ADDRESS, 0)).unwrap());
    let server_address = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(Arc::clone(&stop));
    let echo = udp_echo(server, Arc::clone(&stop));
    let client = in_client(&network, || {
        UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap()
    });
    client.connect(server_address).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();

    let mut round_trips = Vec::new();
    for sequence in 0u32..40 {
        let started = Instant::now();
        client.send(&sequence.to_be_bytes()).unwrap();
        let mut reply = [0u8; 4];
        client.recv(&mut reply).expect("echo reply");
        round_trips.push(started.elapsed());
        assert_eq!(u32::from_be_bytes(reply), sequence);
    }
    for (sequence, round_trip) in round_trips.iter().enumerate() {
        assert!(
            *round_trip >= rtt,
            "round trip {sequence} took only {round_trip:?}"
        );
    }
    let median = median(&mut round_trips);
    assert!(
        median < rtt + Duration::from_millis(10),
        "median {median:?}"
    );

    // A TCP connect waits for the SYN-ACK: one round trip.
    let listener = in_server(&network, || TcpListener::bind((SERVER_ADDRESS, 0)).unwrap());
    let target = network.route(listener.local_addr().unwrap()).unwrap();
    let (connection, connect_time) = in_client(&network, || {
        let started = Instant::now();
        let connection = TcpStream::connect(target).unwrap();
        (connection, started.elapsed())
    });
    assert!(
        connect_time >= rtt,
        "TCP connect took only {connect_time:?}"
    );
    drop(connection);

    let statistics = network.statistics();
    assert!(statistics.client_to_server.packets_forwarded >= 40);
    assert!(statistics.server_to_client.packets_forwarded >= 40);
    assert!(statistics.delay_error.count() >= 80);
    stop.store(true, Ordering::Relaxed);
    echo.join().unwrap();
    network.close().unwrap();
}

#[test]
fn tun_loses_packets_at_random() {
    let Some(network) = tun_network("loss") else {
        return;
    };
    network
        .set_profile(&NetworkProfile {
            rtt: Duration::from_millis(2),
            loss: 0.5,
            ..NetworkProfile::default()
        })
        .unwrap();
    let server = in_server(&network, || UdpSocket::bind((SERVER_ADDRESS, 0)).unwrap());
    let server_address = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(Arc::clone(&stop));
    let echo = udp_echo(server, Arc::clone(&stop));
    let client = in_client(&network, || {
        UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap()
    });
    client.connect(server_address).unwrap();

    let sent = 400;
    for sequence in 0u32..sent {
        client.send(&sequence.to_be_bytes()).unwrap();
        thread::sleep(Duration::from_micros(500));
    }
    // Each echo survives both directions with probability 1/4: about 100 of 400 come back.
    client
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut received = 0;
    let mut reply = [0u8; 4];
    while client.recv(&mut reply).is_ok() {
        received += 1;
    }
    assert!(
        (20..300).contains(&received),
        "{received} of {sent} echoes came back through 50% loss each way"
    );
    let statistics = network.statistics();
    assert!(statistics.client_to_server.dropped_loss > 100);
    stop.store(true, Ordering::Relaxed);
    echo.join().unwrap();
}

#[test]
fn tun_jitter_keeps_packets_in_order() {
    let Some(network) = tun_network("jitter") else {
        return;
    };
    network
        .set_profile(&NetworkProfile {
            rtt: Duration::from_millis(20),
            jitter: Duration::from_millis(5),
            ..NetworkProfile::default()
        })
        .unwrap();
    let server = in_server(&network, || UdpSocket::bind((SERVER_ADDRESS, 0)).unwrap());
    server
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let server_address = server.local_addr().unwrap();
    let client = in_client(&network, || {
        UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap()
    });
    client.connect(server_address).unwrap();

    let base = Instant::now();
    let count = 400u32;
    let receiver = thread::spawn(move || {
        let mut arrivals = Vec::new();
        let mut packet = [0u8; 12];
        while let Ok(length) = server.recv(&mut packet) {
            assert_eq!(length, 12);
            let sequence = u32::from_be_bytes(packet[..4].try_into().unwrap());
            let sent = Duration::from_nanos(u64::from_be_bytes(packet[4..].try_into().unwrap()));
            arrivals.push((sequence, base.elapsed() - sent));
            if arrivals.len() == count as usize {
                break;
            }
        }
        arrivals
    });
    for sequence in 0..count {
        let mut packet = [0u8; 12];
        packet[..4].copy_from_slice(&sequence.to_be_bytes());
        packet[4..].copy_from_slice(&(base.elapsed().as_nanos() as u64).to_be_bytes());
        client.send(&packet).unwrap();
        thread::sleep(Duration::from_millis(1));
    }
    let arrivals = receiver.join().unwrap();
    assert_eq!(arrivals.len(), count as usize, "packets were lost");
    for (index, (sequence, _)) in arrivals.iter().enumerate() {
        assert_eq!(
            *sequence, index as u32,
            "packet {sequence} arrived out of order"
        );
    }
    let delays: Vec<Duration> = arrivals.iter().map(|(_, delay)| *delay).collect();
    let shortest = *delays.iter().min().unwrap();
    let longest = *delays.iter().max().unwrap();
    assert!(
        shortest >= Duration::from_millis(5),
        "shortest one-way delay {shortest:?}"
    );
    assert!(
        longest - shortest >= Duration::from_millis(1),
        "jitter had no effect: {shortest:?} to {longest:?}"
    );
}

#[test]
fn tun_rate_limits_a_bulk_transfer() {
    let Some(network) = tun_network("rate") else {
        return;
    };
    network
        .set_profile(&NetworkProfile {
            rtt: Duration::from_millis(2),
            rate_bits_per_second: Some(10_000_000),
            ..NetworkProfile::default()
        })
        .unwrap();
    let listener = in_server(&network, || TcpListener::bind((SERVER_ADDRESS, 0)).unwrap());
    let target = network.route(listener.local_addr().unwrap()).unwrap();
    let size = 2_000_000usize;
    let sink = thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        let mut total = 0;
        let mut buffer = vec![0u8; 65_536];
        loop {
            match connection.read(&mut buffer).unwrap() {
                0 => break,
                length => total += length,
            }
        }
        connection.write_all(b"k").unwrap();
        total
    });
    let mut connection = in_client(&network, || TcpStream::connect(target).unwrap());
    connection
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    connection.write_all(&vec![7u8; size]).unwrap();
    connection.shutdown(std::net::Shutdown::Write).unwrap();
    let mut acknowledgement = [0u8; 1];
    connection.read_exact(&mut acknowledgement).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(sink.join().unwrap(), size);
    // 16 Mbit at 10 Mbit/s is 1.6 s, plus headers.
    assert!(
        elapsed >= Duration::from_millis(1500),
        "2 MB passed a 10 Mbit/s link in {elapsed:?}"
    );
}

/// Echoes on every accepted connection until the peer closes.
fn tcp_echo_server() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for connection in listener.incoming() {
            let Ok(mut connection) = connection else {
                continue;
            };
            thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(length) = connection.read(&mut buffer) {
                    if length == 0 || connection.write_all(&buffer[..length]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    address
}

#[test]
fn relay_delays_each_round_trip() {
    let network = Network::create(EmulatorKind::Relay, "relay").unwrap();
    let rtt = Duration::from_millis(20);
    network.set_profile(&NetworkProfile::with_rtt(rtt)).unwrap();
    let target = network.route(tcp_echo_server()).unwrap();
    assert!(target.ip().is_loopback());
    let mut connection = TcpStream::connect(target).unwrap();
    connection.set_nodelay(true).unwrap();
    connection
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    for round in 0..10u8 {
        let started = Instant::now();
        connection.write_all(&[round; 100]).unwrap();
        let mut reply = [0u8; 100];
        connection.read_exact(&mut reply).unwrap();
        let round_trip = started.elapsed();
        assert_eq!(reply, [round; 100]);
        assert!(round_trip >= rtt, "round {round} took only {round_trip:?}");
        assert!(
            round_trip < rtt + Duration::from_millis(200),
            "round {round} took {round_trip:?}"
        );
    }
    assert!(network.statistics().client_to_server.packets_forwarded >= 10);
    assert!(network
        .set_profile(&NetworkProfile {
            loss: 0.1,
            ..NetworkProfile::default()
        })
        .is_err());
    network.close().unwrap();
}

/// Raises this process's soft limit on open files to the hard limit, as `tlslab` does at start
/// (the usual soft limit of 1,024 is below what hundreds of relayed connections need: each
/// costs four descriptors here, the client's, the relay's two and the echo server's), and
/// returns the soft limit.
fn raise_file_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        );
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

#[test]
fn relay_sustains_hundreds_of_connections() {
    // Four descriptors per connection, and room for the tests running beside this one.
    let limit = raise_file_limit();
    let per_worker = (limit.saturating_sub(400) / 4 / 10).min(30) as usize;
    if per_worker < 30 {
        println!(
            "open-file limit {limit}: {} connections instead of 300",
            per_worker * 10
        );
    }
    let network = Network::create(EmulatorKind::Relay, "relay-many").unwrap();
    network
        .set_profile(&NetworkProfile::with_rtt(Duration::from_millis(10)))
        .unwrap();
    let target = network.route(tcp_echo_server()).unwrap();
    let workers: Vec<_> = (0..10)
        .map(|worker| {
            thread::spawn(move || -> io::Result<()> {
                let mut connections = (0..per_worker)
                    .map(|_| TcpStream::connect(target))
                    .collect::<io::Result<Vec<_>>>()?;
                for round in 0..3u8 {
                    for connection in &mut connections {
                        connection.write_all(&[worker, round])?;
                    }
                    for connection in &mut connections {
                        connection.set_read_timeout(Some(Duration::from_secs(10)))?;
                        let mut reply = [0u8; 2];
                        connection.read_exact(&mut reply)?;
                        assert_eq!(reply, [worker, round]);
                    }
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker
            .join()
            .unwrap()
            .expect("hundreds of concurrent relayed connections");
    }
}

#[test]
fn relay_passes_a_reset_on() {
    let network = Network::create(EmulatorKind::Relay, "relay-reset").unwrap();
    network
        .set_profile(&NetworkProfile::with_rtt(Duration::from_millis(10)))
        .unwrap();
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let target = network.route(listener.local_addr().unwrap()).unwrap();
    let server = thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        connection
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut received = Vec::new();
        let mut buffer = [0u8; 16];
        loop {
            match connection.read(&mut buffer) {
                Ok(0) => return (received, None),
                Ok(length) => received.extend_from_slice(&buffer[..length]),
                Err(error) => return (received, Some(error.kind())),
            }
        }
    });
    let mut client = TcpStream::connect(target).unwrap();
    client.write_all(b"hello").unwrap();
    thread::sleep(Duration::from_millis(30));
    // tlslab closes connections abortively (SO_LINGER 0): the server must see a reset too.
    socket2::SockRef::from(&client)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(client);
    let (received, error) = server.join().unwrap();
    assert_eq!(received, b"hello");
    assert_eq!(error, Some(io::ErrorKind::ConnectionReset));
}

/// The child side of `leftovers_of_a_killed_run_are_removed`, which runs this test binary
/// again with `TLSLAB_EMULATION_HOLD` set and kills it with -9; without the variable (every
/// ordinary run) it does nothing.
#[test]
fn helper_hold_a_network() {
    if std::env::var_os("TLSLAB_EMULATION_HOLD").is_none() {
        return;
    }
    let network = Network::create(EmulatorKind::Tun, "held").unwrap();
    let (client, server) = network.namespace_names().unwrap();
    println!("NAMESPACES {client} {server}");
    io::stdout().flush().unwrap();
    thread::sleep(Duration::from_secs(60));
}

#[test]
fn leftovers_of_a_killed_run_are_removed() {
    let Some(live) = tun_network("live") else {
        return;
    };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_hold_a_network", "--nocapture"])
        .env("TLSLAB_EMULATION_HOLD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child_pid = child.id();
    let mut names = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("NAMESPACES ") {
            names = rest
                .split_once(' ')
                .map(|(client, server)| (client.to_string(), server.to_string()));
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL: no Drop runs
    child.wait().unwrap();
    let (client, server) = names.expect("the child reported its namespaces");
    let exists = |name: &str| std::path::Path::new("/run/netns").join(name).exists();
    assert!(
        exists(&client) && exists(&server),
        "namespaces outlive a killed run"
    );
    // The TUN devices died with the child's descriptors.
    let devices = Command::new("ip")
        .args(["-n", &client, "-o", "link", "show"])
        .output()
        .unwrap();
    let devices = String::from_utf8_lossy(&devices.stdout).to_string();
    assert!(!devices.contains(&format!("tlc{child_pid}")), "{devices}");

    // A namespace named for a process that never lived long: also a leftover.
    let mut short_lived = Command::new("true").spawn().unwrap();
    let dead_pid = short_lived.id();
    short_lived.wait().unwrap();
    let dead = format!("tlslab-{dead_pid}-manual-client");
    let added = Command::new("ip")
        .args(["netns", "add", &dead])
        .status()
        .unwrap();
    assert!(added.success());

    let removed = remove_leftovers().unwrap();
    for name in [&client, &server, &dead] {
        assert!(removed.contains(name), "{name} not in {removed:?}");
        assert!(!exists(name), "{name} still exists");
    }
    let (live_client, live_server) = live.namespace_names().unwrap();
    let (live_client, live_server) = (live_client.to_string(), live_server.to_string());
    assert!(!removed.contains(&live_client));
    assert!(
        exists(&live_client) && exists(&live_server),
        "a live run's namespaces were removed"
    );

    live.close().unwrap();
    assert!(
        !exists(&live_client) && !exists(&live_server),
        "close left namespaces behind"
    );
}

#[test]
fn auto_prefers_the_best_available_emulator() {
    let chosen = choose(EmulatorChoice::Auto).unwrap();
    let netem = available(EmulatorKind::Netem);
    match &netem {
        Ok(()) => assert_eq!(chosen, EmulatorKind::Netem),
        Err(_) => assert_ne!(chosen, EmulatorKind::Netem),
    }
    if netem.is_err() && available(EmulatorKind::Tun).is_ok() {
        assert_eq!(chosen, EmulatorKind::Tun);
    }
    if privileged() && netem.is_err() {
        let error = choose(EmulatorChoice::Kind(EmulatorKind::Netem)).unwrap_err();
        assert!(
            error.hint.contains("--emulator tun") && error.hint.contains("--emulator relay"),
            "hint: {}",
            error.hint
        );
    }
}

#[test]
fn networks_are_shared_across_threads_and_routes_are_checked() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Network>();
    shareable::<tlslab_emulation::NamespaceHandle>();

    let Some(network) = tun_network("route") else {
        return;
    };
    let duplicate = Network::create(EmulatorKind::Tun, "route")
        .err()
        .expect("a duplicate");
    assert!(duplicate.message.contains("already exists"), "{duplicate}");
    let port = 8443;
    let any: SocketAddr = (Ipv4Addr::UNSPECIFIED, port).into();
    assert_eq!(network.route(any).unwrap(), (SERVER_ADDRESS, port).into());
    let loopback: SocketAddr = (Ipv4Addr::LOCALHOST, port).into();
    let error = network.route(loopback).unwrap_err();
    assert!(error.hint.contains("10.201.0.2"), "{}", error.hint);
    assert!(network.warnings().is_empty());
}
