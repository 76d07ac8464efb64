//! A database's Configs read once each: what `report` reads of a Config's samples, taken in
//! one pass over them and held for the command's other readers.
//!
//! A summary reads a Config's samples many times: its requests, its phases, its round
//! medians, its negotiated names, its outcomes, its server software. From a SQLite file each
//! pass is cheap; from PostgreSQL each is a query whose cost is the server's, per row (about
//! 0.6 s for 500,000 requests on a loaded two-core machine), and a report of a large run paid
//! it about nine times per Config (2.3× SQLite's wall time). Here a Config's samples are read
//! once, in the order of the readers' index (no sort), into the form the writer keeps a run's
//! values in ([`KeptValues`]: only the values a sample filled), with the few things that
//! form lacks (each round's median handshake, the first server software); every reader
//! [`KeptValues`] answers then answers from them, with exactly the values its query returns.
//!
//! Memory stays bounded: the Configs read are held within [`READ_BYTES`], the least recently
//! read given up first, and a Config whose values alone outgrow it is not held at all (its
//! readers query the database, as before).

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::columns::Cell;
use crate::database::{Connection, Parameter};
use crate::kept::{kept_columns, Keeper, KeptValues};
use crate::{RoundMedian, StoreError};

/// The most memory the Configs read may hold at once: about 2,000,000 requests on kept
/// connections (20 to 30 bytes each: a mask and a dozen varints), four Configs of 500,000
/// say. While one more is read the others are still held, so the peak is at most twice it.
pub(crate) const READ_BYTES: usize = 64 << 20;

/// The sample columns read besides the kept ones, in this order.
const READ_COLUMNS: [&str; 12] = [
    "id",
    "warmup",
    "round",
    "outcome",
    "error",
    "version",
    "suite",
    "group",
    "resumed",
    "early_data_accepted",
    "ech",
    "server_software",
];

/// Of [`READ_COLUMNS`], those that hold text.
const TEXT_COLUMNS: [&str; 7] = [
    "outcome",
    "error",
    "version",
    "suite",
    "group",
    "ech",
    "server_software",
];

/// One Config of a database's run, read once.
pub(crate) struct ReadConfig {
    /// Its values, as a writer keeps them.
    pub kept: Arc<KeptValues>,
    /// [`Store::round_medians`](crate::Store::round_medians).
    pub rounds: Vec<RoundMedian>,
    /// [`Store::server_software`](crate::Store::server_software).
    pub server_software: Option<String>,
    /// What `kept` takes.
    bytes: usize,
}

/// Reads Config `config_id`'s samples once (see the module's notes); `None` when its values
/// alone take more than `limit` bytes.
pub(crate) fn read_config(
    connection: &Connection,
    config_id: i64,
    limit: usize,
) -> Result<Option<ReadConfig>, StoreError> {
    let names: Vec<&str> = READ_COLUMNS.into_iter().chain(kept_columns()).collect();
    let text: Vec<bool> = names
        .iter()
        .map(|name| TEXT_COLUMNS.contains(name))
        .collect();
    let position = |wanted: &str| names.iter().position(|name| *name == wanted);
    let (Some(mut keeper), Some(handshake)) = (Keeper::new(&names, limit), position("handshake"))
    else {
        return Ok(None);
    };
    let (id, warmup, round, outcome, server_software) = (0, 1, 2, 3, 11);
    let selected: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
    // In the order of the readers' index (run, Config, warm-up, outcome, sample): no sort.
    // A Config's measured requests come in the order `for_each_request` reads them in.
    let sql = format!(
        "SELECT {} FROM samples WHERE {{run}}config_id = ?1 ORDER BY warmup, outcome, id",
        selected.join(", ")
    );
    let mut rounds: Vec<(i64, bool, i64)> = Vec::new();
    let mut first_software: Option<(i64, String)> = None;
    let mut within = true;
    connection.each_until(&sql, &[Parameter::Integer(config_id)], |row| {
        let mut filled = Vec::with_capacity(names.len());
        let mut cells = Vec::with_capacity(names.len());
        for (index, &is_text) in text.iter().enumerate() {
            let cell = if is_text {
                row.text(index)?
                    .map(|text| Cell::Text(std::borrow::Cow::Borrowed(text)))
            } else {
                row.integer(index)?.map(Cell::Integer)
            };
            if let Some(cell) = cell {
                filled.push(index);
                cells.push(cell);
            }
        }
        let integer = |index: usize| {
            let at = filled.binary_search(&index).ok()?;
            match cells[at] {
                Cell::Integer(value) => Some(value),
                _ => None,
            }
        };
        let is_warmup = integer(warmup).unwrap_or(0) != 0;
        let is_ok = filled
            .binary_search(&outcome)
            .is_ok_and(|at| matches!(&cells[at], Cell::Text(text) if text == "ok"));
        if let (true, Some(nanos)) = (is_ok, integer(handshake)) {
            rounds.push((integer(round).unwrap_or(0), is_warmup, nanos));
        }
        if let Ok(at) = filled.binary_search(&server_software) {
            let number = integer(id).unwrap_or(i64::MAX);
            if first_software
                .as_ref()
                .is_none_or(|(first, _)| number < *first)
            {
                if let Cell::Text(software) = &cells[at] {
                    first_software = Some((number, software.to_string()));
                }
            }
        }
        if !keeper.keep_row(config_id, is_warmup, &filled, &cells) {
            within = false;
            return Ok(ControlFlow::Break(()));
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if !within {
        return Ok(None);
    }
    rounds.sort_unstable();
    let rounds = crate::medians_of_rounds(
        rounds
            .into_iter()
            .map(|(round, warmup, nanos)| (round, warmup, nanos as f64)),
    );
    let (kept, bytes) = keeper.into_trimmed();
    Ok(Some(ReadConfig {
        kept: Arc::new(kept),
        bytes: bytes + rounds.len() * std::mem::size_of::<RoundMedian>(),
        rounds,
        server_software: first_software.map(|(_, software)| software),
    }))
}

/// The Configs read so far, within [`READ_BYTES`], the most recently used last.
#[derive(Default)]
pub(crate) struct ReadConfigs {
    held: Vec<(i64, Arc<ReadConfig>)>,
    /// Configs whose values alone outgrew the budget: read by queries.
    too_large: Vec<i64>,
}

impl ReadConfigs {
    /// Config `config_id` if it was read and is still held.
    pub(crate) fn held(&self, config_id: i64) -> Option<Arc<ReadConfig>> {
        let (_, read) = self.held.iter().find(|(id, _)| *id == config_id)?;
        Some(read.clone())
    }

    /// Config `config_id`, read once (then held while the budget allows); `None` when it is
    /// too large to hold.
    pub(crate) fn get(
        &mut self,
        connection: &Connection,
        config_id: i64,
    ) -> Result<Option<Arc<ReadConfig>>, StoreError> {
        if let Some(at) = self.held.iter().position(|(id, _)| *id == config_id) {
            let entry = self.held.remove(at);
            let read = entry.1.clone();
            self.held.push(entry);
            return Ok(Some(read));
        }
        if self.too_large.contains(&config_id) {
            return Ok(None);
        }
        let Some(read) = read_config(connection, config_id, READ_BYTES)? else {
            self.too_large.push(config_id);
            return Ok(None);
        };
        let read = Arc::new(read);
        let mut bytes: usize = self.held.iter().map(|(_, held)| held.bytes).sum();
        while bytes + read.bytes > READ_BYTES && !self.held.is_empty() {
            bytes -= self.held.remove(0).1.bytes;
        }
        self.held.push((config_id, read.clone()));
        Ok(Some(read))
    }
}
