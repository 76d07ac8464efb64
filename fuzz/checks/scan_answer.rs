//! A server's answer to `tlslab scan`'s raw ClientHello, as any bytes: the records and
//! handshake messages read (ServerHello, HelloRetryRequest, Certificate, ServerKeyExchange,
//! alerts), then the certificates summarised and matched against a name, give a reading or
//! an error, never a panic or an unbounded read.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tlslab_scan::certificate::{hsts_max_age, inspect};
use tlslab_scan::probe::{read_answer, Answer, Prober};

pub fn check(bytes: &[u8]) {
    // No connection is made: `inspect` is told rustls cannot connect.
    let prober = Prober::new(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 9)),
        None,
        Duration::from_millis(1),
        1,
    );
    for flight in [false, true] {
        if let Ok(Answer::Hello(hello)) = read_answer(&mut &bytes[..], flight) {
            let certificates = inspect(
                &prober,
                "localhost",
                hello.certificates.clone(),
                // A second chain is summarised by the same code as the first; judging it
                // would load the system roots per input.
                Vec::new(),
                false,
                None,
            );
            let _ = certificates.leaf();
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = hsts_max_age(text);
    }
}
