//! A [`Sink`] on a thread of its own, for one producer that never waits for the network
//! (`tlslab pcap` reading a file): its records go over in batches through a bounded channel,
//! so the producer's work (decoding packets) and the sink's (SQLite inserts) run side by
//! side on two cores, and memory stays bounded when the sink is the slower one (the producer
//! then waits). The active side has its own writer (`tlslab-engine`'s `writer`), which many
//! tasks share and which commits when they go quiet; a live capture writes from the thread
//! that reads packets, so that each handshake is stored as it completes, not when a batch fills.
//!
//! ```
//! use tlslab_core::{Record, RunEnd, Sink, SinkError, SinkThread};
//!
//! #[derive(Default)]
//! struct Count(usize);
//! impl Sink for Count {
//!     fn begin(&mut self, _: &tlslab_core::RunInfo) -> Result<(), SinkError> { Ok(()) }
//!     fn record(&mut self, _: Record) -> Result<(), SinkError> { self.0 += 1; Ok(()) }
//!     fn flush(&mut self) -> Result<(), SinkError> { Ok(()) }
//!     fn finish(&mut self, _: &RunEnd) -> Result<(), SinkError> { Ok(()) }
//! }
//!
//! let mut sink = SinkThread::spawn(Count::default()).unwrap();
//! // ... a producer calls sink.record(...) for each record ...
//! sink.finish(&RunEnd::default()).unwrap();
//! assert_eq!(sink.into_inner().map(|count| count.0), Some(0));
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::record::{Record, RunEnd, RunInfo, Sink, SinkError};

/// Records handed over at a time: one channel operation (and at most one wake-up of the
/// other thread) per batch instead of per record.
const BATCH: usize = 256;

/// Batches the channel holds before the producer waits for the sink.
const QUEUED_BATCHES: usize = 4;

enum Message {
    Begin(Box<RunInfo>),
    Records(Vec<Record>),
    Flush,
}

enum State<S> {
    Running {
        sender: SyncSender<Message>,
        thread: JoinHandle<S>,
    },
    /// After [`Sink::finish`]: the sink is back on the producer's thread.
    Joined(Option<S>),
}

/// A sink that hands every record to `S` on a thread of its own (see the module's notes).
/// The first error of `S` is returned by the producer's next call; the records after it are
/// dropped, as `S` would refuse them, and the run's end is still written by `finish`.
pub struct SinkThread<S> {
    state: State<S>,
    batch: Vec<Record>,
    failure: Arc<Mutex<Option<SinkError>>>,
    failed: Arc<AtomicBool>,
}

impl<S: Sink + 'static> SinkThread<S> {
    /// Starts the thread that owns `sink`.
    pub fn spawn(sink: S) -> Result<SinkThread<S>, SinkError> {
        let (sender, receiver) = sync_channel(QUEUED_BATCHES);
        let failure: Arc<Mutex<Option<SinkError>>> = Arc::default();
        let failed: Arc<AtomicBool> = Arc::default();
        let (reported, flagged) = (failure.clone(), failed.clone());
        let thread = std::thread::Builder::new()
            .name("tlslab-sink".into())
            .spawn(move || write(sink, &receiver, &reported, &flagged))
            .map_err(|error| SinkError {
                message: format!("cannot start the results writer's thread: {error}"),
                hint: "check the process limits (ulimit -u)".into(),
            })?;
        Ok(SinkThread {
            state: State::Running { sender, thread },
            batch: Vec::with_capacity(BATCH),
            failure,
            failed,
        })
    }

    /// The sink, once [`Sink::finish`] has brought it back (not if its thread crashed).
    pub fn into_inner(self) -> Option<S> {
        match self.state {
            State::Joined(sink) => sink,
            State::Running { .. } => None,
        }
    }

    /// The sink's first error, if it failed.
    fn failure(&self) -> Option<SinkError> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn send(&mut self, message: Message) -> Result<(), SinkError> {
        let State::Running { sender, .. } = &self.state else {
            return Err(finished());
        };
        sender.send(message).map_err(|_| crashed())?;
        self.failure().map_or(Ok(()), Err)
    }

    fn send_batch(&mut self) -> Result<(), SinkError> {
        if self.batch.is_empty() {
            return self.failure().map_or(Ok(()), Err);
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.send(Message::Records(batch))
    }
}

impl<S: Sink + 'static> Sink for SinkThread<S> {
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError> {
        self.send(Message::Begin(Box::new(info.clone())))
    }

    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        self.batch.push(record);
        if self.batch.len() >= BATCH {
            return self.send_batch();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.send_batch()?;
        self.send(Message::Flush)
    }

    /// Hands over the last records, waits until the thread wrote them, and writes the end
    /// on this thread.
    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        let sent = self.send_batch();
        let state = std::mem::replace(&mut self.state, State::Joined(None));
        let State::Running { sender, thread } = state else {
            return Err(finished());
        };
        drop(sender);
        let mut sink = thread.join().map_err(|_| crashed())?;
        let ended = sink.finish(end);
        self.state = State::Joined(Some(sink));
        match (self.failure(), sent) {
            (Some(error), _) => Err(error),
            (None, Err(error)) => Err(error),
            (None, Ok(())) => ended,
        }
    }
}

