//! The run's writer: core's [`SinkThread`] for many producers (thousands of agent tasks that
//! must never wait on the disk), begun before the first handshake so that a store that
//! cannot be written is refused at once, and halting the run on the sink's first failure.

pub use tlslab_core::Records;
use tlslab_core::{RunEnd, RunInfo, Sink, SinkError, SinkThread};

use crate::error::RunError;
use crate::stop::Stop;

/// The running writer thread.
pub struct Writer {
    thread: SinkThread<Box<dyn Sink>>,
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
        let thread =
            SinkThread::shared(sink, move |_: &SinkError| halt.request()).map_err(|error| {
                RunError::environment("cannot start the writer thread", "check the process limits")
                    .because(error)
            })?;
        Ok(Writer { thread })
    }

    /// The sink's first failure, as the error that stops the run.
    pub fn failure(&self) -> Option<RunError> {
        self.thread.failure().map(RunError::Writing)
    }

    /// A new sender for records, for one more producer.
    pub fn records(&self) -> Records {
        self.thread.records()
    }

    /// Hands the sink the run's end and waits until everything is written.
    pub fn finish(mut self, end: RunEnd) -> Result<(), RunError> {
        self.thread.finish(&end).map_err(RunError::Writing)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tlslab_core::Record;

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
                return Err(SinkError::new("disk full", "free some space"));
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
