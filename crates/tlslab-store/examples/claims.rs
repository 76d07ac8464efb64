//! How fast agents claim a distributed run's trials, and that none is run twice or lost:
//! `bench/claims.sh` publishes a run of many small trials with `publish`, then starts many
//! processes of `agent`, each claiming trials until none is left and writing each one's row
//! as an agent's sink does (the row and its claim done in one transaction), then checks.
//!
//! ```text
//! cargo run --release -p tlslab-store --example claims -- publish URL TRIALS   # prints the run
//! cargo run --release -p tlslab-store --example claims -- agent URL RUN        # prints its claims
//! ```

use std::time::Duration;

use tlslab_core::*;

#[path = "support/mod.rs"]
mod support;
use support::info;
use tlslab_store::postgres::agents::{Coordination, Distribution, Registration, Work};
use tlslab_store::{Location, NewRun, Store};

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [mode, url, number] = &arguments[..] else {
        eprintln!("usage: claims (publish URL TRIALS | agent URL RUN)");
        std::process::exit(2);
    };
    let location = Location::parse(url).expect("a postgres:// URL");
    let number: i64 = number.parse().expect("a number");
    match mode.as_str() {
        "publish" => println!("{}", publish(&location, number)),
        "agent" => println!("{}", agent(&location, number)),
        _ => {
            eprintln!("the mode is publish or agent");
            std::process::exit(2);
        }
    }
}

/// A run of `trials` one-attempt trials of one Config, published for claiming.
fn publish(location: &Location, trials: i64) -> i64 {
    let NewRun::Database(mut sink) = Store::create_at(location).expect("the database") else {
        unreachable!("a postgres:// URL is a database");
    };
    let run = sink.run();
    sink.begin(&info()).expect("the run begins");
    let plan: Vec<Trial> = (0..trials as usize)
        .map(|index| Trial {
            index,
            config: 0,
            round: 1,
            warmup: false,
            handshakes: 1,
            time_limit: None,
        })
        .collect();
    let mut coordination = Coordination::connect(location).expect("the database");
    coordination
        .publish(run, (1, Distribution::Claims), &plan)
        .expect("the trials published");
    run
}

/// Claims trials of `run` until none is left, writing each one's row through an agent's
/// sink; how many it claimed.
fn agent(location: &Location, run: i64) -> u64 {
    let mut coordination = Coordination::connect(location).expect("the database");
    let joined = coordination
        .register(
            run,
            &Registration {
                shard: None,
                host: "bench".into(),
                process_id: std::process::id(),
                tool_version: env!("CARGO_PKG_VERSION").into(),
                commit_id: "bench".into(),
            },
        )
        .expect("registered");
    let mut sink =
        Store::agent_sink(location, run, (joined.agent, false), 0, 0).expect("the agent's sink");
    sink.begin(&info()).expect("begun");
    let mut claimed = 0;
    // It beats as an agent's heartbeat thread does: an agent silent for ten seconds is lost,
    // and its claim is taken over.
    let mut beaten = std::time::Instant::now();
    loop {
        if beaten.elapsed() >= Duration::from_secs(1) {
            coordination
                .heartbeat(run, joined.agent)
                .expect("a heartbeat");
            beaten = std::time::Instant::now();
        }
        match coordination
            .claim(run, joined.agent, Duration::from_secs(10))
            .expect("a claim")
        {
            Work::Trial(claim) => {
                claimed += 1;
                sink.record(Record::Trial(TrialRecord {
                    trial: Trial {
                        index: claim.trial,
                        config: 0,
                        round: 1,
                        warmup: false,
                        handshakes: 1,
                        time_limit: None,
                    },
                    concurrency: 1,
                    started_at: 0,
                    duration_ns: 1,
                    attempted: 1,
                    server: None,
                    client: Usage::default(),
                    link: None,
                    server_client_verifications: None,
                }))
                .expect("the trial recorded");
                sink.flush().expect("the trial written");
            }
            Work::Wait => std::thread::sleep(Duration::from_millis(10)),
            Work::Done => break,
        }
    }
    claimed
}
