//! The writer: a thread that owns the [`Sink`], so a slow disk never stalls an attempt.
//! Records reach it over a channel; when none arrived for a while it lets the sink commit a
//! partial batch.
//!
//! It is not core's [`SinkThread`](tlslab_core::SinkThread), which serves one producer that
//! may wait (`tlslab pcap` decoding a file): that one batches on the producer's side and
//! hands batches over a bounded channel, so the producer blocks when the sink is slower. Here
//! thousands of agent tasks send, each from a runtime thread that must never block (a blocked
//! worker delays every attempt on it, and the delay would be measured as handshake time), so
//! [`Records`] is a cloneable sender on an unbounded channel; records are gathered on the
//! writer's side instead, the sink is flushed when the agents go quiet (so a run's samples
//! are committed while it runs, not only when a batch fills), and the first failure requests
//! a halt of the run at once.

use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tlslab_core::{Record, RunEnd, RunInfo, Sink, SinkError};

use crate::error::RunError;
use crate::stop::Stop;

/// How long the writer waits for a record before it asks the sink to flush.
const IDLE: Duration = Duration::from_millis(200);

/// How long the writer naps after a record before it takes what has arrived since. A writer
/// blocked in `recv` is woken (a futex call on each side) by every record; under load that is
/// tens of thousands of wake-ups a second, which cost the client more CPU than the inserts.
/// Napping lets the records of a few milliseconds gather and be taken with one wake-up.
const GATHER: Duration = Duration::from_millis(5);

/// What goes through the channel, two words at most: a sample is already boxed, and the
/// rarer records and the end are boxed here. The channel copies each message into blocks it
/// allocates (and zeroes) every 31 messages, so a message the size of a `Record` (its trial
/// record is 192 bytes) cost the sending workers about 1% of a load run's CPU.
enum Message {
    Sample(Box<tlslab_core::Sample>),
    Record(Box<Record>),
    Finish(Box<RunEnd>),
}

/// Where producers send records; cheap to clone, one per task.
#[derive(Clone)]
pub struct Records(mpsc::Sender<Message>);

impl Records {
    /// Sends a record to the sink. After a sink failure records are dropped; the failure is
    /// reported when the run ends, and what was committed stays.
    pub fn send(&self, record: Record) {
        let message = match record {
            Record::Sample(sample) => Message::Sample(sample),
            record => Message::Record(Box::new(record)),
        };
        let _ = self.0.send(message);
    }
}

/// The running writer thread.
pub struct Writer {
    records: Records,
    thread: JoinHandle<Result<(), SinkError>>,
    failure: Arc<Mutex<Option<SinkError>>>,
}

impl Writer {
    /// Writes `info` into `sink`, then starts the thread that takes every later record. The
    /// first record the sink refuses (a full disk) requests `halt`: measuring on would only
    /// lose samples.
    pub fn start(mut sink: Box<dyn Sink>, info: &RunInfo, halt: Stop) -> Result<Writer, RunError> {
        sink.begin(info).map_err(|error| {
            RunError::environment(
                "cannot write results",
                "check the --out path and free disk space",
            )
            .because(error)
        })?;
        let (sender, receiver) = mpsc::channel::<Message>();
        let failure: Arc<Mutex<Option<SinkError>>> = Arc::default();
        let reported = failure.clone();
        let on_failure = move |error: &SinkError| {
            let mut slot = reported.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert_with(|| error.clone());
            halt.request();
        };
        let thread = std::thread::Builder::new()
            .name("tlslab-sink".into())
            .spawn(move || write(sink.as_mut(), &receiver, on_failure))
            .map_err(|error| {
                RunError::environment("cannot start the writer thread", "check the process limits")
                    .because(error)
            })?;
        Ok(Writer {
            records: Records(sender),
            thread,
            failure,
        })
    }

    /// The sink's first failure, as the error that stops the run.
    pub fn failure(&self) -> Option<RunError> {
        let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.as_ref().map(writing_failed)
    }

    /// A new sender for records, for one more producer.
    pub fn records(&self) -> Records {
        self.records.clone()
    }

    /// Hands the sink the run's end and waits until everything is written.
    pub fn finish(self, end: RunEnd) -> Result<(), RunError> {
        let _ = self.records.0.send(Message::Finish(Box::new(end)));
        drop(self.records);
        match self.thread.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(writing_failed(&error)),
            Err(_) => Err(RunError::environment(
                "the results writer crashed",
                "report this as a bug",
            )),
        }
    }
}

/// The sink's failure as the run's error.
fn writing_failed(error: &SinkError) -> RunError {
    RunError::Writing(error.clone())
}

