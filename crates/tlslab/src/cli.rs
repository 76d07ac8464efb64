//! Command-line definitions. Comma-separated values become matrix dimensions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tlslab_core::Overrides;

#[derive(Debug, Parser)]
#[command(
    name = "tlslab",
    version,
    about = "A TLS handshake performance lab: every phase of every handshake, with statistics you can defend"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Worked examples at the end of `tlslab run --help`.
const RUN_EXAMPLES: &str = "Examples:
  tlslab run --tls 1.2,1.3                          TLS 1.2 against 1.3 on the lab server
  tlslab run --group x25519,x25519mlkem768 -c 1,16  post-quantum key exchange, two loads
  tlslab run --rtt 50ms --loss 0,1% --transport tcp,quic   an emulated network (root)
  tlslab run --resume off,tickets --early-data 0,1024       session techniques and 0-RTT
  tlslab run --target example.com:443 --tls 1.3     an external server (system roots)
  tlslab run examples/tls12-vs-tls13.toml --report  a study from a file, with its report
  tlslab run --tls 1.3 --threshold 'p99<5ms'        a CI gate: exit 4 when broken
Then: tlslab compare RESULTS.db --by tls, tlslab report RESULTS.db";

/// Worked examples at the end of `tlslab load --help`.
const LOAD_EXAMPLES: &str = "Examples:
  tlslab load -n 2000 -c 20                          keep-alive HTTP/1.1 on the lab server
  tlslab load --scheme http,https -c 1,20,40,60,80,100 -n 1000   what TLS costs, per load
  tlslab load --keep-alive off,on --format ab        ab's layout (grep 'Requests per second')
  tlslab load --arrival-rate 500/s --duration 10s -c 64          open loop, no coordinated omission
  tlslab load https://127.0.0.1:8443/r/30000 --insecure -n 500   a URL (a target)";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run handshakes against the embedded lab server or a target, and store every sample.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// HTTP requests under load, as ApacheBench or h2load make them, against the lab server
    /// or a URL: every request a sample, ab's figures and better ones, HTTPS against HTTP.
    #[command(after_help = LOAD_EXAMPLES)]
    Load(Box<LoadArgs>),
    /// Run the lab server on its own.
    Serve(ServeArgs),
    /// Compare the configs of a results store, or two sample files, with statistics.
    Compare(CompareArgs),
    /// Write a report of a results store: self-contained HTML with charts, or Markdown tables.
    Report(ReportArgs),
    /// Export a results store, one row per sample.
    Export(ExportArgs),
    /// Print the paths of a lab certificate chain (for nginx, openssl or curl), or a
    /// certificate's public-key pin (--pin-of).
    Pki(PkiArgs),
    /// Read packet captures (pcap or pcapng, also .gz or .zst) and store every TLS handshake
    /// in them as a sample, grouped into configs by what was negotiated.
    Pcap(PcapArgs),
    /// Capture live: every TLS handshake passing an interface, stored as it completes
    /// (needs root or CAP_NET_RAW). Stops at --duration, or on Ctrl-C with nothing lost.
    Capture(CaptureArgs),
    /// From a pilot run, the handshakes each Config needs to detect a difference, and how
    /// long they take at the measured rate.
    Plan(PlanArgs),
    /// What a server supports (versions, suites in order, groups, ALPN, certificate), how it
    /// compares with Mozilla's guidelines, and its grade, in one fast pass.
    Scan(crate::scan::ScanArgs),
    /// What each cryptographic primitive of a handshake costs this machine (signatures, key
    /// exchange, ML-KEM, AEAD, HKDF), per backend, as `openssl speed` tables or JSON Lines.
    Speed(crate::speed::SpeedArgs),
    /// One agent of a distributed run (`tlslab run --agents N`): joins the run in a
    /// PostgreSQL store, waits for its start, and runs the trials it claims.
    Agent(AgentArgs),
    /// List a results store's runs, or copy runs between stores (SQLite files and PostgreSQL
    /// databases, either way).
    Store(crate::store::StoreArgs),
    /// Print a shell completion script: `source <(tlslab completions bash)`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A results store (a short pilot run is enough: tlslab run ... -n 100): a file, or a
    /// database URL.
    #[arg(value_name = "RESULTS")]
    pub results: Option<PathBuf>,
    #[command(flatten)]
    pub store: ReadStoreArgs,
    /// The relative difference of medians to detect: 2% or 0.02.
    #[arg(long, default_value = "5%")]
    pub detect: String,
    /// The chance of detecting it when it is there.
    #[arg(long, default_value = "80%")]
    pub power: String,
    /// The significance level of the test.
    #[arg(long, default_value = "0.05")]
    pub alpha: String,
    /// The phase planned for (handshake, server_response, ttfb, ...).
    #[arg(long, default_value = "handshake")]
    pub metric: String,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The results store a reader reads when its RESULTS is not given, and which run of it.
