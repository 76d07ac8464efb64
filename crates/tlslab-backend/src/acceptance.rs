//! How long a TLS 1.3 client waits, after its handshake, for the server to accept it
//! (measurement rule 11: a handshake counts only when the server accepted it).
//!
//! A TLS 1.3 server judges the client's Finished (and certificate) after the client is done,
//! and answers: its session tickets when it accepts (most servers), an alert when it
//! refuses, or nothing at all when it accepts and issues no tickets (the lab server after a
//! fresh handshake). Silence can only be told from a late verdict by waiting, so the wait is
//! bounded by the attempt's own handshake time: the verdict arrives one round trip plus the
//! server's check after the client's Finished left, and the handshake took at least two
//! round trips over TCP (connect, then TLS) plus the server's signature and the client's
//! check of a chain like the one the server checks.
//!
//! On a busy machine the server may be scheduled late: with two cores at a load of 15, the
//! tickets of the lab server's TLS 1.3 handshakes came after more than one handshake's time
//! in 5 of 300 attempts, after more than two in 1, and once after twelve; and with the test
//! suite's runs beside it, an OpenSSL lab server's refusal once came after more than twenty
//! (a 4 ms handshake, nothing in 75 ms). So the bound follows what the Config's server did
//! last time: while it answers after its handshakes, the client waits up to
//! [`AcceptanceWait::ANSWERING`] handshakes' time (the wait ends with the answer, so this
//! costs nothing but one long wait when an answering server falls silent); while it is
//! silent (and at first), up to
//! [`AcceptanceWait::SILENT`], which is what each attempt then adds to a silent server's
//! handshakes (timed by a timerfd, not tokio's 1 ms tick: see `timer.rs`). A refusal later
//! than that after a silent acceptance is missed, and the next wait is the long one again.

//!
//! Which handshakes wait. After the client's Finished a TLS 1.3 server can refuse only over
//! the client's certificate (RFC 8446 4.4.2.4: `certificate_required`, `bad_certificate`, an
//! unknown CA) or over a Finished that does not verify (`decrypt_error`: a broken client, not
//! a setting anyone measures). So a handshake waits when the server asked for a certificate
//! ([`AcceptanceWait::can_refuse`]) and is otherwise counted at `handshake_done`, as before.
//! Waiting after every handshake was measured first: against the lab server, which sends
//! nothing after a fresh handshake, `tlslab run --tls 1.3 -n 200` fell from 1,576–1,652 to
//! 603–632 handshakes a second (each attempt waited one handshake's time for a verdict that
//! no server without client authentication can give), so a closed loop's rate would have
//! measured the wait, not the server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// One Config's wait for its server's verdict on TLS 1.3 handshakes, shared by its agents:
/// how long to wait depends on whether the server answered last time. Until it has, it is
/// taken as silent: the first attempts of every agent start together, and a long first wait
/// against a silent server would cost each of them a hundred handshakes (seconds on an
/// emulated link), where a short one misses only a first refusal later than a handshake.
#[derive(Debug)]
pub struct AcceptanceWait {
    /// The last wait ended with nothing from the server (no ticket, alert or close).
    silent: AtomicBool,
}

impl Default for AcceptanceWait {
    fn default() -> AcceptanceWait {
        AcceptanceWait {
            silent: AtomicBool::new(true),
        }
    }
}

impl AcceptanceWait {
    /// Handshakes' time to wait while the server answers after its handshakes.
    pub const ANSWERING: u32 = 100;
    /// Handshakes' time to wait once the server was silent after one.
    pub const SILENT: u32 = 1;

    /// How long to wait after a handshake that took `handshake` (the caller also keeps the
    /// wait within the attempt's time limit).
    pub fn patience(&self, handshake: Duration) -> Duration {
        let times = match self.silent.load(Ordering::Relaxed) {
            true => Self::SILENT,
            false => Self::ANSWERING,
        };
        handshake * times
    }

    /// Whether a server can still refuse a TLS 1.3 handshake the client has finished: only
    /// when it asked for a client certificate (`client_certificate` is `Some`: sent, or asked
    /// and none sent); see the module's documentation.
    pub fn can_refuse(client_certificate: Option<bool>) -> bool {
        client_certificate.is_some()
    }

    /// What the last wait saw: an answer (a record, an alert, a close), or silence.
    pub fn saw(&self, answered: bool) {
        self.silent.store(!answered, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_that_asked_for_a_certificate_can_still_refuse() {
        assert!(!AcceptanceWait::can_refuse(None));
        assert!(AcceptanceWait::can_refuse(Some(false)));
        assert!(AcceptanceWait::can_refuse(Some(true)));
    }

    #[test]
    fn the_wait_is_long_while_the_server_answers_and_short_once_it_was_silent() {
        let wait = AcceptanceWait::default();
        let handshake = Duration::from_micros(600);
        // Not known yet: as if silent, so many agents' first attempts do not all wait long.
        assert_eq!(wait.patience(handshake), Duration::from_micros(600));
        wait.saw(true);
        assert_eq!(wait.patience(handshake), Duration::from_millis(60));
        wait.saw(false);
        assert_eq!(wait.patience(handshake), Duration::from_micros(600));
    }
}
