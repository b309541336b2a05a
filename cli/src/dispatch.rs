//! What each command does: the one match from a parsed command line to the
//! code that runs it, with the helpers only that match uses.

use std::process::ExitCode;
use std::time::Duration;

use mcpvisor::QualifiedMcpToolName;
use mcpvisor::config::discover::find_upward;
use mcpvisor::project::Project;
use mcpvisor::settings::Settings;

use crate::cli::{Cli, Command};
use crate::{
    Failure, answers, approve, arguments, attached, chaos, describe, edit, health, inject,
    invocation, live, offline, oneshot, output, resources_prompts, serve, shell, stop,
};

pub(crate) async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::DemoServer(options) => {
            return mcpvisor_demo::run(options)
                .await
                .map(|()| ExitCode::SUCCESS)
                .map_err(|e| Failure(format!("demo-server: {e}"), 1));
        }
        Command::Completions { shell } => return shell::completions(shell),
        Command::Man => return shell::man(),
        _ => {}
    }
    let settings =
        Settings::load(&cli.settings.overrides()).map_err(|e| Failure(e.to_string(), 2))?;
    let invocation = invocation::Invocation {
        config: cli.config.clone(),
    };
    let config_path = cli
        .config
        .clone()
        .or_else(|| find_upward(&std::env::current_dir().ok()?));
    // Before the file is loaded: `add` creates it, or fixes one without entries.
    if let Command::Add(args) = &cli.command {
        let done = edit::add(args, config_path.as_deref(), cli.config.as_deref())?;
        reload_running(&settings, config_path.as_deref(), cli.json).await;
        return Ok(done);
    }
    let project = match &config_path {
        Some(path) => {
            Some(Project::open(path, &settings.home).map_err(|e| Failure(e.to_string(), 2))?)
        }
        None => None,
    };
    let runs_servers = matches!(
        cli.command,
        Command::Tools { .. }
            | Command::Describe { .. }
            | Command::Call { .. }
            | Command::Resources { .. }
            | Command::Read { .. }
            | Command::Prompts { .. }
            | Command::Prompt { .. }
            | Command::Watch
            | Command::Serve(_)
            | Command::Chaos(_)
            | Command::Servers { .. }
    );
    if project.is_none() && runs_servers {
        // Said every time: a file in the wrong place would otherwise look like
        // a project with one server.
        let notice = "no .mcp.json, .cursor/mcp.json or .vscode/mcp.json here or above; using the built-in demo server (--config PATH for a file elsewhere)";
        if cli.json {
            eprintln!("{}", serde_json::json!({ "notice": notice }));
        } else {
            eprintln!("mcpvisor: {notice}");
        }
    }
    match cli.command {
        Command::ServerNames => {
            match &project {
                Some(project) => {
                    for name in project.config.servers.keys() {
                        println!("{}", output::clean_line(name));
                    }
                }
                None => println!("demo"),
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Remove { name } => {
            let done = edit::remove(project.as_ref(), &name, cli.config.as_deref())?;
            reload_running(&settings, config_path.as_deref(), cli.json).await;
            return Ok(done);
        }
        Command::Get { name } => {
            return edit::get(project.as_ref(), &name, cli.json, cli.config.as_deref());
        }
        Command::Servers { check: true } => {
            // The running serve's servers are the ones to check, as they run.
            if !cli.no_attach
                && let Ok(Some(mut client)) = attach(&settings, config_path.as_deref(), None).await
            {
                // Servers still starting are waited for, as a check started here would be.
                let deadline = tokio::time::Instant::now()
                    + settings.supervisor_options().startup_timeout
                    + Duration::from_secs(1);
                let live = loop {
                    let live = attached::live_servers(&mut client).await?;
                    let settling = live
                        .iter()
                        .any(|s| s["state"] == "starting" || s["state"] == "restarting");
                    if !settling || tokio::time::Instant::now() >= deadline {
                        break live;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                };
                return Ok(health::report_live(&live, cli.json));
            }
            return health::check(project.as_ref(), &settings, cli.json).await;
        }
        Command::Settings => return Ok(offline::settings(&settings, cli.json)),
        Command::Enable { names, all, force } => {
            let selection = approve::Selection { names: &names, all };
            let done = approve::enable(project.as_ref(), &settings, selection, force)?;
            reload_running(&settings, config_path.as_deref(), cli.json).await;
            return Ok(done);
        }
        Command::Disable { names, all } => {
            let selection = approve::Selection { names: &names, all };
            let done = approve::disable(project.as_ref(), selection)?;
            reload_running(&settings, config_path.as_deref(), cli.json).await;
            return Ok(done);
        }
        Command::Login { name, headless } => {
            return offline::login(project.as_ref(), &name, headless).await;
        }
        Command::Logout { name } => return offline::logout(project.as_ref(), &name),
        _ => {}
    }
    // Registered before any server starts, so an early signal is not lost.
    let mut stop = stop::StopSignals::watch()
        .map_err(|e| Failure(format!("cannot watch for signals: {e}"), 1))?;
    let command = match cli.command {
        // Its own host, never a running serve's: faults are dealt to servers it owns.
        Command::Chaos(args) => {
            return chaos::chaos(
                args,
                project.as_ref(),
                &settings,
                &invocation,
                cli.json,
                &mut stop,
            )
            .await;
        }
        Command::Serve(args) => {
            // A reload reads the file and its approvals again.
            let (config, for_specs) = (config_path.clone(), settings.clone());
            let invocation = invocation.clone();
            let specs = move || {
                let project = match &config {
                    Some(path) => Some(
                        Project::open(path, &for_specs.home)
                            .map_err(|e| Failure(e.to_string(), 2))?,
                    ),
                    None => None,
                };
                let all = oneshot::Needed::All;
                oneshot::specs_for(project.as_ref(), &for_specs, &all, &invocation)
            };
            return serve::serve(*args, &settings, config_path, specs, &mut stop).await;
        }
        command => command,
    };
    // Read before any server starts: a typo costs nothing.
    let prompt_arguments = match &command {
        Command::Prompt { arguments, .. } => resources_prompts::prompt_arguments(arguments)?,
        _ => Default::default(),
    };
    let call_arguments = match &command {
        Command::Call {
            arguments, args, ..
        } => arguments::Given::read(arguments, args).map_err(|m| Failure(m, 2))?,
        _ => Default::default(),
    };
    let injection = inject::Injection::of(&command)?;
    let needed = match needed_by(&command) {
        Ok(needed) => needed,
        Err(e) => return Err(bare_name(e, &command, &settings, config_path.as_deref()).await),
    };
    if let Command::ToolNames = command {
        // Completion must be quick and quiet: a running serve, or nothing.
        if let Ok(Some(mut client)) = attach(&settings, config_path.as_deref(), None).await {
            for tool in attached::all_tools(&mut client).await.unwrap_or_default() {
                println!("{}", tool.name);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let attached = if cli.no_attach {
        None
    } else {
        // A call may meet a server that asks for input: answered here, as one-shot.
        let answers = match &command {
            Command::Call { .. } => Some(answers::handler(&settings)?),
            _ => None,
        };
        attach(&settings, config_path.as_deref(), answers).await?
    };
    if let Some(mut client) = attached {
        // The servers named must be the running serve's, as they must be the file's.
        if let oneshot::Needed::Servers(names) = &needed {
            attached::check_names(&mut client, names).await?;
        }
        if let Some(injection) = injection {
            return injection.send(&mut client, cli.json).await;
        }
        return match command {
            Command::Tools { servers } => {
                let tools = attached::all_tools(&mut client).await?;
                let live = attached::live_servers(&mut client).await?;
                let of = |name: &str| live.iter().find(|s| s["name"].as_str() == Some(name));
                Ok(live::print_tools(
                    &tools,
                    &servers,
                    cli.json,
                    |name| {
                        of(name)
                            .filter(|s| s["state"] != "ready")
                            .map(|s| s["detail"].as_str().unwrap_or("?").to_string())
                    },
                    |name| of(name).map(attached::live_problems).unwrap_or_default(),
                ))
            }
            Command::Describe { name } => {
                let tools = attached::all_tools(&mut client).await?;
                describe::describe(live::find(&tools, &name, &invocation)?, cli.json)
            }
            Command::Call {
                name, timeout_ms, ..
            } => {
                let tools = attached::all_tools(&mut client).await?;
                let schema = match live::find(&tools, &name, &invocation) {
                    Ok(tool) => tool.input_schema.clone(),
                    // Its server is down in the running serve, which says
                    // what to do when the call reaches it.
                    Err(e) if !attached::server_ready(&mut client, &name).await? => {
                        drop(e);
                        serde_json::json!({})
                    }
                    Err(e) => return Err(e),
                };
                let arguments = call_arguments.build(&schema).map_err(|m| Failure(m, 2))?;
                attached::call(
                    &mut client,
                    &name,
                    arguments,
                    timeout_ms,
                    cli.json,
                    &mut stop,
                )
                .await
            }
            Command::Watch => attached::watch(&mut client, cli.json, &mut stop).await,
            command @ (Command::Resources { .. }
            | Command::Read { .. }
            | Command::Prompts { .. }
            | Command::Prompt { .. }) => {
                offered_command(
                    command,
                    resources_prompts::Via::Serve(&mut client),
                    prompt_arguments,
                    cli.json,
                )
                .await
            }
            Command::Restart { name } => attached::restart(&mut client, &name).await,
            Command::Reload => attached::reload(&mut client, cli.json).await,
            Command::Servers { .. } => {
                let live = attached::live_servers(&mut client).await?;
                offline::servers(
                    project.as_ref(),
                    &settings,
                    cli.json,
                    cli.verbose > 0,
                    Some(&live),
                )
            }
            _ => Ok(ExitCode::SUCCESS),
        };
    }
    if injection.is_some() {
        return Err(inject::needs_serve());
    }
    match command {
        Command::Servers { .. } => {
            return offline::servers(project.as_ref(), &settings, cli.json, cli.verbose > 0, None);
        }
        Command::Reload => {
            return Err(Failure(
                "no `mcpvisor serve` runs for this configuration; there is nothing to reload"
                    .into(),
                2,
            ));
        }
        Command::Restart { name } => {
            return Err(Failure(
                format!(
                    "no `mcpvisor serve` runs for this configuration; start one to restart `{}` in it",
                    output::clean_line(&name)
                ),
                2,
            ));
        }
        _ => {}
    }
    let specs = oneshot::specs_for(project.as_ref(), &settings, &needed, &invocation)?;
    let long_running = matches!(command, Command::Watch);
    let (host, startup) =
        oneshot::start(specs, &settings, answers::handler(&settings)?, long_running).await?;
    if let Command::Watch = command {
        let code = live::watch(&host, cli.json, &mut stop).await;
        host.shutdown().await;
        return Ok(code);
    }
    let ready = host.wait_ready(startup + Duration::from_secs(1));
    let statuses = tokio::select! {
        statuses = ready => statuses,
        code = stop.recv() => {
            host.shutdown().await;
            return Ok(ExitCode::from(code));
        }
    };
    let failed = oneshot::failures(&statuses);
    // A command for one server whose server did not start: that is its failure.
    if let (Some(first), oneshot::Needed::Servers(names)) = (failed.first(), &needed) {
        if names.len() == 1 && !matches!(command, Command::Tools { .. }) {
            host.shutdown().await;
            return Err(Failure(oneshot::sentence(first), 1));
        }
    }
    oneshot::report(&failed, cli.json);
    let some_failed = !failed.is_empty();
    let outcome = match command {
        Command::Tools { servers } => {
            let (statuses, routes) = (host.servers(), host.routes());
            Ok(live::print_tools(
                &host.tools(),
                &servers,
                cli.json,
                |name| {
                    statuses
                        .iter()
                        .find(|s| &*s.name == name && s.state != mcpvisor::ServerState::Ready)
                        .map(|s| output::state_text(&s.state))
                },
                |name| {
                    routes
                        .refused(name)
                        .map(|r| {
                            r.first
                                .iter()
                                .take(5)
                                .map(|f| {
                                    format!(
                                        "tool `{}` has no route: {}",
                                        output::clean_line(&f.tool),
                                        output::clean_line(&f.reason)
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                },
            ))
        }
        Command::Describe { name } => live::find(&host.tools(), &name, &invocation)
            .and_then(|tool| describe::describe(tool, cli.json)),
        Command::Call {
            name, timeout_ms, ..
        } => {
            let tools = host.tools();
            match live::find(&tools, &name, &invocation) {
                Err(e) => Err(e),
                Ok(tool) => match call_arguments.build(&tool.input_schema) {
                    Err(m) => Err(Failure(m, 2)),
                    Ok(arguments) => Ok(live::call(
                        &host, &name, arguments, timeout_ms, cli.json, &mut stop,
                    )
                    .await),
                },
            }
        }
        command @ (Command::Resources { .. }
        | Command::Read { .. }
        | Command::Prompts { .. }
        | Command::Prompt { .. }) => {
            let via = resources_prompts::Via::Host(&host);
            offered_command(command, via, prompt_arguments, cli.json).await
        }
        _ => Ok(ExitCode::SUCCESS),
    };
    host.shutdown().await;
    match outcome {
        // The command did its part, but a server it needed did not start.
        Ok(code) if some_failed && code == ExitCode::SUCCESS => Ok(ExitCode::FAILURE),
        other => other,
    }
}

/// The servers `command` needs, read from its names before anything starts.
fn needed_by(command: &Command) -> Result<oneshot::Needed, Failure> {
    use oneshot::Needed;
    let server_of = |name: &str, what: &str| {
        if let Ok(q) = QualifiedMcpToolName::parse(name) {
            return Ok(Needed::Servers(vec![q.server().to_string()]));
        }
        let hint = QualifiedMcpToolName::parse(&format!("mcp__{name}"))
            .map(|q| format!("; did you mean `{q}`?"))
            .unwrap_or_default();
        Err(Failure(
            format!(
                "`{}` is not a qualified {what} name: write mcp__<server>__<{what}>{hint}",
                output::clean_line(name)
            ),
            2,
        ))
    };
    let some = |servers: &[String]| {
        if servers.is_empty() {
            Needed::All
        } else {
            Needed::Servers(servers.to_vec())
        }
    };
    Ok(match command {
        Command::Call { name, .. } | Command::Describe { name } => server_of(name, "tool")?,
        Command::Prompt { name, .. } => server_of(name, "prompt")?,
        Command::Tools { servers } => some(servers),
        Command::Resources { server } | Command::Prompts { server } => some(server.as_slice()),
        Command::Read { server, .. } | Command::Inject { server, .. } => {
            Needed::Servers(vec![server.clone()])
        }
        _ => Needed::All,
    })
}

/// `resources`, `read`, `prompts` or `prompt`, by whichever way the servers are reached.
async fn offered_command(
    command: Command,
    via: resources_prompts::Via<'_>,
    prompt_arguments: serde_json::Map<String, serde_json::Value>,
    json: bool,
) -> Result<ExitCode, Failure> {
    match command {
        Command::Resources { server } => {
            resources_prompts::resources(via, server.as_deref(), json).await
        }
        Command::Read {
            server,
            uri,
            output,
        } => resources_prompts::read(via, &server, &uri, output.as_deref(), json).await,
        Command::Prompts { server } => {
            resources_prompts::prompts(via, server.as_deref(), json).await
        }
        Command::Prompt { name, .. } => {
            resources_prompts::prompt(via, &name, prompt_arguments, json).await
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// A session with the running `serve` for this configuration, if there is one;
/// `answers` answers the servers' requests `serve` forwards to it.
/// A tool named without its server (`echo`): the running serve's tools say
/// which one it means when only one can be meant. Without a serve no server
/// is started to find out; the error stands.
async fn bare_name(
    error: Failure,
    command: &Command,
    settings: &Settings,
    config: Option<&std::path::Path>,
) -> Failure {
    let (Command::Call { name, .. } | Command::Describe { name }) = command else {
        return error;
    };
    if name.contains("__") {
        return error;
    }
    let Ok(Some(mut client)) = attach(settings, config, None).await else {
        return Failure(
            format!("{} (`mcpvisor tools` lists them)", error.0),
            error.1,
        );
    };
    let tools = attached::all_tools(&mut client).await.unwrap_or_default();
    let meant: Vec<&str> = tools
        .iter()
        .filter(|t| t.name.tool() == name)
        .map(|t| t.name.as_str())
        .collect();
    match meant.as_slice() {
        [one] => Failure(
            format!(
                "no tool `{}`; did you mean `{one}`? (tools are named mcp__<server>__<tool>)",
                output::clean_line(name)
            ),
            2,
        ),
        _ => Failure(
            format!("{} (`mcpvisor tools` lists them)", error.0),
            error.1,
        ),
    }
}

/// After a change to the file or to approvals: a `serve` running for the
/// file takes it at once (as `mcpvisor reload` does), and says what it
/// started, stopped and restarted; when it cannot, the user is told to reload.
async fn reload_running(settings: &Settings, config: Option<&std::path::Path>, json: bool) {
    // `add` may have just made the file: name it as a serve started now would.
    let config = config
        .map(std::path::Path::to_path_buf)
        .or_else(|| find_upward(&std::env::current_dir().ok()?));
    let Ok(Some(mut client)) = attach(settings, config.as_deref(), None).await else {
        return;
    };
    // With --json the command's own answer is the one JSON document on stdout.
    let reloaded = if json {
        client
            .request(
                mcpvisor_serve::session::extension::RELOAD,
                serde_json::json!({}),
                |_| {},
            )
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    } else {
        println!("the running serve reloads:");
        attached::reload(&mut client, false)
            .await
            .map(drop)
            .map_err(|f| f.0)
    };
    if let Err(e) = reloaded {
        eprintln!(
            "mcpvisor: the running serve did not reload ({}); run `mcpvisor reload`",
            output::clean_line(&e)
        );
    }
}

async fn attach(
    settings: &Settings,
    config: Option<&std::path::Path>,
    answers: Option<mcpvisor::SharedClientHandler>,
) -> Result<Option<mcpvisor_serve::client::Client>, Failure> {
    let place = mcpvisor_serve::socket::SocketPlace::for_config(&settings.home, config)
        .map_err(|e| Failure(format!("cannot name the socket: {e}"), 1))?;
    let stream = match mcpvisor_serve::socket::connect(&place).await {
        Ok(Some(stream)) => stream,
        Ok(None) => return Ok(None),
        Err(
            e @ (mcpvisor_serve::socket::SocketError::Unsafe { .. }
            | mcpvisor_serve::socket::SocketError::ForeignPeer { .. }),
        ) => return Err(Failure(e.to_string(), 1)),
        Err(e) => {
            tracing::warn!(error = %e, "cannot reach a running serve; running the servers here");
            return Ok(None);
        }
    };
    // A serve that holds its socket but does not answer must not hang the command.
    let started = mcpvisor_serve::client::Client::start_answering(stream, answers);
    match tokio::time::timeout(Duration::from_secs(10), started).await {
        Ok(Ok(client)) => Ok(Some(client)),
        Ok(Err(e)) => Err(Failure(format!("attaching to the running serve failed: {e}"), 1)),
        Err(_) => Err(Failure(
            "the running serve did not answer within 10 s (use --no-attach to run the servers here)".into(),
            1,
        )),
    }
}
