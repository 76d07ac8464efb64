//! The engine's sink: batched inserts, one transaction per ~1,000 samples or ~200 ms.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection};
use tlslab_core::{Endpoint, Event, Phase, Sample};
use tlslab_engine::{Record, RunEnd, RunInfo, Sink, TrialRecord};

use crate::schema::{timing_columns, SAMPLE_COLUMNS};

const BATCH_SAMPLES: usize = 1_000;
const BATCH_TIME: Duration = Duration::from_millis(200);

/// Writes a run into a store created with [`Store::create`](crate::Store::create).
pub struct StoreSink {
    connection: Connection,
    pending: usize,
    batch_started: Instant,
    in_transaction: bool,
    insert_sample: String,
}

fn text(error: rusqlite::Error) -> String {
    error.to_string()
}

/// ISO 8601 UTC timestamp of a moment given in nanoseconds since the Unix epoch.
pub fn utc_timestamp(unix_ns: u64) -> String {
    let seconds = (unix_ns / 1_000_000_000) as i64;
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

impl StoreSink {
    pub(crate) fn new(connection: Connection) -> StoreSink {
        let columns: Vec<&str> = [
            "run_id",
            "config_id",
            "trial_id",
            "round",
            "agent",
            "warmup",
            "started_at_ns",
            "outcome",
            "error",
            "error_detail",
            "version",
            "suite",
            "group",
            "signature_scheme",
            "alpn",
            "resumed",
            "insecure",
            "bytes_sent",
            "bytes_received",
            "client_hello_bytes",
        ]
        .into_iter()
        .chain(SAMPLE_COLUMNS.iter().map(|(name, _)| *name))
        .chain(timing_columns())
        .collect();
        let insert_sample = format!(
            "INSERT INTO samples ({}) VALUES ({})",
            columns
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", "),
            (1..=columns.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        StoreSink {
            connection,
            pending: 0,
            batch_started: Instant::now(),
            in_transaction: false,
            insert_sample,
        }
    }

    fn begin_batch(&mut self) -> Result<(), String> {
        if !self.in_transaction {
            self.connection.execute_batch("BEGIN").map_err(text)?;
            self.in_transaction = true;
            self.batch_started = Instant::now();
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), String> {
        if self.in_transaction {
            self.connection.execute_batch("COMMIT").map_err(text)?;
            self.in_transaction = false;
            self.pending = 0;
        }
        Ok(())
    }

    fn insert_sample(&mut self, sample: &Sample) -> Result<(), String> {
        let mut values: Vec<rusqlite::types::Value> = Vec::with_capacity(40);
        use rusqlite::types::Value;
        let optional_text = |value: &Option<String>| value.clone().map_or(Value::Null, Value::Text);
        let optional_int =
            |value: Option<u64>| value.map_or(Value::Null, |v| Value::Integer(v as i64));
        values.extend([
            Value::Integer(1),
            Value::Integer(sample.config as i64),
            Value::Integer(sample.trial as i64),
            Value::Integer(i64::from(sample.round)),
            Value::Integer(i64::from(sample.agent)),
            Value::Integer(i64::from(sample.warmup)),
            Value::Integer(sample.started_at as i64),
            Value::Text(sample.outcome.as_str().to_string()),
            sample
                .error
                .map_or(Value::Null, |e| Value::Text(e.as_str().to_string())),
            optional_text(&sample.error_detail),
            optional_text(&sample.negotiated.version),
            optional_text(&sample.negotiated.suite),
            optional_text(&sample.negotiated.group),
            optional_text(&sample.negotiated.signature_scheme),
            optional_text(&sample.negotiated.alpn),
            sample
                .negotiated
                .resumed
                .map_or(Value::Null, |r| Value::Integer(i64::from(r))),
            Value::Integer(i64::from(sample.insecure)),
            Value::Integer(sample.bytes_sent as i64),
            Value::Integer(sample.bytes_received as i64),
            optional_int(sample.client_hello_bytes),
            // SAMPLE_COLUMNS, in order.
            sample
                .negotiated
                .early_data
                .map_or(Value::Null, |accepted| Value::Integer(i64::from(accepted))),
            optional_int(sample.server_flight_bytes),
            optional_int(sample.response.and_then(|r| r.status).map(u64::from)),
            optional_int(sample.response.map(|r| r.body_bytes)),
            optional_int(sample.quic.map(|q| q.rtt_ns)),
            optional_int(sample.quic.map(|q| q.datagrams_sent)),
            optional_int(sample.quic.map(|q| q.datagrams_received)),
            optional_int(sample.quic.map(|q| q.packets_sent)),
            optional_int(sample.quic.map(|q| q.packets_lost)),
            sample.negotiated.ech.map_or(Value::Null, |status| {
                Value::Text(status.as_str().to_string())
            }),
        ]);
        values.extend(
            Event::ALL
                .iter()
                .map(|e| optional_int(sample.timeline.get(*e))),
        );
        values.extend(
            Phase::ALL
                .iter()
                .map(|p| optional_int(sample.timeline.phase(*p))),
        );
        self.connection
            .prepare_cached(&self.insert_sample)
            .map_err(text)?
            .execute(rusqlite::params_from_iter(values))
            .map_err(text)?;
        Ok(())
    }

    fn insert_trial(&mut self, record: &TrialRecord) -> Result<(), String> {
        let server = record.server;
        self.connection
            .prepare_cached(
                "INSERT INTO trials (id, run_id, config_id, round, warmup, handshakes, attempted, concurrency, started_at_ns, duration_ns, server_user_ns, server_system_ns, server_peak_rss_bytes, client_user_ns, client_system_ns, client_peak_rss_bytes) VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )
            .map_err(text)?
            .execute(params![
                record.trial.index as i64,
                record.trial.config as i64,
                record.trial.round,
                record.trial.warmup,
                record.trial.handshakes as i64,
                record.attempted as i64,
                record.concurrency,
                record.started_at as i64,
                record.duration_ns as i64,
                server.map(|s| s.user_ns as i64),
                server.map(|s| s.system_ns as i64),
                server.map(|s| s.peak_rss_bytes as i64),
                record.client.user_ns as i64,
                record.client.system_ns as i64,
                record.client.peak_rss_bytes as i64,
            ])
            .map_err(text)?;
        Ok(())
    }
}

impl Sink for StoreSink {
    fn begin(&mut self, info: &RunInfo) -> Result<(), String> {
        let experiment = info.experiment.to_toml();
        let json = |value: &dyn erased::Json| value.to_json();
        self.begin_batch()?;
        self.connection
            .execute(
                "INSERT INTO runs (id, started_at, started_at_unix_ns, seed, tool_version, commit_id, experiment, command_line, environment, plan) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    utc_timestamp(info.started_at_unix_ns),
                    info.started_at_unix_ns as i64,
                    info.plan.seed as i64,
                    info.environment.tool_version,
                    info.environment.commit,
                    experiment,
                    json(&info.command_line),
                    json(&info.environment),
                    json(&info.plan),
                ],
            )
            .map_err(text)?;
        for (config, address) in info.configs.iter().zip(&info.addresses) {
            let (cert, chain, target, sni) = match &config.endpoint {
                Endpoint::Lab { cert, chain } => (
                    Some(cert.as_str().to_string()),
                    Some(i64::from(*chain)),
                    None,
                    None,
                ),
                Endpoint::Target { address, sni, .. } => {
                    (None, None, Some(address.clone()), Some(sni.clone()))
                }
            };
            let network = config.network.as_ref();
            self.connection
                .execute(
                    "INSERT INTO configs (id, run_id, label, version, suite, \"group\", cert, chain, target, sni, address, concurrency, resume, insecure, description, rtt_ns, jitter_ns, loss, rate_bps, emulator, transport, http, resumption, early_data_bytes, cert_cache, path, client_backend, server_backend, ech) VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)",
                    params![
                        config.index as i64,
                        config.label,
                        config.version.as_str(),
                        config.suite.name,
                        config.group.as_str(),
                        cert,
                        chain,
                        target,
                        sni,
                        address,
                        config.concurrency,
                        config.resumes(),
                        config.insecure,
                        json(config),
                        network.map(|n| n.rtt.as_nanos() as i64),
                        network.map(|n| n.jitter.as_nanos() as i64),
                        network.map(|n| n.loss.0),
                        network.and_then(|n| n.rate).map(|rate| rate.0 as i64),
                        network.and(info.emulator.as_deref()),
                        config.transport.as_str(),
                        config.http.as_str(),
                        config.resume.as_str(),
                        config.early_data as i64,
                        config.cert_cache,
                        (config.http != tlslab_core::Http::None).then_some(config.path.as_str()),
                        config.client_backend.as_str(),
                        config.server_backend.map(|backend| backend.as_str()),
                        config.ech.as_str(),
                    ],
                )
                .map_err(text)?;
        }
        self.commit()
    }

    fn record(&mut self, record: Record) -> Result<(), String> {
        self.begin_batch()?;
        match record {
            Record::Sample(sample) => {
                self.insert_sample(&sample)?;
                self.pending += 1;
            }
            Record::Trial(trial) => self.insert_trial(&trial)?,
            Record::Replay(replay) => {
                self.connection
                    .execute(
                        "INSERT OR REPLACE INTO replays (config_id, sent, rejected, accepted) VALUES (?1, ?2, ?3, ?4)",
                        params![replay.config as i64, replay.sent as i64, replay.rejected as i64, replay.accepted as i64],
                    )
                    .map_err(text)?;
            }
            Record::Stopped(stop) => {
                self.connection
                    .execute(
                        "UPDATE configs SET stopped_round = ?1, stopped_samples = ?2, stopped_half_width = ?3 WHERE id = ?4",
                        params![stop.round, stop.samples as i64, stop.relative_half_width, stop.config as i64],
                    )
                    .map_err(text)?;
            }
        }
        if self.pending >= BATCH_SAMPLES || self.batch_started.elapsed() >= BATCH_TIME {
            self.commit()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        self.commit()
    }

    fn finish(&mut self, end: &RunEnd) -> Result<(), String> {
        self.commit()?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        self.connection
            .execute(
                "UPDATE runs SET finished_at = ?1, complete = ?2, reason = ?3, duration_ns = ?4, attempted = ?5, errors = ?6 WHERE id = 1",
                params![
                    utc_timestamp(now),
                    end.complete,
                    end.reason,
                    end.duration_ns as i64,
                    end.attempted as i64,
                    end.errors as i64,
                ],
            )
            .map_err(text)?;
        // Leave WAL mode once the run is written: the result is one self-contained file, with
        // no -wal or -shm beside it for readers to recreate.
        let _ = self
            .connection
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
        Ok(())
    }
}

/// Serializing heterogeneous values to JSON text without naming each type.
mod erased {
    pub trait Json {
        fn to_json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|_| "null".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::utc_timestamp;

    #[test]
    fn timestamps_are_iso_utc() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            utc_timestamp(1_795_000_000 * 1_000_000_000),
            "2026-11-18T11:06:40Z"
        );
        assert_eq!(
            utc_timestamp(951_782_400 * 1_000_000_000),
            "2000-02-29T00:00:00Z"
        );
    }
}
