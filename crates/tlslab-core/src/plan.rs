//! [`Plan`]: the ordered [`Trial`]s a run executes.
//!
//! Configs are interleaved: in each round every Config runs one block, in an order shuffled
//! afresh from the recorded seed, so slow drift of a shared machine (thermal throttling, a
//! noisy neighbour) is spread over every Config alike instead of biasing whichever ran last.

use std::time::Duration;

use serde::Serialize;

use crate::config::Config;
use crate::experiment::Experiment;

/// One block: a Config run for `handshakes` attempts at its concurrency, in round `round`, or,
/// with `time_limit` (a closed loop given `--duration`), for that long, as many attempts as
/// its agents make (`handshakes` is then 0). Round 0 holds the warm-up blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Trial {
    /// The block's position in the plan, from 0.
    pub index: usize,
    /// The Config it runs.
    pub config: usize,
    /// The round, from 1 (0 for warm-up).
    pub round: u32,
    /// A warm-up block, left out of the statistics.
    pub warmup: bool,
    /// Attempts it makes; 0 when it runs for `time_limit`.
    pub handshakes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// How long it runs instead of a count.
    pub time_limit: Option<Duration>,
}

/// A closed loop given `--duration` runs it in up to this many blocks (one per round), each
/// at least [`SHORTEST_TIMED_BLOCK`] long.
const TIMED_ROUNDS: u32 = 10;
const SHORTEST_TIMED_BLOCK: Duration = Duration::from_millis(100);

/// The blocks of a closed loop that runs for `duration`: their count and length.
fn timed_blocks(duration: Duration) -> (u32, Duration) {
    let rounds = (duration.as_millis() / SHORTEST_TIMED_BLOCK.as_millis())
        .clamp(1, TIMED_ROUNDS as u128) as u32;
    (rounds, duration / rounds)
}