#[derive(Debug, Args)]
pub struct ReadStoreArgs {
    /// The results store, instead of RESULTS: postgres://USER@HOST[:PORT]/DATABASE (a
    /// PostgreSQL database; a password from PGPASSWORD or ~/.pgpass, as psql takes it), or a
    /// file path; default: $TLSLAB_STORE.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The run to read, by its number (default: a database's latest); a results file holds
    /// one run.
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write tlslab.1 and tlslab-<command>.1 here instead of printing tlslab.1.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace an existing file of another kind (without it, only a file of the same kind is
    /// replaced); never a results store or an input.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The URL to load: https://HOST[:PORT]/PATH or http://... (default: the lab server).
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// How to print the figures: text (tlslab's), ab (ApacheBench's layout, one block per
    /// Config).
    #[arg(long, default_value = "text", value_parser = ["text", "ab"])]
    #[arg(help_heading = "Output")]
    pub format: String,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// An experiment file (TOML); flags given too override its values. Its `[[config]]`
    /// tables (exact Configs over the defaults) run alone, or after the crossed matrix when
    /// the file's top level or a flag names a dimension (or `matrix = true`): each Config
    /// once (examples/explicit-configs.toml).
    pub experiment: Option<PathBuf>,
    /// TLS versions: 1.2, 1.3.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub tls: Option<Vec<String>>,
    /// Cipher suites: aes128gcm, aes256gcm, chacha20, or full IANA/OpenSSL names; the legacy
    /// TLS 1.2 suites ECDHE-RSA-AES128-SHA, DHE-RSA-AES128-GCM-SHA256, AES256-GCM-SHA384 need
    /// OpenSSL.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub suite: Option<Vec<String>>,
    /// Key-exchange groups: x25519, secp256r1, secp384r1, x25519mlkem768, secp256r1mlkem768,
    /// mlkem768, mlkem1024; ffdhe2048, ffdhe3072 (OpenSSL only).
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub group: Option<Vec<String>>,
    /// Lab server certificate profiles: rsa2048, rsa3072, rsa4096, ecdsa-p256, ecdsa-p384,
    /// ed25519, mldsa44, mldsa65, mldsa87.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub cert: Option<Vec<String>>,
    /// Certificates the lab server sends (leaf plus intermediates), 1 to 5.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub chain: Option<Vec<u8>>,
    /// Concurrent agents.
    #[arg(short = 'c', long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub concurrency: Option<Vec<u32>>,
    /// How attempts start: closed (each agent starts its next attempt when its last ends),
    /// RATE/s on a schedule (open loop: latency counts from each intended start, so a stalled
    /// server cannot hide its queue; -c agents share the schedule), or a ramp FROM/s..TO/s
    /// swept in 10 steps (FROM/s..TO/s:STEPS), each step a Config.
    #[arg(long, value_delimiter = ',', value_name = "RATE")]
    #[arg(help_heading = "Load shape")]
    pub arrival_rate: Option<Vec<String>>,
    /// How an open loop spaces its arrivals: uniform (exactly 1/rate apart) or poisson
    /// (exponential gaps of that mean, drawn from the run's seed).
    #[arg(long, value_name = "PROCESS")]
    #[arg(help_heading = "Load shape")]
    pub arrivals: Option<String>,
    /// Measured time per Config instead of -n (30s, 2m): a closed loop runs that long (in
    /// up to 10 timed blocks); an open loop's count is its rate times this (a ramp's steps
    /// share it).
    #[arg(long)]
    #[arg(help_heading = "Load shape")]
    pub duration: Option<String>,
    /// Measured handshakes per config.
    #[arg(short = 'n', long)]
    #[arg(help_heading = "Plan and stopping")]
    pub handshakes: Option<u64>,
    /// Warm-up handshakes per config (stored, flagged, left out of statistics).
    #[arg(long)]
    #[arg(help_heading = "Plan and stopping")]
    pub warmup: Option<u64>,
    /// Handshakes per config per round.
    #[arg(long)]
    #[arg(help_heading = "Plan and stopping")]
    pub block: Option<u64>,
    /// Seed for the shuffled order of blocks.
    #[arg(long)]
    #[arg(help_heading = "Plan and stopping")]
    pub seed: Option<u64>,
    /// Per-attempt time limit (500ms, 10s, 1m).
    #[arg(long)]
    #[arg(help_heading = "Plan and stopping")]
    pub timeout: Option<String>,
    /// Session resumption: off, tickets, session-id (a server-side cache; in TLS 1.3,
    /// single-use tickets). Each agent's first handshake is full, the rest resume. A bare
    /// --resume means tickets.
    #[arg(long, value_delimiter = ',', num_args = 0..=1, default_missing_value = "tickets")]
    #[arg(help_heading = "Sessions")]
    pub resume: Option<Vec<String>>,
    /// TLS 1.3 0-RTT: bytes of early data on resumed handshakes (the request, padded to this
    /// size); 0 sends none. Needs --resume.
    #[arg(long, value_delimiter = ',', value_name = "BYTES")]
    #[arg(help_heading = "Sessions")]
    pub early_data: Option<Vec<u64>>,
    /// Skip re-verifying certificate chains the client already verified: off, on.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Sessions")]
    pub cert_cache: Option<Vec<String>>,
    /// TLS 1.3 HelloRetryRequest: off, on (the client's first key share is for another group,
    /// so the lab server asks again and the handshake takes one more round trip).
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Sessions")]
    pub hello_retry: Option<Vec<String>>,
    /// Mutual TLS with the lab server: off, on (the lab server requires a client certificate
    /// and the client presents the lab's; see --client-cert-profile). For a --target, give
    /// --client-cert and --client-key instead.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Sessions")]
    pub mtls: Option<Vec<String>>,
    /// The key type of the lab client certificate --mtls on presents, a certificate profile
    /// as for --cert.
    #[arg(long, value_name = "PROFILE")]
    #[arg(help_heading = "Sessions")]
    pub client_cert_profile: Option<String>,
    /// Transports: tcp (TLS over TCP), quic.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Transport and HTTP")]
    pub transport: Option<Vec<String>>,
    /// A request after the handshake: none, 1.1, 2 (over TCP), 3 (over QUIC); records the
    /// time to first byte and the total time.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Transport and HTTP")]
    pub http: Option<Vec<String>>,
    /// The request's path.
    #[arg(long)]
    #[arg(help_heading = "Transport and HTTP")]
    pub path: Option<String>,
    /// HTTP keep-alive: off (every attempt opens a connection and shakes hands), on (an
    /// agent's first request opens one, the rest reuse it; HTTP/1.1 over TCP).
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Transport and HTTP")]
    pub keep_alive: Option<Vec<String>>,
    /// https, http (plain HTTP to the same host: the lab server's plain port, or the
    /// target's), side by side to see what TLS costs a request.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Transport and HTTP")]
    pub scheme: Option<Vec<String>>,
    /// Page mode: each attempt loads a page, the document at --path and these resources
    /// (COUNT:SIZE,...: 86:30KB, or @FILE: lines of COUNT:SIZE, or a HAR file saved from a
    /// browser), as a browser does: six connections over HTTP/1.1, one multiplexed over
    /// HTTP/2; the lab server serves them as /r/SIZE.
    #[arg(long)]
    #[arg(help_heading = "Transport and HTTP")]
    pub page: Option<String>,
    /// The port of a target's plain HTTP, for --scheme http.
    #[arg(long)]
    #[arg(help_heading = "Transport and HTTP")]
    pub plain_port: Option<u16>,
    /// TLS libraries, client and lab server alike: rustls, openssl.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub backend: Option<Vec<String>>,
    /// Client libraries, crossed with --server-backend (each overrides --backend on its side).
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub client_backend: Option<Vec<String>>,
    /// Lab server libraries, crossed with --client-backend.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub server_backend: Option<Vec<String>>,
    /// Encrypted ClientHello: off, on, grease (TLS 1.3; `on` needs the OpenSSL lab server or
    /// --ech-config). Each sample records accepted, rejected, grease or not_offered.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Encrypted ClientHello")]
    pub ech: Option<Vec<String>>,
    /// The ECHConfigList of a --target, base64 (the ech= value of its HTTPS DNS record).
    #[arg(long, value_name = "BASE64")]
    #[arg(help_heading = "Encrypted ClientHello")]
    pub ech_config: Option<String>,
    /// The public name in the lab server's ECH configuration.
    #[arg(long, value_name = "NAME")]
    #[arg(help_heading = "Encrypted ClientHello")]
    pub ech_public_name: Option<String>,
    /// Body size in bytes of the lab server's responses.
    #[arg(long, value_name = "BYTES")]
    #[arg(help_heading = "Transport and HTTP")]
    pub body: Option<u64>,
    /// After the run, re-send captured 0-RTT flights to the lab server and show that it
    /// rejects every replay.
    #[arg(long)]
    #[arg(help_heading = "Sessions")]
    pub replay: bool,
    /// How to close after the handshake: reset (RST) or graceful (FIN).
    #[arg(long)]
    #[arg(help_heading = "Transport and HTTP")]
    pub close: Option<String>,
    /// An external server instead of the lab server.
    #[arg(long, value_name = "HOST:PORT")]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub target: Option<String>,
    /// Server name to send and verify.
    #[arg(long)]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub sni: Option<String>,
    /// Pin the target's address, as curl's --resolve (repeat for several): no DNS query is
    /// made for HOST on PORT. IPv6 addresses in brackets: example.com:443:[2001:db8::7].
    #[arg(long, value_name = "HOST:PORT:ADDRESS")]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub resolve: Option<Vec<String>>,
    /// When the target's name is resolved: once (before the run) or per-attempt
    /// (before each attempt, timed as the dns phase; the lab server is looked up as
    /// localhost).
    #[arg(long, value_name = "once|per-attempt")]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub dns: Option<String>,
    /// PEM file of trusted roots for --target.
    #[arg(long)]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub ca: Option<PathBuf>,
    /// PEM file of the client certificate (leaf first, then any intermediates) for a --target
    /// that requires one (mutual TLS); with --client-key.
    #[arg(long, value_name = "FILE")]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub client_cert: Option<PathBuf>,
    /// PEM file of the client certificate's private key (RSA, ECDSA or Ed25519; PKCS#8, SEC1
    /// or PKCS#1); with --client-cert.
    #[arg(long, value_name = "FILE")]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub client_key: Option<PathBuf>,
    /// Do not verify certificates (recorded in every sample).
    #[arg(long)]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub insecure: bool,
    /// The server's public key must match: sha256//BASE64 (several separated by ';'), as
    /// curl's --pinnedpubkey; with --insecure, the pin alone is checked.
    #[arg(long, value_name = "sha256//BASE64")]
    #[arg(help_heading = "Target (an external server instead of the lab server)")]
    pub pin: Option<String>,
    /// A limit the run must keep, else it exits 4 (repeat for several): [LABEL TEXT:]
    /// [PHASE.]STATISTIC OP DURATION ('p99<5ms', 'server_response.median<=1ms'), 'errors<1%',
    /// 'rate>1000/s'; statistics min, median, mean, max, p90, p99, p99.9, ...
    #[arg(long = "threshold", value_name = "EXPRESSION")]
    #[arg(help_heading = "Plan and stopping")]
    pub thresholds: Option<Vec<String>>,
    /// Labels for the configs, in matrix order.
    #[arg(long, value_delimiter = ',')]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub label: Option<Vec<String>>,
    /// Drop invalid combinations instead of rejecting the experiment.
    #[arg(long)]
    #[arg(
        help_heading = "Matrix (each comma-separated list is a dimension; every combination is a Config)"
    )]
    pub skip_invalid: bool,
    /// Stop a config early once its median's 95% CI half-width is within this share of the
    /// median (2% or 0.02); -n stays the maximum.
    #[arg(long, value_name = "PERCENT")]
    #[arg(help_heading = "Plan and stopping")]
    pub until_ci: Option<String>,
    /// Emulated round-trip delays, half each way (30ms, 150ms). Any network flag puts client
    /// and server in network namespaces joined by an emulated link.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Network emulation")]
    pub rtt: Option<Vec<String>>,
    /// Emulated delay variation per packet and direction (2ms); packet order is kept.
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Network emulation")]
    pub jitter: Option<Vec<String>>,
    /// Emulated random loss per packet and direction (0, 0.5%, 0.01).
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Network emulation")]
    pub loss: Option<Vec<String>>,
    /// Emulated bandwidth per direction (100mbit, 1gbit).
    #[arg(long, value_delimiter = ',')]
    #[arg(help_heading = "Network emulation")]
    pub bandwidth: Option<Vec<String>>,
    /// The old name of --bandwidth, kept for one release (with a warning).
    #[arg(long, value_delimiter = ',', hide = true, conflicts_with = "bandwidth")]
    pub rate: Option<Vec<String>>,
    /// Network emulator: auto (netem, else tun, else relay), netem, tun or relay.
    #[arg(long)]
    #[arg(help_heading = "Network emulation")]
    pub emulator: Option<String>,
    /// Start this server (nginx, haproxy) in the server's network namespace instead of the lab
    /// server; --target names its port. Run with `sh -c`; stopped when the run ends, with
    /// everything it started, a server that daemonised too.
    #[arg(long, value_name = "COMMAND")]
    #[arg(help_heading = "Network emulation")]
    pub server_cmd: Option<String>,
    /// Exit 1 when the fraction of failed attempts exceeds this.
    #[arg(long)]
    #[arg(help_heading = "Plan and stopping")]
    pub max_error_rate: Option<f64>,
    /// Results file (default: ./tlslab-results/<UTC time>.db); the same as --store PATH.
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Where the results go: postgres://USER@HOST[:PORT]/DATABASE (a new run in a shared
    /// PostgreSQL database; a password from PGPASSWORD or ~/.pgpass, as psql takes it, is
    /// never stored or shown), or a file path; default: $TLSLAB_STORE, else as --out.
    #[arg(long, value_name = "URL", conflicts_with = "out")]
    #[arg(help_heading = "Output")]
    pub store: Option<String>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub json: bool,
    /// Print each Config's details under the table (phases, limit, CPU, bytes, trust,
    /// network) and every comparison's full statistics (per stratum, tests, effect sizes).
    #[arg(short, long)]
    #[arg(help_heading = "Output")]
    pub verbose: bool,
    /// Print the experiment as TOML and exit without running.
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub dump_experiment: bool,
    /// Where lab certificates are cached (default: $TLSLAB_PKI_DIR or ~/.cache/tlslab/pki).
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub pki_dir: Option<PathBuf>,
    /// Print only the last line of the summary (attempts, errors, seed, results file, and
    /// the report with --report) on stdout, and warnings and errors on stderr, as `curl -sS`
    /// does: for scripts, which read the results file or the exit code. No progress bar.
    /// With --json the JSON is still printed (it is what was asked for).
    #[arg(short, long)]
    #[arg(help_heading = "Output")]
    pub quiet: bool,
    /// Write every handshake's secrets here (SSLKEYLOGFILE format, mode 0600), so a capture
    /// of the run can be decrypted; default: $SSLKEYLOGFILE when set.
    #[arg(long, value_name = "FILE")]
    #[arg(help_heading = "Output")]
    pub keylog: Option<PathBuf>,
    /// Record the run's own packets into this pcap file (where the client sends them; needs
    /// root or CAP_NET_RAW) and, at the end, check each handshake's timestamps against its
    /// packets: the median and p99 difference per event.
    #[arg(long, value_name = "FILE")]
    #[arg(help_heading = "Output")]
    pub capture: Option<PathBuf>,
    /// Replace an existing file of another kind at --out, --keylog, --capture or the report
    /// (without it, only a file of the same kind is replaced, and a key log appended to);
    /// never a results store or an input.
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub force: bool,
    /// Also write the HTML report beside the results file when the run ends.
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub report: bool,
    /// The phase the summary's table, its verdicts and its gains all use (handshake, ttfb,
    /// total, server_response, ...); default: the question's (ttfb when the Configs vary a
    /// session technique, the transport or the HTTP version and all send a request; total
    /// for requests on kept connections or plain HTTP; else handshake).
    #[arg(long)]
    #[arg(help_heading = "Output")]
    pub metric: Option<String>,
    /// Run the plan with N agent processes (`tlslab agent`, on any machines) instead of this
    /// one: the plan and the run go into the --store database, the agents claim its trials,
    /// and this process waits for them and prints the merged summary. Needs --target and a
    /// postgres:// store; default: none (this process runs the plan).
    #[arg(long, value_name = "N")]
    #[arg(help_heading = "Distributed")]
    pub agents: Option<u32>,
    /// With --agents: store and publish the run, print its number alone on stdout, and exit
    /// without waiting (read it later with `tlslab report --store URL --run ID`).
    #[arg(long, requires = "agents")]
    #[arg(help_heading = "Distributed")]
    pub detach: bool,
    /// With --agents: every agent runs every trial at once, each its share of the Config's
    /// clients (--concurrency) and attempts, all starting each trial together (one
    /// Config's load from many machines). Without it, each trial goes whole to whichever
    /// agent claims it next.
    #[arg(long, requires = "agents")]
    #[arg(help_heading = "Distributed")]
    pub gang: bool,
}

