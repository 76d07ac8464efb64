//! A [`Sink`] on a thread of its own: the one writer every producer of records uses, so that
//! the producer's work (handshakes, decoding packets) and the sink's (inserts, commits) run
//! side by side, and a slow disk never stalls a measurement.
//!
//! Producers come in two kinds, and the thread serves each as it needs ([`Producers`]):
//!
//! - **One producer that may wait** (`tlslab pcap` decoding a file): records go over in
//!   batches gathered on the producer's side, through a bounded channel, so memory stays
//!   bounded when the sink is the slower one (the producer then waits).
//! - **Many producers that must never wait** (the engine's thousands of agent tasks, each on a
//!   runtime thread where a blocked worker delays every attempt on it, and the delay would be
//!   measured as handshake time): each sends through a cloneable [`Records`] on an unbounded
//!   channel, and records are gathered on the thread's side instead: after a record it naps a
//!   few milliseconds so that the next ones are taken with one wake-up.
//!
//! In both, the sink is flushed when the producers go quiet (so a run's samples are committed
//! while it runs, not only when a batch fills), the first failure is kept, reported at once
//! (the engine halts the run on it) and returned by the producer's next call, and the run's
//! end is still written after it.
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
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::record::{Record, RunEnd, RunInfo, Sink, SinkError};
use crate::sample::Sample;

/// Records handed over at a time by one producer: one channel operation (and at most one
/// wake-up of the other thread) per batch instead of per record.
const BATCH: usize = 256;

/// Batches the channel holds before one producer waits for the sink.
const QUEUED_BATCHES: usize = 4;

/// How long the thread waits for a record before it asks the sink to flush.
const IDLE: Duration = Duration::from_millis(200);

/// How long the thread naps after a record from many producers before it takes what has
/// arrived since. A thread blocked in `recv` is woken (a futex call on each side) by every
/// record; under load that is tens of thousands of wake-ups a second, which cost the client
/// more CPU than the inserts. Napping lets the records of a few milliseconds gather and be
/// taken with one wake-up.
const GATHER: Duration = Duration::from_millis(5);

/// Who sends records, which decides the channel and where records are gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producers {
    /// One producer that may wait: batches gathered on its side, a bounded channel.
    One,
    /// Many producers that must never wait: [`Records`] on an unbounded channel, records
    /// gathered on the thread's side.
    Many,
}

/// What goes through the channel, two words at most: a sample is already boxed, and the
/// rarer records, batches and the end are boxed here. The channel copies each message into
/// blocks it allocates (and zeroes) every 31 messages, so a message the size of a `Record`
/// (its trial record is 192 bytes) cost the sending workers about 1% of a load run's CPU.
enum Message {
    Work(Work),
    Finish(Box<RunEnd>),
}

/// What the thread does for a producer before the end.
enum Work {
    Begin(Box<RunInfo>),
    Sample(Box<Sample>),
    Record(Box<Record>),
    Batch(Box<[Record]>),
    Flush,
}

impl Work {
    fn apply(self, sink: &mut impl Sink) -> Result<(), SinkError> {
        match self {
            Work::Begin(info) => sink.begin(&info),
            Work::Sample(sample) => sink.record(Record::Sample(sample)),
            Work::Record(record) => sink.record(*record),
            Work::Batch(records) => records
                .into_vec()
                .into_iter()
                .try_for_each(|record| sink.record(record)),
            Work::Flush => sink.flush(),
        }
    }
}

/// The sending end, bounded or not as the [`Producers`] ask.
#[derive(Clone)]
enum Outbox {
    Bounded(SyncSender<Message>),
    Unbounded(mpsc::Sender<Message>),
}

impl Outbox {
    fn send(&self, message: Message) -> Result<(), SinkError> {
        let sent = match self {
            Outbox::Bounded(sender) => sender.send(message).map_err(drop),
            Outbox::Unbounded(sender) => sender.send(message).map_err(drop),
        };
        sent.map_err(|()| crashed())
    }
}

/// Where producers send records; cheap to clone, one per task.
#[derive(Clone)]
pub struct Records(Outbox);

impl Records {
    /// Sends a record to the sink. After a sink failure records are dropped; the failure is
    /// reported when the run ends, and what was committed stays.
    pub fn send(&self, record: Record) {
        let message = match record {
            Record::Sample(sample) => Work::Sample(sample),
            record => Work::Record(Box::new(record)),
        };
        let _ = self.0.send(Message::Work(message));
    }
}

/// Who hears of the sink's first failure at once, on its thread.
type Report = Box<dyn Fn(&SinkError) + Send + Sync>;

/// The sink's first failure, kept for the producers and reported to whoever asked.
struct Failure {
    first: Mutex<Option<SinkError>>,
    happened: AtomicBool,
    report: Option<Report>,
}

impl Failure {
    fn keep(&self, error: SinkError) {
        if let Some(report) = &self.report {
            report(&error);
        }
        let mut first = self
            .first
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        first.get_or_insert(error);
        self.happened.store(true, Ordering::Release);
    }

    fn happened(&self) -> bool {
        self.happened.load(Ordering::Acquire)
    }

