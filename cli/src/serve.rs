//! `mcpvisor serve`: the supervisor as a long-lived MCP server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcpvisor::Host;
use mcpvisor::settings::Settings;
use mcpvisor_serve::http::{BearerToken, HttpEndpoint, HttpOptions};
use mcpvisor_serve::lines::serve_lines;
use mcpvisor_serve::socket::{SocketError, SocketListener, SocketPlace};
use mcpvisor_serve::{Gateway, GatewayOptions, Naming, Reloader};

use crate::Failure;
use crate::output;
use crate::relay;
use crate::stop::StopSignals;

/// Options of `mcpvisor serve`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Serve one MCP session on stdin/stdout (for a host's config entry).
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp. Clients send
    /// `Authorization: Bearer <token>`: the token is made at start into a 0600
    /// file beside the local socket (see --print-token), or read from --token-file.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// A 0600 file of yours holding the bearer token HTTP clients must send
    /// (instead of the one made beside the socket). In a cluster, give every
    /// node the same file: nodes pass one another 2026-07-28 requests with it.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// Serve HTTP without a bearer token (loopback only): every local user
    /// can then call every tool as you. For trying things out.
    #[arg(long, conflicts_with = "token_file")]
    no_token: bool,
    /// Print the bearer token HTTP clients of this configuration's serve send
    /// (made now if there is none yet), then exit. Also at `--print-token-path`.
    #[arg(long, conflicts_with_all = ["token_file", "no_token", "print_token_path"])]
    print_token: bool,
    /// Print where that token is kept, then exit.
    #[arg(long, conflicts_with_all = ["token_file", "no_token"])]
    print_token_path: bool,
    /// An Origin accepted besides loopback ones (repeatable).
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// How tools and prompts are named to clients: `qualified`
    /// (`mcp__server__tool`), `short` (`server__tool`, for hosts that prefix
    /// names again) or `original` (the server's own name; one two servers
    /// share is served by neither).
    #[arg(long, value_name = "MODE", value_parser = parse_names, conflicts_with = "short_names")]
    names: Option<Naming>,
    /// `--names short`.
    #[arg(long)]
    short_names: bool,
    /// HTTP sessions open at once.
    #[arg(long, default_value_t = 64)]
    max_sessions: usize,
    /// An idle HTTP session is closed after this many milliseconds.
    #[arg(long, default_value_t = 30 * 60 * 1000)]
    session_idle_ms: u64,
    /// An HTTP session that has not sent `notifications/initialized` this
    /// many milliseconds after `initialize` (and has nothing in flight) is closed.
    #[arg(long, default_value_t = 10_000)]
    session_init_ms: u64,
    /// HTTP connections open at once; more are closed as they are accepted.
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// A request's line and headers must arrive within this many
    /// milliseconds; a connection silent that long is closed.
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// A request's body must arrive within this many milliseconds (408).
    #[arg(long, default_value_t = 30_000)]
    body_timeout_ms: u64,
    /// A write to an HTTP client that makes no progress this many
    /// milliseconds (it stopped reading) ends its connection.
    #[arg(long, default_value_t = 30_000)]
    write_timeout_ms: u64,
    /// Threads running sessions and connections. One answers a call with the
    /// fewest hand-offs between threads (lower latency and CPU per call); more
    /// help when many sessions move large listings or results at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    worker_threads: u16,
    /// Let `mcpvisor inject` (the `mcpvisor/inject` method) deal faults to the
    /// servers: through the local socket and stdio, and over HTTP only with
    /// a bearer token (not with --no-token). For testing how an agent copes;
    /// off by default.
    #[arg(long)]
    allow_faults: bool,
    #[command(flatten)]
    cluster: crate::cluster::ClusterArgs,
}

impl ServeArgs {
    /// The runtime's worker threads.
    pub(crate) fn worker_threads(&self) -> usize {
        usize::from(self.worker_threads)
    }
}