/// The writer thread's loop: records in order, flushes when idle, the end last. The first
/// failure stops further records (and is reported to `on_failure` at once) but not the end,
/// so the store still says how the run ended.
fn write(
    sink: &mut dyn Sink,
    receiver: &mpsc::Receiver<Message>,
    on_failure: impl Fn(&SinkError),
) -> Result<(), SinkError> {
    let mut failed: Option<SinkError> = None;
    let mut gathered = false;
    loop {
        let received = match receiver.try_recv() {
            Ok(message) => Ok(message),
            // Nothing waiting: after a record, nap once so that the next ones gather;
            // otherwise block until one comes (or it is time to flush).
            Err(mpsc::TryRecvError::Empty) if gathered => {
                gathered = false;
                std::thread::sleep(GATHER);
                continue;
            }
            Err(_) => receiver.recv_timeout(IDLE),
        };
        let received = received.map(|message| match message {
            Message::Sample(sample) => Ok(Record::Sample(sample)),
            Message::Record(record) => Ok(*record),
            Message::Finish(end) => Err(end),
        });
        match received {
            Ok(Ok(record)) if failed.is_none() => {
                gathered = true;
                failed = sink.record(record).err();
                failed.iter().for_each(&on_failure);
            }
            Ok(Ok(_)) => {}
            Ok(Err(end)) => {
                sink.finish(&end)?;
                return failed.map_or(Ok(()), Err);
            }
            Err(mpsc::RecvTimeoutError::Timeout) if failed.is_none() => {
                failed = sink.flush().err();
                failed.iter().for_each(&on_failure);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return failed.map_or(Ok(()), Err),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps everything in memory, and can be told to fail.
    #[derive(Default, Clone)]
    pub(crate) struct Memory {
        pub records: Arc<Mutex<Vec<Record>>>,
        pub end: Arc<Mutex<Option<RunEnd>>>,
        pub fail_after: Option<usize>,
    }

    impl Sink for Memory {
        fn begin(&mut self, _: &RunInfo) -> Result<(), SinkError> {
            Ok(())
        }

        fn record(&mut self, record: Record) -> Result<(), SinkError> {
            let mut records = self.records.lock().unwrap();
            if self.fail_after.is_some_and(|limit| records.len() >= limit) {
                return Err(SinkError {
                    message: "disk full".into(),
                    hint: "free some space".into(),
                });
            }
            records.push(record);
            Ok(())
        }

        fn flush(&mut self) -> Result<(), SinkError> {
            Ok(())
        }

        fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
            *self.end.lock().unwrap() = Some(end.clone());
            Ok(())
        }
    }

    pub(crate) fn info() -> RunInfo {
        let experiment = tlslab_core::Experiment::default();
        let configs = experiment.configs().unwrap();
        RunInfo {
            source: tlslab_core::Source::Active,
            plan: Some(tlslab_core::Plan::new(&experiment, &configs, 1)),
            experiment: Some(experiment),
            configs: configs
                .iter()
                .map(|config| config.record("127.0.0.1:0".into(), None))
                .collect(),
            environment: crate::environment::capture("test", "test"),
            command_line: Vec::new(),
            started_at_unix_ns: 0,
        }
    }

    fn stop(config: usize) -> Record {
        Record::Stopped(tlslab_core::EarlyStop {
            config,
            round: 1,
            samples: 20,
            relative_half_width: 0.01,
        })
    }

    fn end() -> RunEnd {
        RunEnd {
            complete: true,
            reason: None,
            duration_ns: 1,
            attempted: 2,
            errors: 0,
        }
    }

    #[test]
    fn records_arrive_in_order_and_the_end_last() {
        let memory = Memory::default();
        let writer = Writer::start(Box::new(memory.clone()), &info(), Stop::new()).unwrap();
        let records = writer.records();
        records.send(stop(0));
        records.send(stop(1));
        writer.finish(end()).unwrap();
        let kept = memory.records.lock().unwrap();
        assert!(
            matches!(kept[..], [Record::Stopped(a), Record::Stopped(b)] if a.config == 0 && b.config == 1)
        );
        assert_eq!(*memory.end.lock().unwrap(), Some(end()));
    }

    #[test]
    fn a_failing_sink_keeps_what_it_took_records_the_end_and_reports_it() {
        let memory = Memory {
            fail_after: Some(1),
            ..Memory::default()
        };
        let halt = Stop::new();
        let writer = Writer::start(Box::new(memory.clone()), &info(), halt.clone()).unwrap();
        for config in 0..3 {
            writer.records().send(stop(config));
        }
        // The first refusal halts the producer at once, and says why.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(halt.is_requested());
        assert!(writer
            .failure()
            .unwrap()
            .message_with_causes()
            .contains("disk full"));
        let error = writer.finish(end()).unwrap_err();
        assert!(error.message_with_causes().contains("disk full"), "{error}");
        assert_eq!(memory.records.lock().unwrap().len(), 1);
        assert!(memory.end.lock().unwrap().is_some());
    }
}