    fn first(&self) -> Option<SinkError> {
        if !self.happened() {
            return None;
        }
        self.first
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

enum State<S> {
    Running {
        outbox: Outbox,
        thread: JoinHandle<(S, Result<(), SinkError>)>,
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
    failure: Arc<Failure>,
}

impl<S: Sink + 'static> SinkThread<S> {
    /// Starts the thread that owns `sink`, for one producer that may wait.
    pub fn spawn(sink: S) -> Result<SinkThread<S>, SinkError> {
        SinkThread::start(sink, Producers::One, None)
    }

    /// Starts the thread that owns `sink`, for many producers that must never wait: they
    /// send through [`SinkThread::records`]. `on_failure` hears of the sink's first failure
    /// at once, on the thread (the engine halts its run then: measuring on would only lose
    /// samples).
    pub fn shared(
        sink: S,
        on_failure: impl Fn(&SinkError) + Send + Sync + 'static,
    ) -> Result<SinkThread<S>, SinkError> {
        SinkThread::start(sink, Producers::Many, Some(Box::new(on_failure)))
    }

    fn start(
        sink: S,
        producers: Producers,
        report: Option<Report>,
    ) -> Result<SinkThread<S>, SinkError> {
        let (outbox, receiver) = match producers {
            Producers::One => {
                let (sender, receiver) = mpsc::sync_channel(QUEUED_BATCHES);
                (Outbox::Bounded(sender), receiver)
            }
            Producers::Many => {
                let (sender, receiver) = mpsc::channel();
                (Outbox::Unbounded(sender), receiver)
            }
        };
        let failure = Arc::new(Failure {
            first: Mutex::default(),
            happened: AtomicBool::default(),
            report,
        });
        let kept = failure.clone();
        let gather = (producers == Producers::Many).then_some(GATHER);
        let thread = std::thread::Builder::new()
            .name("tlslab-sink".into())
            .spawn(move || write(sink, &receiver, &kept, gather))
            .map_err(|error| {
                SinkError::with_source(
                    "cannot start the results writer's thread",
                    "check the process limits (ulimit -u)",
                    error,
                )
            })?;
        Ok(SinkThread {
            state: State::Running { outbox, thread },
            batch: Vec::with_capacity(BATCH),
            failure,
        })
    }

    /// A sender for one more producer.
    pub fn records(&self) -> Records {
        match &self.state {
            State::Running { outbox, .. } => Records(outbox.clone()),
            // A sender whose receiver is gone: what it sends is dropped, as after a failure.
            State::Joined(_) => Records(Outbox::Unbounded(mpsc::channel().0)),
        }
    }

    /// The sink's first failure, if it failed.
    pub fn failure(&self) -> Option<SinkError> {
        self.failure.first()
    }

    /// The sink, once [`Sink::finish`] has brought it back (not if its thread crashed).
    pub fn into_inner(self) -> Option<S> {
        match self.state {
            State::Joined(sink) => sink,
            State::Running { .. } => None,
        }
    }

    fn send(&mut self, message: Message) -> Result<(), SinkError> {
        let State::Running { outbox, .. } = &self.state else {
            return Err(finished());
        };
        outbox.send(message)?;
        self.failure().map_or(Ok(()), Err)
    }

    fn send_batch(&mut self) -> Result<(), SinkError> {
        if self.batch.is_empty() {
            return self.failure().map_or(Ok(()), Err);
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.send(Message::Work(Work::Batch(batch.into_boxed_slice())))
    }
}

impl<S: Sink + 'static> Sink for SinkThread<S> {
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError> {
        self.send(Message::Work(Work::Begin(Box::new(info.clone()))))
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
        self.send(Message::Work(Work::Flush))
    }

    /// Hands over the last records and the end, and waits until the thread wrote them (the
    /// records other producers sent before it included: they are ahead of it in the channel).
    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        // The end goes over even when the batch's answer is the sink's failure.
        let batch_sent = self.send_batch();
        let end_sent = self.send(Message::Finish(Box::new(end.clone())));
        let sent = batch_sent.and(end_sent);
        let state = std::mem::replace(&mut self.state, State::Joined(None));
        let State::Running { outbox, thread } = state else {
            return Err(finished());
        };
        drop(outbox);
        let (sink, ended) = match thread.join() {
            Ok(joined) => joined,
            Err(_) => return Err(crashed()),
        };
        self.state = State::Joined(Some(sink));
        match (self.failure(), sent) {
            (Some(error), _) => Err(error),
            (None, Err(error)) => Err(error),
            (None, Ok(())) => ended,
        }
    }
}

/// The thread: each message in order, a flush when the producers are quiet, the end last.
/// After the first failure it only drains the channel, so that no producer waits on a sink
/// that has stopped, but the end is still written, so that the store says how the run ended.
/// With `gather`, it naps that long after a record when nothing else is waiting.
fn write<S: Sink>(
    mut sink: S,
    receiver: &Receiver<Message>,
    failure: &Failure,
    gather: Option<Duration>,
) -> (S, Result<(), SinkError>) {
    let mut gathered = false;
    loop {
        let received = match receiver.try_recv() {
            Ok(message) => Ok(message),
            Err(TryRecvError::Empty) if gathered => {
                gathered = false;
                if let Some(nap) = gather {
                    std::thread::sleep(nap);
                }
                continue;
            }
            Err(_) => receiver.recv_timeout(IDLE),
        };
        let written = match received {
            Ok(Message::Finish(end)) => {
                let ended = sink.finish(&end);
                return (sink, ended);
            }
            Err(RecvTimeoutError::Disconnected) => return (sink, Ok(())),
            _ if failure.happened() => Ok(()),
            Err(RecvTimeoutError::Timeout) => sink.flush(),
            Ok(Message::Work(work)) => {
                gathered = gather.is_some();
                work.apply(&mut sink)
            }
        };
        if let Err(error) = written {
            failure.keep(error);
        }
    }
}

fn crashed() -> SinkError {
    SinkError::new(
        "the results writer's thread stopped",
        "report this as a bug; the samples committed before it are kept",
    )
}

fn finished() -> SinkError {
    SinkError::new("the results writer has finished", "report this as a bug")
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
                return Err(SinkError::new("disk full", "free some space"));
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
