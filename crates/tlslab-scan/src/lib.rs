//! tlslab-scan: what a TLS server supports, in what order, and its grade, in one fast pass.
//!
//! A scan sends its own ClientHellos ([`hello`]) over TCP, one probe per connection, at a
//! bounded concurrency ([`probe::Limiter`]), and reads only the server's first answer:
//!
//! - versions: SSL 3.0, TLS 1.0, 1.1 and 1.2 (a legacy ClientHello offering the whole IANA
//!   suite registry) and TLS 1.3 (supported_versions; a HelloRetryRequest counts);
//! - for each version, every suite the server accepts (take the accepted one out of the
//!   offer, ask again until the server declines) and whose order it follows;
//! - TLS 1.3 groups (classical, RFC 7919's five finite-field groups, ML-KEM and its
//!   hybrids) and TLS 1.2 ECDHE curves, with the server's preference where it enforces one;
//!   ALPN;
//! - the certificate chain as sent, its trust and name match, and HSTS (one real rustls
//!   handshake and one `GET /`).
//!
//! The result is then judged against Mozilla's server-side TLS guidelines ([`mozilla`]) and
//! graded in the manner of SSL Labs' rating guide ([`grade`]). [`cost::choices`] lists every
//! supported version × suite × group, for a caller that times each one (the binary does,
//! with tlslab's engine) into [`Report::timing`]. One probe failing (a timeout,
//! a reset) is noted in the report and never ends the scan; what it would have found is
//! reported as unknown, never as refused. An answer that does not parse is never a finding:
//! a scan with any ([`Report::malformed_answers`]) is neither judged nor graded. A target that
//! cannot be reached, does not speak TLS, or answers every version malformed is a
//! [`ScanError`].
//!
//! ```no_run
//! use std::time::Duration;
//! use tlslab_scan::{scan, Options, Target};
//!
//! let target = Target::parse("example.com")?; // port 443
//! let options = Options { concurrency: 4, timeout: Duration::from_secs(5), ..Options::default() };
//! let report = scan(&target, &options)?;
//! for version in &report.versions {
//!     println!("{} ({}): {}", version.version, version.order.describe(), version.suites.join(" "));
//! }
//! println!("grade {} after {} connections", report.grade.letter, report.connections);
//! # Ok::<(), tlslab_scan::ScanError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod certificate;
pub mod cost;
pub mod grade;
pub mod hello;
pub mod mozilla;
pub mod probe;
pub mod scan;

pub use hello::Version;
pub use scan::{scan, Options, Order, Report, ScanError, ScanErrorKind, Target};
