//! The values a run's summaries read, kept by its writer as it stores them.
//!
//! Right after a run, `tlslab run` and `tlslab load` summarise it: every measured sample's
//! timings, counts and status, read back from the file just written. Reading them back cost
//! the summaries most of their time (SQLite decodes every column of every row: about 0.3 µs a
//! request for each of the two summaries of a load run, a tenth of the client's CPU, and as
//! much wall time after the run as building the index). The writer has each value in hand
//! when it inserts it, so it keeps the columns the summaries read, compactly (and counts the
//! negotiations), and [`Store::with_kept`](crate::Store::with_kept) answers
//! [`Store::phases_values`], [`Store::for_each_request`] and [`Store::negotiated`] from them,
//! with exactly the values a query would return; the counts of outcomes, resumptions, early
//! data and ECH ([`Store::outcome_counts`] and its neighbours) too, each of which was a read of
//! every row.
//!
//! What is kept is what was committed: a write that fails (a full disk) gives up keeping, as
//! does a run whose values outgrow [`KEPT_BYTES`] (its summaries then read the file, as
//! before), so memory stays bounded however long the run; a run planned to measure more than
//! [`KEPT_SAMPLES`] keeps nothing from its start.
//!
//! [`Store::phases_values`]: crate::Store::phases_values
//! [`Store::for_each_request`]: crate::Store::for_each_request
//! [`Store::negotiated`]: crate::Store::negotiated
//! [`Store::outcome_counts`]: crate::Store::outcome_counts

// foldhash: the writer looks a sample's Config up here several times per sample, and
// SipHash (std's, made to resist flooding, which Config numbers cannot do) showed there.
use foldhash::{HashMap, HashMapExt};
use std::sync::{Arc, Mutex};

use tlslab_core::{Phase, Sample};

use crate::columns::Cell;
use crate::{most_negotiated, NegotiatedRow, Negotiations, RequestRow, MEASURED_COUNTS};

/// The most memory the kept values may take: about 250,000 requests of a load run on kept
/// connections (at most 64 bytes each, and room to grow), or 100,000 full handshakes. A longer run's
/// summaries read the store.
pub const KEPT_BYTES: usize = 16 << 20;

/// The most measured samples a run may plan for its values to be kept: past it, they would
/// outgrow [`KEPT_BYTES`] (and be dropped) on the way, so they are not kept from the start.
pub const KEPT_SAMPLES: u64 = 250_000;

/// The columns [`RequestRow`] is made of, besides the outcome and the error.
const REQUEST_COLUMNS: [&str; 8] = [
    "http_status",
    "response_bytes",
    "response_wire_bytes",
    "connection_request",
    "tcp_connected",
    "handshake_done",
    "first_byte",
    "response_done",
];

/// A mask's bit for a sample that succeeded; the bits below it say which kept columns the
/// sample filled.
const OK: u32 = 1 << 31;