pub(crate) async fn serve(
    args: ServeArgs,
    settings: &Settings,
    config: Option<PathBuf>,
    specs: impl Fn() -> Result<Vec<mcpvisor::ServerSpec>, Failure> + Send + Sync + 'static,
    stop: &mut StopSignals,
) -> Result<ExitCode, Failure> {
    let naming = match (args.names, args.short_names) {
        (Some(naming), _) => naming,
        (None, true) => Naming::Short,
        (None, false) => Naming::Qualified,
    };
    let place = SocketPlace::for_config(&settings.home, config.as_deref())
        .map_err(|e| Failure(format!("cannot name the socket: {e}"), 1))?;
    if args.print_token || args.print_token_path {
        let token = serve_token(&place)?;
        if args.print_token {
            println!("{}", token.expose());
        } else {
            println!("{}", place.token.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    // One supervisor per configuration: a second host shares the running one,
    // and takes its servers over when it goes.
    let wanted = relay::Wanted {
        naming,
        faults: args.allow_faults,
    };
    let mut takeover: Option<relay::Takeover> = None;
    let mut host_input = relay::HostInput::new();
    let mut deadline = tokio::time::Instant::now() + TAKEOVER_WAIT;
    let listener = loop {
        match SocketListener::bind(&place) {
            Ok(listener) => break listener,
            Err(SocketError::AlreadyServing { .. }) if args.stdio && args.http.is_none() => {
                match relay::relay(&place, wanted, takeover.as_ref(), &mut host_input).await? {
                    Some(relay::Relayed::Done) => return Ok(ExitCode::SUCCESS),
                    Some(relay::Relayed::ServeGone(kept)) => {
                        eprintln!(
                            "mcpvisor: the serve this session shared stopped; this one takes over its servers"
                        );
                        takeover = Some(kept);
                        deadline = tokio::time::Instant::now() + TAKEOVER_WAIT;
                    }
                    // The lock is held but nothing answers: a serve on its way
                    // out (or in); try again in a moment, for a while.
                    None if tokio::time::Instant::now() < deadline => {}
                    None => {
                        return Err(Failure(
                            "another serve holds this configuration's lock but does not answer"
                                .into(),
                            1,
                        ));
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(Failure(e.to_string(), 1)),
        }
    };
    let mut http_options = HttpOptions::default();
    http_options.max_sessions = args.max_sessions;
    http_options.idle = Duration::from_millis(args.session_idle_ms);
    http_options.init_timeout = Duration::from_millis(args.session_init_ms);
    http_options.max_connections = args.max_connections.max(1);
    http_options.header_timeout = Duration::from_millis(args.header_timeout_ms.max(1));
    http_options.body_timeout = Duration::from_millis(args.body_timeout_ms.max(1));
    http_options.write_timeout = Duration::from_millis(args.write_timeout_ms.max(1));
    http_options.allowed_origins = args.allow_origin.clone();
    http_options.naming = naming;
    let mut token_line = None;
    if let Some(addr) = args.http {
        if let Some(path) = &args.token_file {
            http_options.token =
                Some(BearerToken::from_file(path).map_err(|e| Failure(e.to_string(), 2))?);
            // A file the user gives is the one every node of a cluster shares.
            http_options.shared_token = true;
        } else if args.no_token {
            if !mcpvisor_serve::http::is_loopback(&addr) {
                return Err(Failure(
                    format!("--no-token is for loopback addresses only; {addr} is not one"),
                    2,
                ));
            }
            token_line = Some(
                "mcpvisor: warning: --no-token: any local user can call every tool over HTTP (sessions then get no server logs and no supervisor controls)"
                    .to_string(),
            );
        } else {
            http_options.token = Some(serve_token(&place)?);
            token_line = Some(format!(
                "mcpvisor: HTTP clients send Authorization: Bearer <the token in {}> (or see serve --print-token)",
                output::clean_line(&place.token.display().to_string())
            ));
        }
    }
    let endpoint = match args.http {
        Some(addr) => Some(
            HttpEndpoint::bind(addr, http_options)
                .await
                .map_err(|e| Failure(e.to_string(), 2))?,
        ),
        None => None,
    };
    let mut options = settings.supervisor_options();
    // Servers' sampling and elicitation go to the client whose call they serve.
    let (handler, callers) = mcpvisor_serve::forward::forwarder();
    options.client_handler = Some(handler);
    let mut gateway_options = GatewayOptions::default();
    gateway_options.first_start = options.startup_timeout + Duration::from_secs(1);
    // Downstream sessions negotiate from the same preference as the servers.
    gateway_options.protocol_versions = options.protocol_versions.clone();
    gateway_options.allow_faults = args.allow_faults;
    let host = Host::start(specs()?, options)
        .await
        .map_err(|e| Failure(e.to_string(), 1))?;
    // Other nodes pass on to this one the 2026-07-28 requests it must answer.
    let http_addr = endpoint.as_ref().and_then(|e| e.local_addr().ok());
    // Held while serving: dropping it leaves the cluster.
    let cluster = match args.cluster.join(&host, http_addr).await {
        Ok(cluster) => cluster,
        Err(e) => {
            host.shutdown().await;
            return Err(e);
        }
    };
    let reloader: Reloader = Arc::new(move || specs().map_err(|Failure(message, _)| message));
    let gateway = Gateway::new(host.clone(), gateway_options, Some(reloader), Some(callers));
    let mut tasks = Vec::new();
    if let Some(endpoint) = endpoint {
        let bound = endpoint
            .local_addr()
            .map_err(|e| Failure(e.to_string(), 1))?;
        if let Some(line) = &token_line {
            eprintln!("{line}");
        }
        eprintln!("mcpvisor: serving http://{bound}/mcp");
        let gateway = gateway.clone();
        tasks.push(tokio::spawn(async move {
            if let Err(e) = endpoint.serve(gateway).await {
                tracing::error!(error = %e, "the HTTP endpoint failed");
            }
        }));
    }
    if args.allow_faults {
        eprintln!("mcpvisor: fault injection allowed (`mcpvisor inject`)");
    }
    let listener = Arc::new(listener);
    eprintln!(
        "mcpvisor: listening on {}",
        output::clean_line(&listener.path().display().to_string())
    );
    {
        let listener = listener.clone();
        let gateway = gateway.clone();
        tasks.push(tokio::spawn(async move { listener.serve(gateway).await }));
    }
    let signals = async {
        // SIGHUP reloads; SIGINT and SIGTERM are the normal way to stop.
        while stop.recv_or_reload().await.is_none() {
            report_reload(&gateway).await;
        }
    };
    if args.stdio {
        // After a takeover the host's session opens again here first.
        let (stdin, stdout) = relay::stdio_after(takeover.as_ref(), host_input);
        let session = serve_lines(
            gateway.clone(),
            naming,
            stdin,
            stdout,
            // A host that died leaves no reader on the answers' pipe.
            |_| mcpvisor_serve::lines::hung_up(std::os::fd::AsFd::as_fd(&std::io::stdout())),
        );
        let mut session = std::pin::pin!(session);
        tokio::select! {
            // The host closed stdin: the MCP way to say it is done.
            () = &mut session => {}
            () = signals => {
                // The session answers its calls in flight (a shutdown error), then ends.
                gateway.stop();
                let _ = tokio::time::timeout(Duration::from_secs(3), session).await;
            }
        }
    } else {
        signals.await;
    }
    let code = ExitCode::SUCCESS;
    drop(cluster);
    gateway.stop();
    for task in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
    }
    host.shutdown().await;
    drop(listener);
    Ok(code)
}

/// How long a takeover waits for a `serve` that holds the lock to answer
/// or let go.
const TAKEOVER_WAIT: Duration = Duration::from_secs(10);

/// The bearer token of this configuration's `serve`, made beside its socket
/// when there is none.
fn serve_token(place: &SocketPlace) -> Result<BearerToken, Failure> {
    place.prepare().map_err(|e| Failure(e.to_string(), 1))?;
    BearerToken::load_or_create(&place.token).map_err(|e| Failure(e.to_string(), 2))
}

async fn report_reload(gateway: &Gateway) {
    match gateway.reload().await {
        Ok(report) => eprintln!(
            "mcpvisor: reloaded: {}",
            output::clean_line(&mcpvisor_serve::wire::reload_json(&report).to_string())
        ),
        Err(e) => eprintln!("mcpvisor: reload failed: {}", output::clean_line(&e)),
    }
}

fn parse_names(word: &str) -> Result<Naming, String> {
    Naming::parse(word).ok_or_else(|| format!("{word:?}: use qualified, short or original"))
}
