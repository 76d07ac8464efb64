//! [`Failure`]: why an attempt failed, as a sample records it.

use tlslab_core::{ErrorClass, Event};

use crate::attempt::Attempt;

/// A failed attempt: its class and a description for people. A failure is a measurement
/// (the sample's outcome), not an error of tlslab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure, as the summary counts them.
    pub class: ErrorClass,
    /// What happened, for people (a server's alert, the library's message).
    pub detail: String,
}

impl Failure {
    /// What a failure after the server's CertificateRequest went unanswered means: servers
    /// report a missing client certificate by a generic alert (TLS 1.2: handshake_failure),
    /// by certificate_required after the client's Finished (TLS 1.3: on the first read), or by
    /// closing the connection, so the detail says it in words the diagnosis can find.
    pub fn explained_by(mut self, attempt: &Attempt) -> Self {
        match attempt.client_certificate {
            Some(false) => self
                .detail
                .push_str("; the server asked for a client certificate and none was sent"),
            // A certificate alert after the client sent its certificate is about that
            // certificate, not the server's (which the client checks, and refuses locally).
            Some(true) if self.class == ErrorClass::Alert && self.is_certificate_alert() => {
                self.detail
                    .push_str("; the server refused the client certificate sent");
            }
            _ => {}
        }
        self
    }

    /// The alert a failure's detail names first (`alert 48 (...)`, as every client writes
    /// it) is about a certificate: bad, unsupported, revoked, expired, unknown, of an unknown
    /// CA, or denied access.
    fn is_certificate_alert(&self) -> bool {
        let number = self
            .detail
            .strip_prefix("alert ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|number| number.parse::<u8>().ok());
        matches!(number, Some(42..=46 | 48 | 49))
    }

    /// An alert that answered the client's Finished: a TLS 1.3 server judges the client's
    /// Finished and certificate after the client is done, so it refuses the handshake only
    /// then, and the detail says so.
    pub fn after_finished(mut self) -> Self {
        self.detail.push_str(", after the client's Finished");
        self
    }

    /// A server that asked for a client certificate, got none, completed the handshake all
    /// the same and answered the request with 400: nginx's plain `ssl_verify_client on`
    /// ("No required SSL certificate was sent"). The request "succeeded" only in form, so it
    /// fails in the class servers that refuse in TLS use (`alert`: certificate_required or
    /// handshake_failure), with the same words for the diagnosis; the status stays recorded.
    pub fn refused_at_http(attempt: &Attempt) -> Option<Self> {
        let status = attempt.response.and_then(|response| response.status);
        (attempt.client_certificate == Some(false) && status == Some(400)).then(|| {
            Failure::new(
                ErrorClass::Alert,
                "HTTP 400 after a CertificateRequest (nginx: No required SSL certificate was sent)",
            )
            .explained_by(attempt)
        })
    }

    /// A failure of `class`, described by `detail`.
    pub fn new(class: ErrorClass, detail: impl Into<String>) -> Self {
        Failure {
            class,
            detail: detail.into(),
        }
    }

    /// A failed read, write or connect.
    pub fn io(error: &std::io::Error) -> Self {
        Failure::new(ErrorClass::of_io_error(error), error.to_string())
    }

    /// The server closed the connection before the handshake completed: a reset when it
    /// had not answered at all, a protocol failure when it gave up midway.
    pub fn closed_during_handshake(attempt: &Attempt) -> Self {
        let class = if attempt.timeline.get(Event::ServerHelloReceived).is_none() {
            ErrorClass::Reset
        } else {
            ErrorClass::Protocol
        };
        Failure::new(
            class,
            "the server closed the connection during the handshake",
        )
    }

    /// A failure of the request after a successful handshake.
    pub fn http(detail: impl ToString) -> Self {
        Failure::new(ErrorClass::Protocol, detail.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_before_any_answer_is_a_reset_and_after_one_a_protocol_failure() {
        let mut attempt = Attempt::start();
        assert_eq!(
            Failure::closed_during_handshake(&attempt).class,
            ErrorClass::Reset
        );
        attempt.received(100, std::time::Instant::now());
        assert_eq!(
            Failure::closed_during_handshake(&attempt).class,
            ErrorClass::Protocol
        );
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(Failure::io(&refused).class, ErrorClass::Refused);
    }

    #[test]
    fn an_alert_about_a_certificate_the_client_sent_says_so() {
        let mut attempt = Attempt::start();
        attempt.client_certificate = Some(true);
        let refused = |attempt: &Attempt, detail: &str| {
            Failure::new(ErrorClass::Alert, detail)
                .after_finished()
                .explained_by(attempt)
                .detail
        };
        assert_eq!(
            refused(&attempt, "alert 48 (UnknownCA)"),
            "alert 48 (UnknownCA), after the client's Finished; the server refused the client certificate sent"
        );
        // Not about a certificate: the alert alone.
        assert_eq!(
            refused(&attempt, "alert 80 (internal error)"),
            "alert 80 (internal error), after the client's Finished"
        );
        // Asked and none sent: that is the reason, whatever the alert.
        attempt.client_certificate = Some(false);
        assert!(refused(&attempt, "alert 116 (CertificateRequired)")
            .ends_with("after the client's Finished; the server asked for a client certificate and none was sent"));
    }

    #[test]
    fn a_400_after_an_unanswered_certificate_request_is_a_refusal() {
        let mut attempt = Attempt::start();
        attempt.response = Some(tlslab_core::Response {
            status: Some(400),
            body_bytes: 0,
        });
        // Not asked: a 400 is the server's answer, not a refusal of the client.
        assert_eq!(Failure::refused_at_http(&attempt), None);
        attempt.client_certificate = Some(true);
        assert_eq!(Failure::refused_at_http(&attempt), None);
        attempt.client_certificate = Some(false);
        let failure = Failure::refused_at_http(&attempt).unwrap();
        assert_eq!(failure.class, ErrorClass::Alert);
        assert!(failure
            .detail
            .ends_with("the server asked for a client certificate and none was sent"));
        // Asked and none sent, but served: nothing failed.
        attempt.response = Some(tlslab_core::Response {
            status: Some(200),
            body_bytes: 3,
        });
        assert_eq!(Failure::refused_at_http(&attempt), None);
    }
}