/// The columns kept: every one a run summary reads with `phases_values` (the counts, the
/// handshake, time to first byte, each phase, the total, an open loop's figures) and a load
/// summary's requests.
pub(crate) fn kept_columns() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = MEASURED_COUNTS
        .into_iter()
        // An open loop's schedule and latency too.
        .chain(["handshake", "ttfb", "total", "schedule_delay", "latency"])
        .chain(Phase::PARTS.iter().map(|phase| phase.name()))
        .collect();
    for name in REQUEST_COLUMNS {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// One Config's measured samples, in the order they were stored.
#[derive(Default)]
struct Samples {
    /// Per sample: which kept columns it filled (bit i: column i), and [`OK`].
    masks: Vec<u32>,
    /// The filled values, sample after sample, each sample's in the order of its columns'
    /// bits, each as a zigzag LEB128 varint ([`push_varint`]).
    values: Vec<u8>,
    /// The error class of each sample that did not succeed, in order.
    errors: Vec<Option<String>>,
}

impl Samples {
    fn bytes(&self) -> usize {
        self.masks.capacity() * 4
            + self.values.capacity()
            + self.errors.capacity() * std::mem::size_of::<Option<String>>()
    }

    /// Hands `each` every sample's mask and its values, in order.
    fn for_each(&self, mut each: impl FnMut(u32, &[i64])) {
        let mut at = 0;
        let mut values = [0i64; 31];
        for &mask in &self.masks {
            let count = (mask & !OK).count_ones() as usize;
            for value in &mut values[..count] {
                *value = read_varint(&self.values, &mut at);
            }
            each(mask, &values[..count]);
        }
    }
}

/// Appends `value` to `bytes` as a zigzag LEB128 varint: seven bits a byte, the small
/// magnitudes the kept values mostly have (a status, a byte count, microseconds to
/// milliseconds in nanoseconds) in two or three bytes instead of eight. A database's Configs
/// read once (`read.rs`) hold a Config's values so, and 8 bytes each made a report of
/// 1,000,000 requests from PostgreSQL take twice the memory of the same from a file.
/// (Written here: the format is a dozen lines, and the crates that have it bring far more.)
fn push_varint(bytes: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        bytes.push((zigzag as u8) | 0x80);
        zigzag >>= 7;
    }
    bytes.push(zigzag as u8);
}

/// The varint [`push_varint`] wrote at `*at` in `bytes`, moving `*at` past it.
fn read_varint(bytes: &[u8], at: &mut usize) -> i64 {
    let mut zigzag = 0u64;
    let mut shift = 0;
    while let Some(&byte) = bytes.get(*at) {
        *at += 1;
        if shift < 64 {
            zigzag |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            break;
        }
    }
    ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64)
}

/// The value of kept column `slot` of a sample, from its mask and values.
fn value(mask: u32, values: &[i64], slot: usize) -> Option<i64> {
    let bit = 1u32 << slot;
    (mask & bit != 0).then(|| values[(mask & (bit - 1)).count_ones() as usize])
}

/// How often a Config's successful measured samples resumed, had their early data accepted,
/// and ended with each ECH status: what a summary counts besides the values.
#[derive(Default)]
struct Tallies {
    /// Samples whose `resumed` was 1, and 0.
    resumed: [i64; 2],
    /// Samples whose `early_data_accepted` was 1, and 0.
    early_data: [i64; 2],
    /// Per ECH status, how many ended with it.
    ech: Vec<(String, i64)>,
}

/// A run's kept values (see the module's notes).
pub struct KeptValues {
    names: Vec<&'static str>,
    configs: HashMap<i64, Samples>,
    /// Per Config; `None` when the sink lacks a tallied column.
    tallies: Option<HashMap<i64, Tallies>>,
    /// Per Config, how often each version, suite and group was negotiated (warm-up and
    /// failed samples included, as [`Store::negotiated`](crate::Store::negotiated) counts).
    negotiated: HashMap<i64, Negotiations>,
}