/// `tlslab agent`: one agent of a distributed run.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The database the run is in (postgres://…; a password from PGPASSWORD or ~/.pgpass);
    /// default: $TLSLAB_STORE.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The run to join, as `tlslab run --agents N --detach` printed it; default: $TLSLAB_RUN.
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
    /// Which of N agents this is, I/N from 0 (in Kubernetes $(JOB_COMPLETION_INDEX)/N, in
    /// Slurm $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); default: $TLSLAB_SHARD. Trials are
    /// claimed, not divided: the shard names the agent in the summary.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// How long to wait for the run's start (every agent it waits for registered), in
    /// seconds.
    #[arg(long, value_name = "SECONDS", default_value = "600")]
    pub wait_start: u64,
    /// The lab's certificate directory (default: $TLSLAB_PKI_DIR, else the user's cache).
    #[arg(long, value_name = "DIR")]
    pub pki_dir: Option<PathBuf>,
    /// Print what the agent did as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl RunArgs {
    /// The flags that describe the experiment, as typed: core parses and checks them
    /// (`Experiment::apply`), the same way it reads an experiment file.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            tls: self.tls.clone(),
            suite: self.suite.clone(),
            group: self.group.clone(),
            cert: self.cert.clone(),
            chain: self.chain.clone(),
            concurrency: self.concurrency.clone(),
            arrival_rate: self.arrival_rate.clone(),
            arrivals: self.arrivals.clone(),
            duration: self.duration.clone(),
            handshakes: self.handshakes,
            warmup: self.warmup,
            block: self.block,
            seed: self.seed,
            timeout: self.timeout.clone(),
            resume: self.resume.clone(),
            early_data: self.early_data.clone(),
            cert_cache: self.cert_cache.clone(),
            hello_retry: self.hello_retry.clone(),
            mtls: self.mtls.clone(),
            client_cert_profile: self.client_cert_profile.clone(),
            keep_alive: self.keep_alive.clone(),
            scheme: self.scheme.clone(),
            plain_port: self.plain_port,
            transport: self.transport.clone(),
            http: self.http.clone(),
            path: self.path.clone(),
            page: self.page.clone(),
            backend: self.backend.clone(),
            client_backend: self.client_backend.clone(),
            server_backend: self.server_backend.clone(),
            ech: self.ech.clone(),
            ech_config: self.ech_config.clone(),
            ech_public_name: self.ech_public_name.clone(),
            body: self.body,
            replay: self.replay,
            close: self.close.clone(),
            target: self.target.clone(),
            sni: self.sni.clone(),
            resolve: self.resolve.clone(),
            dns: self.dns.clone(),
            ca: self.ca.clone(),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
            insecure: self.insecure,
            pin: self.pin.clone(),
            thresholds: self.thresholds.clone(),
            labels: self.label.clone(),
            skip_invalid: self.skip_invalid,
            until_ci: self.until_ci.clone(),
            max_error_rate: self.max_error_rate,
            rtt: self.rtt.clone(),
            jitter: self.jitter.clone(),
            loss: self.loss.clone(),
            bandwidth: self.bandwidth.clone().or_else(|| self.rate.clone()),
            emulator: self.emulator.clone(),
            server_cmd: self.server_cmd.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A distributed run's database (postgres://…) to report this server's CPU time and
    /// memory into as it serves (with --run): each trial's server cost is then measured
    /// though the server is its own host.
    #[arg(long, value_name = "URL", requires = "run")]
    pub store: Option<String>,
    /// The distributed run (`tlslab run --agents N` printed its number).
    #[arg(long, value_name = "ID", requires = "store")]
    pub run: Option<i64>,
    /// Certificate profile.
    #[arg(long, default_value = "ecdsa-p256")]
    pub cert: String,
    /// Certificates sent: leaf plus intermediates, 1 to 5.
    #[arg(long, default_value_t = 1)]
    pub chain: u8,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8443")]
    pub listen: String,
    /// Address to serve the same site on over plain-text HTTP/1.1 and h2c (default: a free
    /// port on --listen's address).
    #[arg(long, value_name = "ADDR")]
    pub plain_listen: Option<String>,
    /// Resumption: off, tickets (stateless), cache (session IDs and single-use TLS 1.3
    /// tickets).
    #[arg(long, default_value = "off", default_missing_value = "tickets", num_args = 0..=1)]
    pub resumption: String,
    /// Accept TLS 1.3 early data (0-RTT) and answer it before the handshake completes.
    #[arg(long)]
    pub early_data: bool,
    /// Body size in bytes of the response to / (/r/<bytes> answers any size up to 64 MiB).
    #[arg(long, default_value_t = 1024)]
    pub body: u64,
    /// The TLS library: rustls (TLS and QUIC) or openssl (TLS over TCP, with ECH).
    #[arg(long, default_value = "rustls")]
    pub backend: String,
    /// The public name of the OpenSSL server's ECH configuration.
    #[arg(long, default_value = "public.tlslab.test", value_name = "NAME")]
    pub ech_public_name: String,
    /// Require a client certificate (mutual TLS) issued by the lab root of this profile; the
    /// lab's own for the profile is made on first use, and its files are printed.
    #[arg(long, value_name = "PROFILE")]
    pub client_cert_profile: Option<String>,
    /// Answer usage requests on stdin/stdout (used by `tlslab run`).
    #[arg(long, hide = true)]
    pub control: bool,
    #[arg(long)]
    pub pki_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Csv,
    Jsonl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Html,
    Md,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results file written by `tlslab run`, or a database URL (as --store).
    pub results: Option<PathBuf>,
    #[command(flatten)]
    pub store: ReadStoreArgs,
    /// Output file (default: the results file with .html or .md; for a database's run,
    /// DATABASE-runN.html here).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// html (charts, self-contained) or md (tables for papers and pull requests); default:
    /// from the output's extension, else html.
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Also write every chart as a PNG into this directory.
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Replace an existing file of another kind (without it, only a file of the same kind is
    /// replaced); never a results store or an input.
    #[arg(long)]
    pub force: bool,
    /// The phase the report's summary table, comparisons and gains use (handshake, ttfb,
    /// total, ...); default: the question's, as `tlslab run` chose it.
    #[arg(long)]
    pub metric: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A results file written by `tlslab run`, or a database URL (as --store).
    pub results: Option<PathBuf>,
    #[command(flatten)]
    pub store: ReadStoreArgs,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: Format,
    /// Output file (default: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace an existing file of another kind (without it, only a file of the same kind is
    /// replaced); never a results store or an input.
    #[arg(long)]
    pub force: bool,
    /// Export the stored scans (`tlslab scan --out`) instead of the samples: JSON Lines,
    /// one scan a line, its `--json` object under `scan` (whatever --format says).
    #[arg(long)]
    pub scans: bool,
    /// Export the stored price lists (`tlslab speed --out`) instead of the samples: JSON
    /// Lines, one measured operation a line, with the machine and the build (whatever
    /// --format says).
    #[arg(long, conflicts_with = "scans")]
    pub speed: bool,
}

