//! `tlslab load`: `tlslab run` with a request as the unit of work. A URL (or the lab server)
//! becomes the target, path and scheme; the defaults become a load tester's (HTTP/1.1 with
//! keep-alive); the figures are ab's and more, or ab's own layout.

use std::sync::Mutex;

use tlslab_core::terminal::Escaped;
use tlslab_core::{Experiment, Http, KeepAlive, Scheme};
use tlslab_report::load::{render_ab, render_load_text, LoadSummary};
use tlslab_report::RunSummary;
use tlslab_store::{Store, StoreError};

use crate::cli::LoadArgs;
use crate::failure::CliError;
use crate::output;
use crate::run::Printer;

/// Where a URL points: `host:port`, the server name, the path, and its scheme.
#[derive(Debug, PartialEq, Eq)]
struct Url {
    address: String,
    host: String,
    port: u16,
    path: String,
    scheme: Scheme,
}

fn parse_url(text: &str) -> Result<Url, CliError> {
    let bad = |why: &str| {
        CliError::usage(
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

/// A load tester's defaults: HTTP/1.1 with keep-alive (one connection per agent, TCP for
/// HTTP/1.1 and HTTP/2, QUIC for HTTP/3); `tlslab load --help` says them.
pub fn defaults() -> Experiment {
    Experiment {
        http: vec![Http::Http11],
        keep_alive: vec![KeepAlive::On],
        ..Experiment::default()
    }
}

/// [`defaults`], without keep-alive when pages are loaded: page mode opens its own
/// connections.
fn base(args: &LoadArgs) -> Experiment {
    let mut base = defaults();
    if args.run.page.is_some() {
        base.keep_alive = vec![KeepAlive::Off];
    }
    base
}

pub fn load(args: &LoadArgs) -> Result<i32, CliError> {
    if args.run.metric.is_some() {
        return Err(CliError::usage(
            "--metric chooses what tlslab run's summary compares; tlslab load prints ab's figures of each request",
            "leave --metric out, or compare the stored requests with tlslab compare RESULTS.db --metric PHASE",
        ));
    }
    let mut experiment = crate::run::experiment(&args.run, base(args))?;
    if let Some(text) = &args.url {
        let url = parse_url(text)?;
        experiment.target = Some(url.address.clone());
        if experiment.sni.is_none() {
            experiment.sni = Some(url.host.clone());
        }
        if args.run.path.is_none() {
            experiment.path = url.path.clone();
        }
        if args.run.scheme.is_none() {
            experiment.scheme = vec![url.scheme];
        }
        if url.scheme == Scheme::Http && experiment.plain_port.is_none() {
            experiment.plain_port = Some(url.port);
        }
    }
    let printer = LoadPrinter {
        format: args.format.clone(),
        json: args.run.json,
        verbose: args.run.verbose,
        prepared: Mutex::new(None),
    };
    crate::run::execute(&args.run, experiment, &printer)
}

/// Prints the load figures (ab's layout with `--format ab`, JSON with `--json`), read while
/// the run summary is.
struct LoadPrinter {
    format: String,
    json: bool,
    verbose: bool,
    prepared: Mutex<Option<Result<LoadSummary, StoreError>>>,
}

impl Printer for LoadPrinter {
    fn prepare(&self, store: Result<Store, StoreError>) {
        let load = store.and_then(|store| LoadSummary::from_store(&store));
        *self.prepared.lock().unwrap_or_else(|e| e.into_inner()) = Some(load);
    }

    fn prepares(&self) -> bool {
        true
    }

    fn print(&self, store: &Store, summary: &RunSummary) -> Result<(), CliError> {
        let prepared = self
            .prepared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let load = match prepared {
            Some(load) => load?,
            None => LoadSummary::from_store(store)?,
        };
        if self.json {
            return output::print(format_args!("{}\n", output::json(&load)));
        }
        if self.format == "ab" {
            return output::print(render_ab(&load));
        }
        let mut text = render_load_text(&load);
        if self.verbose {
            // What the run summary knows beyond the load figures: phases, limit, bytes.
            text.push_str(&tlslab_report::render_details_of_each(summary));
        }
        for warning in &summary.warnings {
            text.push_str(&format!("warning: {}\n", Escaped(warning)));
        }
        text.push_str(&format!(
            "{} requests, {} errors · results: {}\n",
            summary.attempted,
            summary.errors,
            Escaped(&summary.store)
        ));
        output::print_fitted(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_target_the_name_the_path_and_the_scheme() {
        let url = parse_url("https://example.com/r/100?x=1").unwrap();
        assert_eq!(url.address, "example.com:443");
        assert_eq!(url.host, "example.com");
        assert_eq!(url.path, "/r/100?x=1");
        assert_eq!(url.scheme, Scheme::Https);
        let url = parse_url("http://127.0.0.1:8080").unwrap();
        assert_eq!((url.address.as_str(), url.port), ("127.0.0.1:8080", 8080));
        assert_eq!((url.path.as_str(), url.scheme), ("/", Scheme::Http));
        let url = parse_url("https://[::1]:8443/").unwrap();
        assert_eq!(url.address, "[::1]:8443");
        for bad in ["example.com", "ftp://example.com/", "https://", "not a url"] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
