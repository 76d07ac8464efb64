//! One direction of a TCP connection, put back in order.
//!
//! Hand-written because the reassembly a timing tool needs is not what the reassembly crates
//! give: every byte keeps the capture time of the packet that carried it (a retransmission's
//! time when the first copy never passed the capture point), bytes already delivered are
//! counted as retransmitted and dropped, and a hole the capture never fills is skipped and
//! counted, never filled with invented bytes. Only the start of a stream matters here (the
//! handshake and the first response bytes), so offsets are kept in 64 bits from the first
//! sequence number and out-of-order data is bounded.

use std::collections::BTreeMap;

/// Out-of-order bytes kept while waiting for a hole to fill; beyond this the hole is
/// declared lost.
const MAX_PENDING_BYTES: usize = 1 << 20;

/// Bytes in stream order, each run with the capture time of the packet that carried it.
#[derive(Debug, Default)]
pub struct Stream {
    /// The sequence number of stream offset 0 (the SYN's plus one), once known.
    start: Option<u32>,
    /// Stream bytes delivered so far.
    delivered: u64,
    /// Segments ahead of a hole, by stream offset.
    pending: BTreeMap<u64, (Vec<u8>, u64)>,
    pending_bytes: usize,
    /// Segments that carried only bytes already delivered (retransmissions, overlaps).
    pub retransmissions: u64,
    /// Bytes skipped because the capture never saw them.
    pub missing_bytes: u64,
    /// The furthest stream offset any segment of this direction reached, data or not (an
    /// ACK or a FIN carries the sequence number of the next byte), or that the other
    /// direction acknowledged: past `delivered`, the sender sent bytes the capture does not
    /// hold.
    furthest: u64,
    /// Whether this direction's FIN was seen: an acknowledgment counts it as a byte.
    fin: bool,
}

impl Stream {
    /// The SYN (or SYN-ACK) carried sequence number `sequence`: data starts after it.
    pub fn syn(&mut self, sequence: u32) {
        if self.start.is_none() {
            self.start = Some(sequence.wrapping_add(1));
        }
    }

    /// Every segment of this direction, with or without data: how far its sequence number
    /// says the sender got.
    pub fn reached(&mut self, sequence: u32, length: usize) {
        let Some(start) = self.start else {
            return;
        };
        let relative = sequence.wrapping_sub(start);
        // A segment from before the start (the SYN's own number, an old retransmission).
        if relative < 1 << 31 {
            self.furthest = self.furthest.max(u64::from(relative) + length as u64);
        }
    }

    /// The other direction acknowledged this one's bytes up to `acknowledgment` (the next
    /// sequence number it expects; a FIN counts as one).
    pub fn acknowledged(&mut self, acknowledgment: u32) {
        let fin = u32::from(self.fin);
        self.reached(acknowledgment.wrapping_sub(fin), 0);
    }

    /// This direction's FIN, at `sequence` (after `length` bytes of data in its segment).
    pub fn fin(&mut self, sequence: u32, length: usize) {
        self.fin = true;
        self.reached(sequence, length);
    }

    /// Whether the sender sent bytes the capture does not hold: a hole skipped or still
    /// open, or a later segment whose sequence or acknowledgment number is past the bytes
    /// seen (a capture filtered to some packets, as tshark's "ACKed unseen segment", or one
    /// that lost packets before the capture point).
    pub fn absent(&self) -> bool {
        self.missing_bytes > 0 || !self.pending.is_empty() || self.furthest > self.delivered
    }

    #[cfg(test)]
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// A segment of `payload` at `sequence`, captured at `timestamp`: hands every byte that is
    /// now in order to `deliver`, with the time of the packet that carried it.
    pub fn push(
        &mut self,
        sequence: u32,
        payload: &[u8],
        timestamp: u64,
        deliver: &mut impl FnMut(&[u8], u64),
    ) {
        if payload.is_empty() {
            return;
        }
        // Without a SYN, the stream starts at the first segment seen.
        let start = *self.start.get_or_insert(sequence);
        self.reached(sequence, payload.len());
        let relative = sequence.wrapping_sub(start);
        // More than 2 GiB "ahead" is a segment from before the start (an old
        // retransmission); nothing here gets that far into a stream.
        if relative >= 1 << 31 {
            self.retransmissions += 1;
            return;
        }
        let offset = u64::from(relative);
        let end = offset + payload.len() as u64;
        if end <= self.delivered {
            self.retransmissions += 1;
            return;
        }
        if offset > self.delivered {
            if !self.pending.contains_key(&offset) {
                self.pending_bytes += payload.len();
                self.pending.insert(offset, (payload.to_vec(), timestamp));
            } else {
                self.retransmissions += 1;
            }
            if self.pending_bytes > MAX_PENDING_BYTES {
                self.skip_hole(deliver);
            }
            return;
        }
        if offset < self.delivered {
            // Part of it was seen: an overlapping retransmission.
            self.retransmissions += 1;
        }
        let fresh = &payload[(self.delivered - offset) as usize..];
        self.delivered += fresh.len() as u64;
        deliver(fresh, timestamp);
        self.drain(deliver);
    }

