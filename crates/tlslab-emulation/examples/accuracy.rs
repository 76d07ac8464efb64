//! Measures the tun emulator: how precisely it adds delay, and how fast it forwards.
//!
//! ```text
//! cargo run --release -p tlslab-emulation --example accuracy -- \
//!     [--packets-per-second 20000] [--rtt-ms 10] [--seconds 3] [--throughput-seconds 3] \
//!     [--load-threads 0]
//! ```
//!
//! `--load-threads N` keeps N threads spinning during the precision run, as CPU-bound
//! handshakes would on the client and server.
//!
//! 1. Sends UDP datagrams at a steady rate from the client namespace to the server namespace
//!    through a fixed delay and prints the added-delay error (p50, p90, p99, p99.9, max):
//!    from the forwarder's own histogram (actual write time minus scheduled release time), and
//!    end to end, the one-way delay minus the configured one, where the send time is in the
//!    payload and the receive time is read on the same clock: once as the kernel's socket
//!    arrival timestamp (adds both network stacks), once when recv() returns (adds the
//!    receiving thread's wake-up).
//! 2. Runs a TCP bulk transfer with no delay and prints the throughput.
//!
//! Needs root (namespaces and TUN devices).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use tlslab_emulation::{
    DelayErrorHistogram, EmulatorKind, Network, NetworkProfile, SERVER_ADDRESS,
};

struct Options {
    packets_per_second: u64,
    rtt: Duration,
    seconds: u64,
    throughput_seconds: u64,
    load_threads: u64,
}

fn parse_options() -> Options {
    let mut options = Options {
        packets_per_second: 20_000,
        rtt: Duration::from_millis(10),
        seconds: 3,
        throughput_seconds: 3,
        load_threads: 0,
    };
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    for pair in arguments.chunks(2) {
        let value = || -> u64 {
            pair.get(1)
                .and_then(|value| value.parse().ok())
                .unwrap_or_else(|| panic!("{} needs a number", pair[0]))
        };
        match pair[0].as_str() {
            "--packets-per-second" => options.packets_per_second = value(),
            "--rtt-ms" => options.rtt = Duration::from_millis(value()),
            "--seconds" => options.seconds = value(),
            "--throughput-seconds" => options.throughput_seconds = value(),
            "--load-threads" => options.load_threads = value(),
            other => panic!("unknown option {other}"),
        }
    }
    options
}

fn micros(duration: Duration) -> f64 {
    duration.as_nanos() as f64 / 1000.0
}

fn print_distribution(label: &str, histogram: &DelayErrorHistogram) {
    println!(
        "{label:<28} n={:<7} p50={:>7.1} p90={:>7.1} p99={:>7.1} p99.9={:>7.1} max={:>8.1} µs",
        histogram.count(),
        micros(histogram.quantile(0.5)),
        micros(histogram.quantile(0.9)),
        micros(histogram.quantile(0.99)),
        micros(histogram.quantile(0.999)),
        micros(histogram.max()),
    );
}

/// Runs `work` on a thread inside a namespace; sockets it creates stay there.
fn inside<T: Send>(
    enter: impl FnOnce() -> std::io::Result<()> + Send,
    work: impl FnOnce() -> T + Send,
) -> T {
    thread::scope(|scope| {
        scope
            .spawn(|| {
                enter().expect("enter namespace");
                work()
            })
            .join()
            .unwrap()
    })
}

/// Nanoseconds on `clock_id`.
fn clock(clock_id: libc::clockid_t) -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec.
    unsafe { libc::clock_gettime(clock_id, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// One-way delay minus the configured delay, two ways.
struct Received {
    /// Kernel receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME) minus the realtime send
    /// time: the emulator and both network stacks, without the receiver's wake-up.
    at_socket: DelayErrorHistogram,
    /// recv() return time minus the monotonic send time: what an application sees.
    in_application: DelayErrorHistogram,
    /// Packets that took less than the configured delay (should be none).
    early: u64,
}

fn receive(socket: UdpSocket, one_way: Duration) -> Received {
    let fd = socket.as_raw_fd();
    let enable: libc::c_int = 1;
    // SAFETY: a valid option value of the right size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&enable as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    // The measuring thread competes with nothing it measures: give it the forwarder's policy
    // when permitted, so its own scheduling delay stays out of the numbers.
    let parameter = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is this thread; failure changes nothing.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &parameter) };
    let mut received = Received {
        at_socket: DelayErrorHistogram::default(),
        in_application: DelayErrorHistogram::default(),
        early: 0,
    };
    let one_way = one_way.as_nanos() as u64;
    let mut packet = [0u8; 100];
    let mut control = [0u64; 16]; // u64 for cmsghdr alignment
    loop {
        let mut vector = libc::iovec {
            iov_base: packet.as_mut_ptr().cast(),
            iov_len: packet.len(),
        };
        // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_iov = &mut vector;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: `message` describes valid buffers.
        let length = unsafe { libc::recvmsg(fd, &mut message, 0) };
        let now = clock(libc::CLOCK_MONOTONIC);
        if length < 0 {
            break; // the read timeout: the sender is done
        }
        if length < 16 {
            continue;
        }
        let sent_monotonic = u64::from_be_bytes(packet[..8].try_into().unwrap());
        let sent_realtime = u64::from_be_bytes(packet[8..16].try_into().unwrap());
        let Some(error) = (now - sent_monotonic).checked_sub(one_way) else {
            received.early += 1;
            continue;
        };
        received.in_application.record(Duration::from_nanos(error));
        // SAFETY: the CMSG macros walk the control buffer the kernel filled.
        unsafe {
            let mut header = libc::CMSG_FIRSTHDR(&message);
            while !header.is_null() {
                if (*header).cmsg_level == libc::SOL_SOCKET
                    && (*header).cmsg_type == libc::SCM_TIMESTAMPNS
                {
                    let stamp: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(header).cast());
                    let arrival = stamp.tv_sec as u64 * 1_000_000_000 + stamp.tv_nsec as u64;
                    if let Some(error) = arrival
                        .checked_sub(sent_realtime)
                        .and_then(|delay| delay.checked_sub(one_way))
                    {
                        received.at_socket.record(Duration::from_nanos(error));
                    }
                }
                header = libc::CMSG_NXTHDR(&message, header);
            }
        }
    }
    received
}