/// A Config's warm-up attempts: `warmup`, but at least one per agent when its agents keep
/// state from one attempt to the next (a kept connection, a session to resume), so that every
/// agent opens its connection or gets its first ticket before the measured part begins; the
/// engine gives each agent one of them first. Otherwise a keep-alive load at -c 100 with 20
/// warm-up requests opened 80 connections inside the measured part, and up to a quarter of
/// its "keep-alive" figures were handshakes.
pub fn warmup_for(warmup: u64, config: &Config) -> u64 {
    if config.agents_keep_state() {
        warmup.max(u64::from(config.concurrency))
    } else {
        warmup
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
/// The order a run's blocks go in: every Config's blocks of one round, shuffled, before the
/// next round's, so that drift over the run spreads over every Config alike.
pub struct Plan {
    /// The seed the blocks were shuffled with, to repeat the order.
    pub seed: u64,
    /// The blocks, in running order.
    pub trials: Vec<Trial>,
}

impl Plan {
    /// Lays out warm-up (round 0) and measured rounds (1, 2, …) for every Config.
    pub fn new(experiment: &Experiment, configs: &[Config], seed: u64) -> Plan {
        let mut random = fastrand::Rng::with_seed(seed);
        let mut trials = Vec::new();
        type Block = (usize, u64, Option<Duration>);
        let mut push_round = |round: u32, blocks: &mut Vec<Block>, warmup: bool| {
            random.shuffle(blocks);
            for &(config, handshakes, time_limit) in blocks.iter() {
                trials.push(Trial {
                    index: trials.len(),
                    config,
                    round,
                    warmup,
                    handshakes,
                    time_limit,
                });
            }
        };

        if experiment.warmup > 0 {
            let mut blocks: Vec<Block> = configs
                .iter()
                .map(|c| (c.index, warmup_for(experiment.warmup, c), None))
                .collect();
            push_round(0, &mut blocks, true);
        }

        // Closed loops given a duration run timed blocks; the rest count their attempts.
        let timed = |config: &Config| match (config.arrival_rate, experiment.duration) {
            (None, Some(duration)) => Some(timed_blocks(duration)),
            _ => None,
        };
        let mut remaining: Vec<u64> = configs
            .iter()
            .map(|config| match timed(config) {
                Some((rounds, _)) => u64::from(rounds),
                None => experiment.handshakes_for(config),
            })
            .collect();
        let mut round = 1;
        while remaining.iter().any(|&left| left > 0) {
            let mut blocks = Vec::new();
            for config in configs {
                let left = &mut remaining[config.index];
                if *left == 0 {
                    continue;
                }
                match timed(config) {
                    Some((_, length)) => {
                        *left -= 1;
                        blocks.push((config.index, 0, Some(length)));
                    }
                    None => {
                        let size = experiment.block_size(config).min(*left);
                        *left -= size;
                        blocks.push((config.index, size, None));
                    }
                }
            }
            push_round(round, &mut blocks, false);
            round += 1;
        }
        Plan { seed, trials }
    }

    /// Measured (non-warm-up) handshakes planned for one Config.
    pub fn measured_handshakes(&self, config: usize) -> u64 {
        self.trials
            .iter()
            .filter(|t| t.config == config && !t.warmup)
            .map(|t| t.handshakes)
            .sum()
    }

    /// Every planned attempt, warm-up included.
    pub fn total_handshakes(&self) -> u64 {
        self.trials.iter().map(|t| t.handshakes).sum()
    }

    /// How long the timed blocks (closed loops given `--duration`) run in all; `None` when
    /// every block counts its attempts.
    pub fn timed_duration(&self) -> Option<Duration> {
        self.trials
            .iter()
            .filter_map(|t| t.time_limit)
            .reduce(|total, limit| total.saturating_add(limit))
    }

    /// The number of measured rounds.
    pub fn rounds(&self) -> u32 {
        self.trials.iter().map(|t| t.round).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimension::TlsVersion;

    fn setup(seed: u64) -> (Experiment, Vec<Config>, Plan) {
        let experiment = Experiment {
            tls: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            concurrency: vec![1, 4],
            handshakes: 95,
            warmup: 3,
            block: Some(10),
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        let plan = Plan::new(&experiment, &configs, seed);
        (experiment, configs, plan)
    }

    #[test]
    fn every_config_gets_its_handshakes_in_rounds_of_one_block_each() {
        let (_, configs, plan) = setup(7);
        assert_eq!(plan.rounds(), 10);
        for config in &configs {
            assert_eq!(plan.measured_handshakes(config.index), 95);
            for round in 1..=10 {
                let blocks: Vec<_> = plan
                    .trials
                    .iter()
                    .filter(|t| t.round == round && t.config == config.index)
                    .collect();
                assert_eq!(blocks.len(), 1, "round {round}");
            }
        }
        assert_eq!(plan.total_handshakes(), 4 * (95 + 3));
        assert!(plan.trials.iter().take(4).all(|t| t.warmup && t.round == 0));
        assert!(plan.trials.iter().enumerate().all(|(i, t)| t.index == i));
    }

    #[test]
    fn agents_that_keep_state_each_get_a_warm_up_attempt() {
        let experiment = Experiment {
            http: vec![crate::Http::Http11],
            keep_alive: vec![crate::KeepAlive::Off, crate::KeepAlive::On],
            concurrency: vec![100],
            handshakes: 1000,
            warmup: 20,
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        let plan = Plan::new(&experiment, &configs, 1);
        let warmup = |keep_alive: bool| {
            let config = configs.iter().find(|c| c.keep_alive == keep_alive).unwrap();
            plan.trials
                .iter()
                .filter(|t| t.warmup && t.config == config.index)
                .map(|t| t.handshakes)
                .sum::<u64>()
        };
        assert_eq!(warmup(true), 100);
        assert_eq!(warmup(false), 20);
        // --warmup 0 asks for none, and gets none.
        let none = Experiment {
            warmup: 0,
            ..experiment
        };
        let plan = Plan::new(&none, &configs, 1);
        assert!(plan.trials.iter().all(|t| !t.warmup));
    }

    #[test]
    fn the_order_is_shuffled_reproducibly_from_the_seed() {
        let order = |plan: &Plan| plan.trials.iter().map(|t| t.config).collect::<Vec<_>>();
        let (_, _, first) = setup(7);
        let (_, _, again) = setup(7);
        let (_, _, other) = setup(8);
        assert_eq!(order(&first), order(&again));
        assert_ne!(order(&first), order(&other));
        let rounds: Vec<Vec<usize>> = (1..=10)
            .map(|r| {
                first
                    .trials
                    .iter()
                    .filter(|t| t.round == r)
                    .map(|t| t.config)
                    .collect()
            })
            .collect();
        assert!(
            rounds.windows(2).any(|pair| pair[0] != pair[1]),
            "never reshuffled"
        );
    }
}
