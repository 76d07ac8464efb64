//! Bytes that remember when they were seen: the buffer under both framing layers (TLS
//! records from TCP payloads, handshake messages from records), so each record and each
//! message gets the capture time of its first and its last byte.

use std::collections::VecDeque;

/// A byte queue whose runs carry the times of their first and last byte.
#[derive(Debug, Default)]
pub struct TimedBuffer {
    bytes: Vec<u8>,
    /// Bytes at the front already taken.
    consumed: usize,
    /// Runs of `bytes`: where each ends, and its first and last times.
    runs: VecDeque<(usize, u64, u64)>,
}

impl TimedBuffer {
    pub fn push(&mut self, bytes: &[u8], first: u64, last: u64) {
        if bytes.is_empty() {
            return;
        }
        self.bytes.extend_from_slice(bytes);
        self.runs.push_back((self.bytes.len(), first, last));
    }

    /// The bytes not yet taken.
    pub fn available(&self) -> &[u8] {
        &self.bytes[self.consumed..]
    }

    /// The first time of the byte at `offset` and the last time of the byte at `end - 1`
    /// (offsets into [`available`](Self::available); `end > offset`).
    pub fn times(&self, offset: usize, end: usize) -> (u64, u64) {
        let start = self.consumed + offset;
        let last_byte = self.consumed + end.max(offset + 1) - 1;
        let run_of = |position: usize| {
            self.runs
                .iter()
                .find(|(run_end, _, _)| position < *run_end)
                .or(self.runs.back())
                .map_or((0, 0), |&(_, first, last)| (first, last))
        };
        (run_of(start).0, run_of(last_byte).1)
    }

    /// Takes `count` bytes from the front.
    pub fn consume(&mut self, count: usize) {
        self.consumed = (self.consumed + count).min(self.bytes.len());
        while self
            .runs
            .front()
            .is_some_and(|(end, _, _)| *end <= self.consumed)
        {
            self.runs.pop_front();
        }
        // Move the rest to the front once the taken part dominates.
        if self.consumed > 4096 && self.consumed * 2 > self.bytes.len() {
            self.bytes.drain(..self.consumed);
            for run in &mut self.runs {
                run.0 -= self.consumed;
            }
            self.consumed = 0;
        }
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.runs.clear();
        self.consumed = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_take_the_first_time_of_their_first_run_and_the_last_of_their_last() {
        let mut buffer = TimedBuffer::default();
        buffer.push(b"abc", 10, 10);
        buffer.push(b"defg", 20, 25);
        assert_eq!(buffer.times(0, 3), (10, 10));
        assert_eq!(buffer.times(1, 5), (10, 25));
        buffer.consume(4);
        assert_eq!(buffer.available(), b"efg");
        assert_eq!(buffer.times(0, 3), (20, 25));
        buffer.consume(3);
        assert!(buffer.available().is_empty());
    }

    #[test]
    fn compaction_keeps_times_with_their_bytes() {
        let mut buffer = TimedBuffer::default();
        buffer.push(&[0; 5000], 1, 1);
        buffer.push(b"tail", 2, 3);
        buffer.consume(5001);
        assert_eq!(buffer.available(), b"ail");
        assert_eq!(buffer.times(0, 3), (2, 3));
    }
}