#[derive(Debug, Args)]
pub struct PcapArgs {
    /// Capture files, read in the order given (a rotated capture's connections continue
    /// across its files).
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// Results file (default: ./tlslab-results/<UTC time>.db); the same as --store PATH.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Where the handshakes go: postgres://USER@HOST[:PORT]/DATABASE (a new run in a shared
    /// PostgreSQL database), or a file path; default: $TLSLAB_STORE, else as --out.
    #[arg(long, value_name = "URL", conflicts_with = "out")]
    pub store: Option<String>,
    /// Replace an existing file of another kind (without it, only a file of the same kind is
    /// replaced); never a results store or an input.
    #[arg(long)]
    pub force: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// A key log (SSLKEYLOGFILE format: `tlslab run --keylog`, browsers, curl) to decrypt
    /// TLS 1.3 handshakes with: exact message times, the signature scheme, ALPN, 0-RTT
    /// acceptance and the first response byte.
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Also write each handshake to InfluxDB, stamped with its capture time (the write URL,
    /// as `tlslab capture --influx`).
    #[arg(long, value_name = "URL")]
    pub influx: Option<String>,
    /// Read only the packets this BPF expression passes, in tcpdump's syntax (for example
    /// 'tcp port 443'); libpcap compiles it for each file's link type.
    #[arg(long, value_name = "BPF")]
    pub filter: Option<String>,
    /// Where the packets were captured, when you know it: `client` (the client's host or
    /// its network), `server` or `middle`. By default each connection's vantage is read
    /// from the gaps of its handshake, which cannot tell a QUIC client from a server when
    /// the round trip is as short as the peers' own work (the vantage is then `middle`, and
    /// the client's events are left empty).
    #[arg(long, value_enum)]
    pub vantage: Option<CaptureVantage>,
}

/// `--vantage`: where a capture was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CaptureVantage {
    Client,
    Server,
    Middle,
}