    /// Delivers pending segments that the stream has reached.
    fn drain(&mut self, deliver: &mut impl FnMut(&[u8], u64)) {
        while let Some(entry) = self.pending.first_entry() {
            let offset = *entry.key();
            if offset > self.delivered {
                break;
            }
            let (bytes, timestamp) = entry.remove();
            self.pending_bytes -= bytes.len();
            let end = offset + bytes.len() as u64;
            if end <= self.delivered {
                self.retransmissions += 1;
                continue;
            }
            let fresh = &bytes[(self.delivered - offset) as usize..];
            self.delivered = end;
            deliver(fresh, timestamp);
        }
    }

    /// Gives up on the first hole: counts its bytes as missing and delivers what follows.
    /// Returns whether there was a hole.
    pub fn skip_hole(&mut self, deliver: &mut impl FnMut(&[u8], u64)) -> bool {
        let Some((&offset, _)) = self.pending.first_key_value() else {
            return false;
        };
        self.missing_bytes += offset.saturating_sub(self.delivered);
        self.delivered = self.delivered.max(offset);
        self.drain(deliver);
        true
    }

    /// Whether bytes wait behind a hole.
    #[cfg(test)]
    pub fn has_hole(&self) -> bool {
        !self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(stream: &mut Stream, segments: &[(u32, &[u8], u64)]) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        for &(sequence, payload, timestamp) in segments {
            stream.push(sequence, payload, timestamp, &mut |bytes, at| {
                out.push((bytes.to_vec(), at))
            });
        }
        out
    }

    #[test]
    fn reordered_segments_come_out_in_order_with_their_own_times() {
        let mut stream = Stream::default();
        stream.syn(99);
        let out = collect(
            &mut stream,
            &[(100, b"ab", 1), (104, b"ef", 2), (102, b"cd", 3)],
        );
        assert_eq!(
            out,
            [
                (b"ab".to_vec(), 1),
                (b"cd".to_vec(), 3),
                (b"ef".to_vec(), 2)
            ]
        );
        assert_eq!(stream.delivered(), 6);
        assert_eq!(stream.retransmissions, 0);
    }

    #[test]
    fn retransmissions_and_overlaps_are_counted_not_delivered_twice() {
        let mut stream = Stream::default();
        stream.syn(u32::MAX); // the stream starts at 0, across the wrap
        let out = collect(
            &mut stream,
            &[
                (0, b"abcd", 1),
                (0, b"abcd", 2),
                (2, b"cdef", 3),
                (4, b"ef", 4),
            ],
        );
        assert_eq!(out, [(b"abcd".to_vec(), 1), (b"ef".to_vec(), 3)]);
        assert_eq!(stream.retransmissions, 3);
    }

    #[test]
    fn a_hole_the_capture_never_fills_is_skipped_and_counted() {
        let mut stream = Stream::default();
        stream.syn(0);
        let out = collect(&mut stream, &[(1, b"ab", 1), (6, b"gh", 2)]);
        assert_eq!(out.len(), 1);
        assert!(stream.has_hole());
        let mut rest = Vec::new();
        assert!(stream.skip_hole(&mut |bytes, at| rest.push((bytes.to_vec(), at))));
        assert_eq!(rest, [(b"gh".to_vec(), 2)]);
        assert_eq!(stream.missing_bytes, 3);
        assert!(!stream.has_hole());
    }

    #[test]
    fn a_later_segment_past_the_bytes_seen_says_bytes_are_absent() {
        let mut stream = Stream::default();
        stream.syn(99);
        collect(&mut stream, &[(100, b"hello", 1)]);
        // An ACK and a keep-alive probe at or before the bytes seen: nothing absent.
        stream.reached(105, 0);
        stream.reached(104, 1);
        stream.reached(99, 0);
        assert!(!stream.absent());
        // A FIN after ten bytes the capture left out (a filter on the record type).
        stream.reached(115, 0);
        assert!(stream.absent());

        // The other side acknowledging the bytes seen and the FIN: nothing absent; bytes
        // past them: absent.
        let mut stream = Stream::default();
        stream.syn(99);
        collect(&mut stream, &[(100, b"hello", 1)]);
        stream.fin(105, 0);
        stream.acknowledged(106);
        assert!(!stream.absent());
        stream.acknowledged(150);
        assert!(stream.absent());
    }

    #[test]
    fn without_a_syn_the_first_segment_starts_the_stream() {
        let mut stream = Stream::default();
        let out = collect(&mut stream, &[(5000, b"xy", 7), (4990, b"old", 8)]);
        assert_eq!(out, [(b"xy".to_vec(), 7)]);
        assert_eq!(stream.retransmissions, 1);
    }
}
