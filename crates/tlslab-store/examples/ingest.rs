//! How many samples a second the store's writer takes: `bench/store-ingest.sh` runs this for
//! a SQLite file and a PostgreSQL database with the same samples.
//!
//! ```text
//! cargo run --release -p tlslab-store --example ingest -- STORE SAMPLES
//! ```
//!
//! STORE is a new `.db` path or a `postgres://` URL. The samples are handshakes as a run on
//! loopback stores them: every event of a TLS 1.3 handshake over TCP timed, its negotiated
//! version, the bytes each way, the client's address. They go through the writer thread a
//! run uses ([`SinkThread`]), from one producer, and the time is from the first record to the
//! last commit.

use std::time::Instant;

use tlslab_core::*;

#[path = "support/mod.rs"]
mod support;
use support::info;
use tlslab_store::postgres::{prepare, reserve_run, PostgresSink};
use tlslab_store::Store;

fn main() {
    let mut arguments = std::env::args().skip(1);
    let (Some(store), Some(samples)) = (arguments.next(), arguments.next()) else {
        eprintln!("usage: ingest (NEW.db | postgres://…) SAMPLES");
        std::process::exit(2);
    };
    let samples: u64 = samples.parse().expect("SAMPLES is a number");
    let sink: Box<dyn Sink> = if store.starts_with("postgres") {
        let mut client =
            postgres::Client::connect(&store, postgres::NoTls).expect("the database accepts");
        prepare(&mut client, "bench").expect("the schema");
        let run = reserve_run(&mut client, "bench").expect("a run number");
        Box::new(PostgresSink::new(client, "bench".into(), run))
    } else {
        Box::new(
            Store::create(std::path::Path::new(&store))
                .expect("a new file")
                .into_sink(),
        )
    };
    let mut writer = SinkThread::spawn(sink).expect("the writer thread");
    writer.begin(&info()).expect("the run begins");
    let handshake = handshake();
    let started = Instant::now();
    for number in 0..samples {
        let mut sample = handshake.clone();
        sample.agent = (number % 64) as u32;
        sample.started_at = number * 1_000;
        writer
            .record(Record::Sample(Box::new(sample)))
            .expect("stored");
    }
    writer
        .finish(&RunEnd {
            complete: true,
            reason: None,
            duration_ns: 1,
            attempted: samples,
            errors: 0,
        })
        .expect("the run ends");
    let seconds = started.elapsed().as_secs_f64();
    println!("{samples} {seconds:.3} {:.0}", samples as f64 / seconds);
}

/// One handshake as a TLS 1.3 run over TCP on loopback stores it.
fn handshake() -> Sample {
    let mut builder = Sample::builder()
        .version("TLSv1.3")
        .bytes(517, 2_870)
        .client_address("127.0.0.1:40000".parse().unwrap());
    let events = [
        Event::Start,
        Event::TcpConnected,
        Event::ClientHelloSent,
        Event::ServerHelloReceived,
        Event::ServerFlightReceived,
        Event::CertVerifyStart,
        Event::CertVerifyEnd,
        Event::ClientFinishedSent,
        Event::HandshakeDone,
        Event::ServerAccepted,
    ];
    for (position, event) in events.into_iter().enumerate() {
        builder = builder.event(event, position as u64 * 40_000 + 1_234);
    }
    builder.build()
}
