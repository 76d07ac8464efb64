//! A packet capture, as any bytes: reading it (pcap or pcapng, compressed or not, any link
//! type) and analysing every TCP and QUIC connection in it gives Samples or an error, never a
//! panic and never more memory than the connections in progress need.

use tlslab_capture::{packets, Analyser};
use tlslab_core::{Record, RunEnd, RunInfo, Sink, SinkError};

/// Takes every record and keeps none.
struct Discard;

impl Sink for Discard {
    fn begin(&mut self, _: &RunInfo) -> Result<(), SinkError> {
        Ok(())
    }
    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        if let Record::Sample(sample) = record {
            // Whatever the bytes, a Sample's events are times since its start (a capture
            // point that cannot see the client's events leaves them all empty).
            let timeline = &sample.timeline;
            let any = tlslab_core::Event::ALL
                .iter()
                .any(|event| timeline.get(*event).is_some());
            assert!(!any || timeline.get(tlslab_core::Event::Start) == Some(0));
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    fn finish(&mut self, _: &RunEnd) -> Result<(), SinkError> {
        Ok(())
    }
}

pub fn check(bytes: &[u8]) {
    let mut sink = Discard;
    let mut analyser = Analyser::new(&mut sink);
    let _ = packets::read_from(bytes, "fuzz", |segment| analyser.segment(0, segment));
    let _ = analyser.finish();
}