impl KeptValues {
    fn slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|kept| *kept == name)
    }

    /// [`Store::phases_values`](crate::Store::phases_values) of kept columns; `None` when a
    /// name is not kept.
    pub(crate) fn phases_values(&self, config_id: i64, names: &[&str]) -> Option<Vec<Vec<f64>>> {
        let slots = names
            .iter()
            .map(|name| self.slot(name))
            .collect::<Option<Vec<usize>>>()?;
        let Some(samples) = self.configs.get(&config_id) else {
            return Some(vec![Vec::new(); names.len()]);
        };
        let successes = samples.masks.iter().filter(|&&mask| mask & OK != 0).count();
        let mut columns: Vec<Vec<f64>> = (0..names.len())
            .map(|_| Vec::with_capacity(successes))
            .collect();
        samples.for_each(|mask, values| {
            if mask & OK == 0 {
                return;
            }
            for (column, &slot) in columns.iter_mut().zip(&slots) {
                if let Some(value) = value(mask, values, slot) {
                    column.push(value as f64);
                }
            }
        });
        Some(columns)
    }

    /// [`Store::outcome_counts`](crate::Store::outcome_counts) from the kept outcomes and
    /// error classes.
    pub(crate) fn outcome_counts(&self, config_id: i64) -> Vec<(String, i64)> {
        let mut counts: HashMap<&str, i64> = HashMap::new();
        if let Some(samples) = self.configs.get(&config_id) {
            let ok = samples.masks.iter().filter(|&&mask| mask & OK != 0).count() as i64;
            if ok > 0 {
                counts.insert("ok", ok);
            }
            for class in &samples.errors {
                *counts
                    .entry(class.as_deref().unwrap_or(crate::UNCLASSIFIED))
                    .or_insert(0) += 1;
            }
        }
        let mut counts: Vec<(String, i64)> = counts
            .into_iter()
            .map(|(class, count)| (class.to_string(), count))
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts
    }

    fn tallies(&self, config_id: i64) -> Option<Option<&Tallies>> {
        Some(self.tallies.as_ref()?.get(&config_id))
    }

    /// [`Store::resumption_counts`](crate::Store::resumption_counts), when kept.
    pub(crate) fn resumption_counts(&self, config_id: i64) -> Option<(i64, i64)> {
        let [resumed, full] = self.tallies(config_id)?.map_or([0, 0], |t| t.resumed);
        Some((resumed, full))
    }

    /// [`Store::early_data_counts`](crate::Store::early_data_counts), when kept.
    pub(crate) fn early_data_counts(&self, config_id: i64) -> Option<(i64, i64)> {
        let [accepted, rejected] = self.tallies(config_id)?.map_or([0, 0], |t| t.early_data);
        Some((accepted, rejected))
    }

    /// [`Store::ech_counts`](crate::Store::ech_counts), when kept: most frequent first,
    /// then by status.
    pub(crate) fn ech_counts(&self, config_id: i64) -> Option<Vec<(String, i64)>> {
        let mut counts = self
            .tallies(config_id)?
            .map(|tallies| tallies.ech.clone())
            .unwrap_or_default();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Some(counts)
    }

    /// [`Store::negotiated`](crate::Store::negotiated) from the kept counts.
    pub(crate) fn negotiated(&self, config_id: i64) -> Option<NegotiatedRow> {
        most_negotiated(self.negotiated.get(&config_id)?.clone())
    }

    /// [`Store::for_each_request`](crate::Store::for_each_request) from the kept values, in
    /// the order they were kept: as they were stored by a writer, by outcome and then in
    /// sample order (the query's) when read from a database (`read.rs`).
    pub(crate) fn for_each_request(&self, config_id: i64, mut each: impl FnMut(RequestRow)) {
        let Some(samples) = self.configs.get(&config_id) else {
            return;
        };
        // Every request column is kept (`kept_columns`).
        let slots = REQUEST_COLUMNS.map(|name| self.slot(name));
        let mut errors = samples.errors.iter();
        samples.for_each(|mask, values| {
            let get = |index: usize| slots[index].and_then(|slot| value(mask, values, slot));
            let ok = mask & OK != 0;
            each(RequestRow {
                ok,
                error: if ok {
                    None
                } else {
                    errors.next().cloned().flatten()
                },
                status: get(0),
                body_bytes: get(1),
                wire_bytes: get(2),
                connection_request: get(3),
                tcp_connected: get(4),
                handshake_done: get(5),
                first_byte: get(6),
                response_done: get(7),
            });
        });
    }
}

/// Keeps the values of the samples a [`StoreSink`](crate::StoreSink) writes.
pub(crate) struct Keeper {
    kept: KeptValues,
    /// For each of the sink's sample columns, its kept column.
    slots: Vec<Option<u8>>,
    outcome: usize,
    error: usize,
    /// Where the negotiated version, suite and group are among the sink's columns.
    negotiation: [usize; 3],
    /// Where `resumed`, `early_data_accepted` and `ech` are among the sink's columns.
    tallied: Option<[usize; 3]>,
    bytes: usize,
    /// At most [`KEPT_BYTES`] (less in tests).
    limit: usize,
}

