//! `load`: a run with a request as the unit of work. A URL (or the lab server) becomes the
//! target, path and scheme; the defaults are a load tester's (HTTP/1.1 with keep-alive); the
//! outcome adds the load figures (ab's and more) to the run's.

use std::sync::Mutex;

use tlslab_core::{Experiment, Http, KeepAlive, Scheme};
use tlslab_report::load::LoadSummary;
use tlslab_store::{Store, StoreError};

use crate::run::{RunOutcome, RunRequest};
use crate::{Control, WorkflowError};

/// Where a URL points: `host:port`, the server name, the path, and its scheme.
#[derive(Debug, PartialEq, Eq)]
pub struct Url {
    /// `host:port` (an IPv6 host in brackets).
    pub address: String,
    /// The host, the name sent as SNI.
    pub host: String,
    /// The port (443 or 80 unless given).
    pub port: u16,
    /// The path and query (`/` unless given).
    pub path: String,
    /// HTTPS or plain HTTP.
    pub scheme: Scheme,
}

impl Url {
    /// A URL tlslab can load: `https://HOST[:PORT]/PATH` or `http://...`.
    pub fn parse(text: &str) -> Result<Url, WorkflowError> {
        let bad = |why: &str| {
            WorkflowError::usage(
                format!("'{text}' is not a URL tlslab can load: {why}"),
                "give https://HOST[:PORT]/PATH or http://HOST[:PORT]/PATH, or no URL for the lab server",
            )
        };
        let uri: http::Uri = text.parse().map_err(|_| bad("it does not parse"))?;
        let scheme = match uri.scheme_str() {
            Some("https") => Scheme::Https,
            Some("http") => Scheme::Http,
            Some(other) => return Err(bad(&format!("the scheme '{other}' is not http or https"))),
            None => return Err(bad("it has no scheme")),
        };
        let host = uri.host().ok_or_else(|| bad("it has no host"))?;
        let port = uri.port_u16().unwrap_or(match scheme {
            Scheme::Https => 443,
            Scheme::Http => 80,
        });
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let address = if bare.contains(':') {
            format!("[{bare}]:{port}")
        } else {
            format!("{bare}:{port}")
        };
        Ok(Url {
            address,
            host: bare.to_string(),
            port,
            path: uri
                .path_and_query()
                .map_or_else(|| "/".to_string(), |path| path.as_str().to_string()),
            scheme,
        })
    }

    /// Points `experiment` at this URL: its target, and its SNI, path and scheme unless they
    /// were given (`path_given`, `scheme_given`: by a flag).
    pub fn aim(&self, experiment: &mut Experiment, path_given: bool, scheme_given: bool) {
        experiment.target = Some(self.address.clone());
        if experiment.sni.is_none() {
            experiment.sni = Some(self.host.clone());
        }
        if !path_given {
            experiment.path = self.path.clone();
        }
        if !scheme_given {
            experiment.scheme = vec![self.scheme];
        }
        if self.scheme == Scheme::Http && experiment.plain_port.is_none() {
            experiment.plain_port = Some(self.port);
        }
    }
}

/// A load tester's defaults: HTTP/1.1 with keep-alive (one connection per agent, TCP for
/// HTTP/1.1 and HTTP/2, QUIC for HTTP/3); without keep-alive when pages are loaded (page
/// mode opens its own connections).
pub fn defaults(pages: bool) -> Experiment {
    Experiment {
        http: vec![Http::Http11],
        keep_alive: vec![if pages { KeepAlive::Off } else { KeepAlive::On }],
        ..Experiment::default()
    }
}

/// A load has no `metric`: its figures are every request's.
pub fn check_metric(metric: Option<&str>) -> Result<(), WorkflowError> {
    match metric {
        Some(_) => Err(WorkflowError::usage(
            "--metric chooses what tlslab run's summary compares; tlslab load prints ab's figures of each request",
            "leave --metric out, or compare the stored requests with tlslab compare RESULTS.db --metric PHASE",
        )),
        None => Ok(()),
    }
}

/// A finished load: the run's outcome and its load figures.
pub struct LoadOutcome {
    /// The run (store, summary, verdict).
    pub run: RunOutcome,
    /// The load figures, when asked for, or why they could not be read.
    pub figures: Option<Result<LoadSummary, WorkflowError>>,
}

/// Runs `request` as a load (its experiment made with [`defaults`] and [`Url::aim`]); with
/// `figures`, reads the load figures while the run summary is read.
pub fn load(
    request: &RunRequest,
    control: &Control,
    figures: bool,
) -> Result<LoadOutcome, WorkflowError> {
    check_metric(request.metric.as_deref())?;
    let read: Mutex<Option<Result<LoadSummary, StoreError>>> = Mutex::new(None);
    let prepare = |store: Result<Store, StoreError>| {
        let load = store.and_then(|store| LoadSummary::from_store(&store));
        *read.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(load);
    };
    let alongside: Option<crate::run::Alongside<'_>> = figures.then_some(&prepare);
    let run = crate::run::execute(request, control, alongside)?;
    let figures = figures.then(|| {
        let read = read
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        match read {
            Some(load) => load.map_err(WorkflowError::from),
            // No thread could be started for it: read now.
            None => LoadSummary::from_store(&run.store).map_err(WorkflowError::from),
        }
    });
    Ok(LoadOutcome { run, figures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_target_the_name_the_path_and_the_scheme() {
        let url = Url::parse("https://example.com/r/100?x=1").unwrap();
        assert_eq!(url.address, "example.com:443");
        assert_eq!(url.host, "example.com");
        assert_eq!(url.path, "/r/100?x=1");
        assert_eq!(url.scheme, Scheme::Https);
        let url = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((url.address.as_str(), url.port), ("127.0.0.1:8080", 8080));
        assert_eq!((url.path.as_str(), url.scheme), ("/", Scheme::Http));
        let url = Url::parse("https://[::1]:8443/").unwrap();
        assert_eq!(url.address, "[::1]:8443");
        for bad in ["example.com", "ftp://example.com/", "https://", "not a url"] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }
}