fn precision(network: &Network, options: &Options) {
    network
        .set_profile(&NetworkProfile::with_rtt(options.rtt))
        .unwrap();
    let handle = network.clone_handle();
    let server = inside(
        || handle.enter_server_namespace(),
        || UdpSocket::bind((SERVER_ADDRESS, 0)).unwrap(),
    );
    server
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let client = inside(
        || handle.enter_client_namespace(),
        || UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap(),
    );
    client.connect(server.local_addr().unwrap()).unwrap();

    let one_way = options.rtt / 2;
    let receiver = thread::spawn(move || receive(server, one_way));
    let loaded = Arc::new(AtomicBool::new(true));
    let load: Vec<_> = (0..options.load_threads)
        .map(|_| {
            let loaded = Arc::clone(&loaded);
            thread::spawn(move || {
                while loaded.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();

    network.reset_statistics();
    let total = options.packets_per_second * options.seconds;
    let interval = Duration::from_nanos(1_000_000_000 / options.packets_per_second);
    // SAFETY: prctl with integer arguments. Sleeps then end within a µs of their deadline, so
    // pacing needs no spinning (which would take a core from the forwarder).
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let mut packet = [0u8; 100];
    let base = Instant::now();
    for index in 0..total {
        let due = base + interval * index as u32;
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        packet[..8].copy_from_slice(&clock(libc::CLOCK_MONOTONIC).to_be_bytes());
        packet[8..16].copy_from_slice(&clock(libc::CLOCK_REALTIME).to_be_bytes());
        client.send(&packet).unwrap();
    }
    let sending = base.elapsed();
    let received = receiver.join().unwrap();
    loaded.store(false, Ordering::Relaxed);
    for thread in load {
        thread.join().unwrap();
    }
    let statistics = network.statistics();

    println!(
        "precision: {} packets/s for {} s (achieved {:.0}/s), {:?} RTT ({:?} one way), \
         {} load threads, tun emulator",
        options.packets_per_second,
        options.seconds,
        total as f64 / sending.as_secs_f64(),
        options.rtt,
        one_way,
        options.load_threads
    );
    print_distribution("forwarder (release error)", &statistics.delay_error);
    print_distribution("end to end, socket arrival", &received.at_socket);
    print_distribution("end to end, application", &received.in_application);
    println!(
        "sent {total}, received {}, arrived early {}, forwarder dropped {}",
        received.in_application.count() + received.early,
        received.early,
        statistics.client_to_server.dropped_queue_full + statistics.client_to_server.write_errors,
    );
}

fn throughput(network: &Network, options: &Options) {
    network.set_profile(&NetworkProfile::default()).unwrap();
    let handle = network.clone_handle();
    let listener = inside(
        || handle.enter_server_namespace(),
        || TcpListener::bind((SERVER_ADDRESS, 0)).unwrap(),
    );
    let target = network.route(listener.local_addr().unwrap()).unwrap();
    let sink = thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        let mut buffer = vec![0u8; 1 << 18];
        let mut total = 0u64;
        let mut first: Option<Instant> = None;
        loop {
            match connection.read(&mut buffer).unwrap() {
                0 => break,
                length => {
                    first.get_or_insert_with(Instant::now);
                    total += length as u64;
                }
            }
        }
        (
            total,
            first.map(|first| first.elapsed()).unwrap_or_default(),
        )
    });
    network.reset_statistics();
    let mut connection = inside(
        || handle.enter_client_namespace(),
        || TcpStream::connect(target).unwrap(),
    );
    let chunk = vec![0x5au8; 1 << 18];
    let deadline = Instant::now() + Duration::from_secs(options.throughput_seconds);
    while Instant::now() < deadline {
        connection.write_all(&chunk).unwrap();
    }
    connection.shutdown(std::net::Shutdown::Write).unwrap();
    let (bytes, elapsed) = sink.join().unwrap();
    let statistics = network.statistics();
    println!(
        "throughput: TCP client→server, no impairment: {:.2} Gbit/s ({} MB in {:.2} s)",
        bytes as f64 * 8.0 / elapsed.as_secs_f64() / 1e9,
        bytes / 1_000_000,
        elapsed.as_secs_f64()
    );
    println!(
        "forwarder: {} packets client→server, {} server→client, {} queue drops",
        statistics.client_to_server.packets_forwarded,
        statistics.server_to_client.packets_forwarded,
        statistics.client_to_server.dropped_queue_full
            + statistics.server_to_client.dropped_queue_full
    );
    print_distribution("forwarder (release error)", &statistics.delay_error);
}

fn main() {
    let options = parse_options();
    let network = match Network::create(EmulatorKind::Tun, "accuracy") {
        Ok(network) => network,
        Err(error) => {
            eprintln!("error: {error}\nhint: {}", error.hint);
            std::process::exit(1);
        }
    };
    precision(&network, &options);
    throughput(&network, &options);
    network.close().unwrap();
}