impl CaptureVantage {
    pub fn vantage(self) -> tlslab_core::Vantage {
        match self {
            CaptureVantage::Client => tlslab_core::Vantage::Client,
            CaptureVantage::Server => tlslab_core::Vantage::Server,
            CaptureVantage::Middle => tlslab_core::Vantage::Middle,
        }
    }
}

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The interface to capture on (`ip link` lists them); `any` for all.
    #[arg(short, long, default_value = "any")]
    pub interface: String,
    /// Capture only the packets this BPF expression passes, in tcpdump's syntax (for example
    /// 'tcp port 443'): the kernel filters, so the rest costs nothing. It sees IP packets
    /// (no link header), as `tlslab pcap --filter` does on files.
    #[arg(long, value_name = "BPF")]
    pub filter: Option<String>,
    /// Stop after this long (for example 30s, 10m); default: until Ctrl-C or SIGTERM.
    #[arg(long)]
    pub duration: Option<String>,
    /// Results file (default: ./tlslab-results/<UTC time>.db); the same as --store PATH.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Where the handshakes go as they complete: postgres://USER@HOST[:PORT]/DATABASE (a
    /// new run in a PostgreSQL database that other capture points may share), or a file
    /// path; default: $TLSLAB_STORE, else as --out.
    #[arg(long, value_name = "URL", conflicts_with = "out")]
    pub store: Option<String>,
    /// Join this capture run of the --store database as one more capture point (the first
    /// capture point prints its run's number), rather than starting a new run.
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
    /// This capture point's name, kept with each Config and shown in its label as `@NAME`
    /// (compare --by capture-point); default: HOST/INTERFACE.
    #[arg(long, value_name = "NAME")]
    pub capture_point: Option<String>,
    /// Also write the packets to this pcap file (raw IP, nanosecond timestamps).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// With --write: start a new file once this much is written (100MB, 1GB) or this much
    /// capture time has passed (10m, 1h); files are NAME-000001.pcap, NAME-000002.pcap, ...
    #[arg(long, value_name = "SIZE|DURATION", requires = "write")]
    pub rotate: Option<String>,
    /// Replace an existing file of another kind (without it, only a file of the same kind is
    /// replaced); never a results store or an input.
    #[arg(long)]
    pub force: bool,
    /// A key log to decrypt TLS 1.3 handshakes with (as `tlslab pcap --keylog`).
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDRESS/metrics (for example 127.0.0.1:9464):
    /// handshakes by version, suite, group and outcome; a histogram per phase.
    #[arg(long, value_name = "ADDRESS")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Also write each handshake to InfluxDB: its write URL, for example
    /// 'http://127.0.0.1:8086/write?db=tlslab' (1.x) or
    /// 'http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET' with INFLUX_TOKEN set (2.x).
    #[arg(long, value_name = "URL")]
    pub influx: Option<String>,
    /// Where the interface sees the packets (as `tlslab pcap --vantage`).
    #[arg(long, value_enum)]
    pub vantage: Option<CaptureVantage>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PkiArgs {
    /// Print the public-key pin of the (first) certificate in this PEM file, as --pin takes
    /// it (sha256//BASE64), instead of the lab chain's paths.
    #[arg(long, value_name = "FILE")]
    pub pin_of: Option<PathBuf>,
    #[arg(long, default_value = "ecdsa-p256")]
    pub cert: String,
    #[arg(long, default_value_t = 1)]
    pub chain: u8,
    /// Also print the lab client certificate of the --cert profile and its key (mutual TLS:
    /// clientAuth, issued by the same root), made on first use.
    #[arg(long)]
    pub client: bool,
    #[arg(long)]
    pub pki_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A results store (a file, or a database URL as --store), or two sample files BASELINE
    /// OTHER (one number per line, or a CSV column chosen with --column).
    #[arg(num_args = 0..=2)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub store: ReadStoreArgs,
    /// The config the others are compared with (default: the first); with two sample
    /// files, one of them, by its path or file name (default: the first); with --by, the
    /// dimension's baseline value (default: its first as listed: the smallest for numbers
    /// such as concurrency or RTT, else the first Config's; or the first that some Config
    /// shares everything else with, when the first has no such partner).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Compare by one dimension with every other held fixed (tls, suite, group, cert,
    /// chain, concurrency, transport, http, resume, early-data, cert-cache, hello-retry, mtls,
    /// client-backend, server-backend, ech, rtt, loss, target, capture-point): one contrast
    /// per stratum, then a pooled ratio, van Elteren's test and the dimensions it depends on.
    /// `none`: every config against the baseline config, as without --by.
    #[arg(long, value_name = "DIMENSION")]
    pub by: Option<String>,
    /// The phase or event compared (handshake, server_response, cert_validation, total, ...);
    /// default: the question's, as the run summary chose it: total (the request's time) for
    /// requests on kept connections or over plain HTTP (`tlslab load`), where most samples
    /// have no handshake; ttfb when every Config sends a request and they vary a session
    /// technique, the transport or the HTTP version; else handshake.
    #[arg(long)]
    pub metric: Option<String>,
    /// For sample files: the CSV column holding the values.
    #[arg(long)]
    pub column: Option<String>,
    /// Significance level of the verdicts.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 9_999)]
    pub resamples: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 12_345)]
    pub seed: u64,
    /// Print the comparisons as JSON.
    #[arg(long)]
    pub json: bool,
    /// A regression gate: exit 4 when a comparison finds the other slower (its median
    /// higher), faster, or either (different) than the baseline, by the verdict rule.
    #[arg(long, value_enum)]
    pub fail_on: Option<Gate>,
    /// Takes in a capture's incomplete handshakes (the capture ended, or lacks their later
    /// records), each in the phases it shows: server_response or tcp_connect, say. By
    /// default only completed handshakes are compared.
    #[arg(long)]
    pub include_incomplete: bool,
}

/// What `tlslab compare --fail-on` refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Gate {
    Slower,
    Faster,
    Different,
}