impl Keeper {
    /// A keeper for a sink whose sample columns are `columns` (the keys excluded), giving up
    /// past `limit` bytes.
    pub(crate) fn new(columns: &[&str], limit: usize) -> Option<Keeper> {
        let names = kept_columns();
        // Bit 31 of a mask is the outcome (a test checks they fit).
        if names.len() >= 31 {
            return None;
        }
        let slots = columns
            .iter()
            .map(|column| {
                let slot = names.iter().position(|name| name == column)?;
                u8::try_from(slot).ok()
            })
            .collect();
        let position = |name: &str| columns.iter().position(|column| *column == name);
        let tallied = (|| {
            Some([
                position("resumed")?,
                position("early_data_accepted")?,
                position("ech")?,
            ])
        })();
        Some(Keeper {
            outcome: position("outcome")?,
            error: position("error")?,
            negotiation: [position("version")?, position("suite")?, position("group")?],
            tallied,
            kept: KeptValues {
                names,
                configs: HashMap::new(),
                tallies: tallied.map(|_| HashMap::new()),
                negotiated: HashMap::new(),
            },
            slots,
            bytes: 0,
            limit,
        })
    }

    /// Keeps a sample just inserted, whose filled columns (indices into the sink's columns)
    /// and values are `filled` and `cells`. False when keeping is given up: a kept column
    /// holds something other than an integer (which cannot happen today), or the values
    /// outgrew their limit.
    pub(crate) fn keep(&mut self, sample: &Sample, filled: &[usize], cells: &[Cell<'_>]) -> bool {
        self.keep_row(sample.config as i64, sample.warmup, filled, cells)
    }

    /// [`Keeper::keep`] of a row of Config `config`, read back from a store: what a
    /// database's Config read once keeps (`read.rs`).
    pub(crate) fn keep_row(
        &mut self,
        config: i64,
        warmup: bool,
        filled: &[usize],
        cells: &[Cell<'_>],
    ) -> bool {
        self.count_negotiated(config, filled, cells);
        if warmup {
            return true;
        }
        let samples = self.kept.configs.entry(config).or_default();
        let before = samples.bytes();
        let mut mask = 0u32;
        let mut ok = false;
        let mut error = None;
        // The sink's columns are in another order than the kept ones.
        let mut by_slot = [0i64; 31];
        for (&column, cell) in filled.iter().zip(cells) {
            if column == self.outcome {
                ok = matches!(cell, Cell::Text(text) if text == "ok");
            } else if column == self.error {
                if let Cell::Text(text) = cell {
                    error = Some(text.to_string());
                }
            } else if let Some(slot) = self.slots[column] {
                let Cell::Integer(value) = cell else {
                    return false;
                };
                mask |= 1 << slot;
                by_slot[usize::from(slot)] = *value;
            }
        }
        let mut bits = mask;
        while bits != 0 {
            push_varint(&mut samples.values, by_slot[bits.trailing_zeros() as usize]);
            bits &= bits - 1;
        }
        if ok {
            mask |= OK;
        } else {
            samples.errors.push(error);
        }
        samples.masks.push(mask);
        self.bytes = self.bytes + samples.bytes() - before;
        if ok {
            self.tally(config, filled, cells);
        }
        self.bytes <= self.limit
    }

    /// Counts what a successful measured `sample` stored of resumption, early data and ECH.
    fn tally(&mut self, config: i64, filled: &[usize], cells: &[Cell<'_>]) {
        let (Some(columns), Some(tallies)) = (self.tallied, self.kept.tallies.as_mut()) else {
            return;
        };
        let [resumed, early_data, ech] = columns.map(|column| {
            let index = filled.binary_search(&column).ok()?;
            Some(&cells[index])
        });
        let tallies = tallies.entry(config).or_default();
        let flag = |counts: &mut [i64; 2], cell: Option<&Cell<'_>>| match cell {
            Some(Cell::Integer(1)) => counts[0] += 1,
            Some(Cell::Integer(0)) => counts[1] += 1,
            _ => {}
        };
        flag(&mut tallies.resumed, resumed);
        flag(&mut tallies.early_data, early_data);
        if let Some(Cell::Text(status)) = ech {
            match tallies.ech.iter_mut().find(|(known, _)| known == status) {
                Some((_, count)) => *count += 1,
                None => tallies.ech.push((status.to_string(), 1)),
            }
        }
    }

    /// Counts the version, suite and group `sample` negotiated, if it stored a version.
    fn count_negotiated(&mut self, config: i64, filled: &[usize], cells: &[Cell<'_>]) {
        let text = |column: usize| {
            let index = filled.binary_search(&column).ok()?;
            match &cells[index] {
                Cell::Text(text) => Some(text.as_ref()),
                _ => None,
            }
        };
        let [version, suite, group] = self.negotiation.map(text);
        let Some(version) = version else {
            return;
        };
        let counts = self.kept.negotiated.entry(config).or_default();
        // A Config negotiates one or a few triples: found among them without allocating (a
        // handshake run has one per sample), made only when new.
        let known = counts
            .iter_mut()
            .find(|((v, s, g), _)| v == version && s.as_deref() == suite && g.as_deref() == group);
        match known {
            Some((_, count)) => *count += 1,
            None => {
                let triple = (
                    version.to_string(),
                    suite.map(str::to_string),
                    group.map(str::to_string),
                );
                counts.insert(triple, 1);
            }
        }
    }

    pub(crate) fn into_kept(self) -> KeptValues {
        self.kept
    }

    /// The kept values, their room trimmed to what they hold, and the bytes they take: for
    /// values kept to be held a while (a database's Configs read once, `read.rs`).
    pub(crate) fn into_trimmed(mut self) -> (KeptValues, usize) {
        let mut bytes = 0;
        for samples in self.kept.configs.values_mut() {
            samples.masks.shrink_to_fit();
            samples.values.shrink_to_fit();
            samples.errors.shrink_to_fit();
            bytes += samples.bytes();
        }
        (self.kept, bytes)
    }
}

/// Where a sink leaves its kept values when the run is written: taken by the code that
/// summarises the run (see [`Store::into_sink_keeping`](crate::Store::into_sink_keeping)).
#[derive(Clone, Default)]
pub struct KeptHandle(Arc<Mutex<Option<Arc<KeptValues>>>>);

impl KeptHandle {
    pub(crate) fn put(&self, kept: KeptValues) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(kept));
    }

    /// The kept values, once the sink has finished writing the run without a failure and
    /// they stayed within [`KEPT_BYTES`].
    pub fn get(&self) -> Option<Arc<KeptValues>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_from_their_varints_as_they_went_in() {
        let values = [
            0,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            200,
            1_428_547,
            -1_428_547,
            i64::from(i32::MAX),
            i64::MAX,
            i64::MIN,
        ];
        let mut bytes = Vec::new();
        for value in values {
            push_varint(&mut bytes, value);
        }
        // Small magnitudes take few bytes: 0, 1 and -1 one each, 200 two.
        assert_eq!(bytes[..3], [0, 2, 1]);
        let mut at = 0;
        let read: Vec<i64> = values
            .iter()
            .map(|_| read_varint(&bytes, &mut at))
            .collect();
        assert_eq!(read, values);
        assert_eq!(at, bytes.len());
    }

    #[test]
    fn the_kept_columns_fit_below_the_outcomes_bit_and_are_stored_columns() {
        let names = kept_columns();
        assert!(names.len() < 31, "{}", names.len());
        let columns: Vec<&str> = crate::columns::sample_columns()
            .map(|(name, _, _)| name)
            .collect();
        for name in &names {
            assert!(columns.contains(name), "{name}");
        }
        let keeper = Keeper::new(&columns, KEPT_BYTES).unwrap();
        assert_eq!(
            keeper.slots.iter().flatten().count(),
            names.len(),
            "every kept column is one of the sink's"
        );
    }
}