/// The thread: each message in order; after the first failure only drains the channel, so
/// that the producer never waits on a sink that has stopped.
fn write<S: Sink>(
    mut sink: S,
    receiver: &Receiver<Message>,
    failure: &Mutex<Option<SinkError>>,
    failed: &AtomicBool,
) -> S {
    for message in receiver {
        if failed.load(Ordering::Acquire) {
            continue;
        }
        let written = match message {
            Message::Begin(info) => sink.begin(&info),
            Message::Records(records) => records
                .into_iter()
                .try_for_each(|record| sink.record(record)),
            Message::Flush => sink.flush(),
        };
        if let Err(error) = written {
            *failure
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error);
            failed.store(true, Ordering::Release);
        }
    }
    sink
}

fn crashed() -> SinkError {
    SinkError {
        message: "the results writer's thread stopped".into(),
        hint: "report this as a bug; the samples committed before it are kept".into(),
    }
}

fn finished() -> SinkError {
    SinkError {
        message: "the results writer has finished".into(),
        hint: "report this as a bug".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps the records' order, and fails at the record given.
    #[derive(Default)]
    struct Recording {
        began: bool,
        numbers: Vec<usize>,
        flushes: usize,
        fail_at: Option<usize>,
        ended: Option<RunEnd>,
    }

    impl Sink for Recording {
        fn begin(&mut self, _: &RunInfo) -> Result<(), SinkError> {
            self.began = true;
            Ok(())
        }
        fn record(&mut self, record: Record) -> Result<(), SinkError> {
            if Some(self.numbers.len()) == self.fail_at {
                return Err(SinkError {
                    message: "disk full".into(),
                    hint: "free some space".into(),
                });
            }
            if let Record::Replay(replay) = record {
                self.numbers.push(replay.config);
            }
            Ok(())
        }
        fn flush(&mut self) -> Result<(), SinkError> {
            self.flushes += 1;
            Ok(())
        }
        fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
            self.ended = Some(end.clone());
            Ok(())
        }
    }

    /// A record that carries its number (a replay probe's, for a Config of that index).
    fn numbered(number: usize) -> Record {
        Record::Replay(crate::ReplayRecord {
            config: number,
            sent: 0,
            rejected: 0,
            accepted: 0,
        })
    }

    fn info() -> RunInfo {
        RunInfo {
            source: crate::Source::Active,
            experiment: None,
            configs: Vec::new(),
            plan: None,
            environment: crate::Environment {
                tool_version: String::new(),
                commit: String::new(),
                rustls_version: String::new(),
                crypto_provider: String::new(),
                openssl_version: None,
                cpu_model: String::new(),
                cores: 1,
                kernel: String::new(),
                hostname: String::new(),
                network: String::new(),
                name_resolution: Vec::new(),
                wire_clock: None,
            },
            command_line: Vec::new(),
            started_at_unix_ns: 0,
        }
    }

    #[test]
    fn every_record_arrives_in_order_and_the_end_last() {
        let mut sink = SinkThread::spawn(Recording::default()).unwrap();
        sink.begin(&info()).unwrap();
        for number in 0..1000 {
            sink.record(numbered(number)).unwrap();
        }
        sink.flush().unwrap();
        sink.record(numbered(1000)).unwrap();
        let end = RunEnd {
            complete: true,
            attempted: 1001,
            ..RunEnd::default()
        };
        sink.finish(&end).unwrap();
        let inner = sink.into_inner().unwrap();
        assert!(inner.began);
        assert_eq!(inner.numbers, (0..=1000).collect::<Vec<_>>());
        assert_eq!(inner.flushes, 1);
        assert_eq!(inner.ended, Some(end));
    }

    #[test]
    fn the_first_failure_reaches_the_producer_and_the_end_is_still_written() {
        let mut sink = SinkThread::spawn(Recording {
            fail_at: Some(300),
            ..Recording::default()
        })
        .unwrap();
        let mut refused = None;
        for number in 0..5000 {
            if let Err(error) = sink.record(numbered(number)) {
                refused = Some((number, error));
                break;
            }
        }
        let (number, error) = refused.expect("the failure reaches the producer");
        assert_eq!(error.message, "disk full");
        // Within the batches the channel holds after the one that failed.
        assert!(number < 300 + BATCH * (QUEUED_BATCHES + 2), "{number}");
        let ended = sink.finish(&RunEnd::default());
        assert_eq!(ended.unwrap_err().message, "disk full");
        let inner = sink.into_inner().unwrap();
        assert_eq!(inner.numbers.len(), 300);
        assert!(inner.ended.is_some(), "the end is written after a failure");
    }
}
