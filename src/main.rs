//! The `nodewarden` command line: `run`, `check-config`, `sample`, `status`, `explain`, `nodes`.
//! Installed also as `kubectl-nodewarden` (a symlink), it is the kubectl plugin
//! `kubectl nodewarden`: the same commands, named so in help and errors.
//!
//! Exit codes: 0 success; 1 runtime failure; 2 usage error; 65 malformed input to `explain`
//! (EX_DATAERR); 78 configuration error (EX_CONFIG), which the systemd unit excludes from
//! restarts.
//!
//! Without `--config`, the default path is read when it exists; when it does not, every command
//! runs on the built-in defaults and says so in one line on stderr, as the kubelet runs on its
//! defaults without `--config`. A file named with `--config` that is missing stays an error (78):
//! the systemd unit names its file, so a deleted configuration never starts the agent on defaults.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use nodewarden::agent::shutdown::{self, Shutdown, Tasks};
use nodewarden::agent::{self, Source};
use nodewarden::cli::args::{Cli, ClusterArgs, Command, Output};
use nodewarden::config::{self, Config};
use nodewarden::core::clock::Moment;
use nodewarden::observe::{self, http::Health};
use nodewarden::sample::{SamplePaths, Sampler};

const DEFAULT_CONFIG: &str = "/etc/nodewarden/config.toml";
const EXIT_RUNTIME: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_DATA: u8 = 65;
const EXIT_CONFIG: u8 = 78;

/// The name kubectl runs its plugin by (`kubectl nodewarden …` runs `kubectl-nodewarden …`).
const PLUGIN_NAME: &str = "kubectl-nodewarden";

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    // The same binary under the plugin's name: the same commands, named in help and errors as
    // the person typed them.
    let invoked = std::env::args_os().next().map(PathBuf::from);
    let as_plugin = invoked
        .as_deref()
        .and_then(Path::file_name)
        .is_some_and(|n| n == PLUGIN_NAME);
    let mut command = Cli::command();
    if as_plugin {
        command = command.bin_name("kubectl nodewarden");
    }
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    match cli.command {
        Command::Run { config } => run(&ConfigSource::from(config)),
        Command::CheckConfig {
            file,
            config,
            output,
        } => check_config(&ConfigSource::from(file.or(config)), output),
        Command::Sample { config, output } => sample(&ConfigSource::from(config), output),
        Command::Explain {
            node,
            pod,
            config,
            cluster,
            output,
        } => explain(
            &node,
            &pod,
            &cluster,
            config.map(ConfigSource::Named),
            output,
        ),
        Command::Status { config, output } => status(&ConfigSource::from(config), output),
        Command::Nodes {
            cluster,
            lease_namespace,
        } => nodes(&cluster, &lease_namespace),
    }
}

/// Where the configuration comes from: a file the user named, or the default path.
enum ConfigSource {
    Named(PathBuf),
    Default,
}

impl From<Option<PathBuf>> for ConfigSource {
    fn from(named: Option<PathBuf>) -> ConfigSource {
        named.map_or(ConfigSource::Default, ConfigSource::Named)
    }
}

impl ConfigSource {
    /// How `check-config` names what it validated.
    fn describe(&self, config: &Config) -> String {
        match (self, &config.source) {
            (ConfigSource::Named(p), _) => p.display().to_string(),
            (ConfigSource::Default, Some(p)) => p.display().to_string(),
            (ConfigSource::Default, None) => "(built-in defaults)".to_string(),
        }
    }
}

/// Loads the configuration, printing every error (and warning) to stderr.
fn load(source: &ConfigSource) -> Result<Config, ExitCode> {
    load_with_notes(source).map(|l| l.config)
}

/// [`load`], keeping the notes about the built-in defaults for `check-config` to print.
fn load_with_notes(source: &ConfigSource) -> Result<config::Loaded, ExitCode> {
    let path = match source {
        ConfigSource::Named(p) => p.as_path(),
        ConfigSource::Default => Path::new(DEFAULT_CONFIG),
    };
    // Only "no such file" at the default path means "not configured": any other failure to
    // read it (permissions, a directory) is a broken configuration and stays an error.
    let absent = matches!(source, ConfigSource::Default)
        && matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let loaded = if absent {
        eprintln!(
            "nodewarden: no configuration file at {DEFAULT_CONFIG} and none given with --config; \
             running on the built-in defaults"
        );
        // The defaults go through the same validation as an empty file would.
        config::from_str_with_warnings("", None)
    } else {
        config::load_with_warnings(path)
    };
    match loaded {
        Ok(loaded) => {
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            Ok(loaded)
        }
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!("nodewarden: configuration {} is invalid", path.display());
            Err(ExitCode::from(EXIT_CONFIG))
        }
    }
}

fn check_config(source: &ConfigSource, output: Output) -> ExitCode {
    let config = match load_with_notes(source) {
        Ok(loaded) => {
            for note in &loaded.notes {
                eprintln!("info: {note}");
            }
            loaded.config
        }
        Err(code) => return code,
    };
    match output {
        Output::Json => match serde_json::to_string_pretty(&config::effective_json(&config)) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("nodewarden: cannot print configuration: {e}");
                return ExitCode::from(EXIT_RUNTIME);
            }
        },
        Output::Text => {
            print!("{}", config::effective_text(&config));
            // The machine's capacity, for what the percentages come to here.
            let reading = sampler(&config).read();
            print!(
                "{}",
                nodewarden::cli::check::resolved_text(&config, &reading)
            );
            println!("configuration {} is valid", source.describe(&config));
        }
    }
    ExitCode::SUCCESS
}

fn sampler(config: &Config) -> Sampler {
    Sampler::new(SamplePaths {
        proc_root: config.proc_path.clone(),
        cgroup_root: config.cgroup_path.clone(),
        nodefs: config.nodefs_path.clone(),
        imagefs: config.imagefs_path.clone(),
    })
}

fn sample(source: &ConfigSource, output: Output) -> ExitCode {
    let config = match load(source) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let reading = sampler(&config).read();
    let mut decider = agent::Decider::new(&config);
    let decision = decider.decide(
        &reading.observations,
        Moment {
            mono: Duration::ZERO,
            wall: SystemTime::now(),
        },
    );
    let mut report = nodewarden::cli::sample::sample_report(
        &agent::node_name(&config),
        &config.thresholds,
        &reading,
        &decision.evaluation,
        &decider.conditions,
        &decider.taints,
        // Beside the Node's as the agent last saw it, when it has seen one.
        nodewarden::allocatable::report(
            &config,
            nodewarden::allocatable::node_as_last_seen(&config.state_directory).as_ref(),
        ),
    );
    report.machine = Some(nodewarden::machine::read(
        &config.nodefs_path,
        &config.imagefs_path,
    ));
    match output {
        Output::Json => match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("nodewarden: cannot print sample: {e}");
                return ExitCode::from(EXIT_RUNTIME);
            }
        },
        Output::Text => print!("{}", nodewarden::cli::sample::sample_text(&report)),
    }
    ExitCode::SUCCESS
}

fn status(source: &ConfigSource, output: Output) -> ExitCode {
    let config = match load(source) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let now = SystemTime::now();
    let mut report = match nodewarden::cli::status::report(
        &config,
        &agent::node_name(&config),
        now,
        agent::clock::scale_at(now),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nodewarden: {e}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    report.machine = Some(nodewarden::machine::read(
        &config.nodefs_path,
        &config.imagefs_path,
    ));
    match output {
        Output::Json => match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("nodewarden: cannot print status: {e}");
                return ExitCode::from(EXIT_RUNTIME);
            }
        },
        Output::Text => print!("{}", nodewarden::cli::status::text(&report)),
    }
    ExitCode::SUCCESS
}

/// A single-threaded runtime for a command that talks to the API server once.
fn cli_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("nodewarden: cannot start the runtime: {e}");
            ExitCode::from(EXIT_RUNTIME)
        })
}

fn nodes(cluster: &ClusterArgs, lease_namespace: &str) -> ExitCode {
    let runtime = match cli_runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let fleet = runtime.block_on(async {
        let client = nodewarden::api::connect_as_kubectl(
            cluster.kubeconfig.as_deref(),
            cluster.context.as_deref(),
        )
        .await
        .map_err(|e| (e.to_string(), EXIT_CONFIG))?;
        nodewarden::cli::nodes::read(&client, lease_namespace)
            .await
            .map_err(|e| (e, EXIT_RUNTIME))
    });
    match fleet {
        Ok(fleet) => {
            print!(
                "{}",
                nodewarden::cli::nodes::text(&fleet, SystemTime::now())
            );
            ExitCode::SUCCESS
        }
        Err((e, code)) => {
            eprintln!("nodewarden: {e}");
            ExitCode::from(code)
        }
    }
}

fn explain(
    node: &str,
    pod: &str,
    cluster: &ClusterArgs,
    config: Option<ConfigSource>,
    output: Output,
) -> ExitCode {
    use nodewarden::cli::live::{self, ObjectArg};
    let gates = match config.as_ref().map(load) {
        None => Default::default(),
        Some(Ok(config)) => config.feature_gates,
        Some(Err(code)) => return code,
    };
    let (node, pod) = match (ObjectArg::node(node), ObjectArg::pod(pod)) {
        (Ok(n), Ok(p)) => (n, p),
        (n, p) => {
            for e in [n.err(), p.err()].into_iter().flatten() {
                eprintln!("nodewarden: {e}");
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if node == ObjectArg::Stdin && pod == ObjectArg::Stdin {
        eprintln!("nodewarden: only one of --node and --pod can be - (standard input)");
        return ExitCode::from(EXIT_USAGE);
    }
    let client = if node.is_live() || pod.is_live() {
        let runtime = match cli_runtime() {
            Ok(r) => r,
            Err(code) => return code,
        };
        let connected = runtime.block_on(nodewarden::api::connect_as_kubectl(
            cluster.kubeconfig.as_deref(),
            cluster.context.as_deref(),
        ));
        match connected {
            Ok(c) => Some((runtime, c)),
            Err(e) => {
                eprintln!("nodewarden: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        }
    } else {
        None
    };
    let read = |kind: &'static str, arg: &ObjectArg| -> Result<String, ExitCode> {
        match arg {
            ObjectArg::Stdin => {
                let limit = nodewarden::bounded::OBJECT;
                nodewarden::bounded::read_stdin_to_string(limit).map_err(|e| {
                    eprintln!("nodewarden: cannot read the {kind} from standard input: {e}");
                    ExitCode::from(EXIT_DATA)
                })
            }
            ObjectArg::File(path) => {
                nodewarden::bounded::read_to_string(path, nodewarden::bounded::OBJECT).map_err(
                    |e| {
                        eprintln!("cannot read {kind} file {}: {e}", path.display());
                        ExitCode::from(EXIT_DATA)
                    },
                )
            }
            live_arg => {
                let Some((runtime, client)) = &client else {
                    return Err(ExitCode::from(EXIT_RUNTIME));
                };
                runtime
                    .block_on(live::get_text(client, kind, live_arg))
                    .map_err(|e| {
                        eprintln!("nodewarden: {e}");
                        ExitCode::from(EXIT_RUNTIME)
                    })
            }
        }
    };
    let (node_text, pod_text) = match (read("Node", &node), read("Pod", &pod)) {
        (Ok(n), Ok(p)) => (n, p),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let explained = nodewarden::cli::explain::explain_str_gated(
        &node_text,
        &pod_text,
        &node.shown(),
        &pod.shown(),
        &gates,
    );
    match explained {
        Ok(report) => {
            match output {
                Output::Json => match serde_json::to_string_pretty(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("nodewarden: cannot print report: {e}");
                        return ExitCode::from(EXIT_RUNTIME);
                    }
                },
                Output::Text => {
                    let text = nodewarden::cli::explain::render_text(&report);
                    println!("{}", text.trim_end());
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(EXIT_DATA)
        }
    }
}

/// Whether the agent talks to an API server: not when `standalone = true`; yes with a
/// kubeconfig or inside a cluster (the ServiceAccount's environment); otherwise standalone.
fn connected(config: &Config) -> bool {
    !config.standalone
        && (config.kubeconfig.is_some() || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some())
}

fn run(source: &ConfigSource) -> ExitCode {
    let config = match load(source) {
        Ok(c) => c,
        Err(code) => return code,
    };
    observe::log::init(&config.logging, &nodewarden::agent::node_name(&config));
    // Once at start, never per cycle: sysinfo reads several files whole (`machine` module).
    let machine = nodewarden::machine::read(&config.nodefs_path, &config.imagefs_path);
    for line in nodewarden::machine::text(&machine).lines() {
        log::info!("{line}");
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            log::error!("cannot start the runtime: {e}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let code = runtime.block_on(async {
        // Before anything else: a SIGTERM from here on stops the agent cleanly.
        let stop = Shutdown::new();
        watch_signals(&stop);
        // Liveness: the loop must have ticked within two wake intervals (and never less than
        // a few seconds, so a briefly busy machine is not declared dead).
        let wake = agent::wake_interval(
            config.node_status_update_frequency,
            observe::systemd::watchdog_interval(),
        );
        let health = Arc::new(Health::new((wake * 2).max(Duration::from_secs(5))));
        let listener = match observe::http::bind(config.health_address).await {
            Ok(l) => l,
            Err(e) => {
                log::error!(
                    address = config.health_address.to_string().as_str();
                    "cannot listen on healthAddress {}: {e}", config.health_address
                );
                return ExitCode::from(EXIT_RUNTIME);
            }
        };
        let server = tokio::spawn(observe::http::serve(listener, health.clone()));
        let code = if connected(&config) {
            let clients = nodewarden::api::connect_agent(
                config.kubeconfig.as_deref(),
                config.fence.kubelet_server.as_deref(),
            )
            .await;
            let client = match clients {
                Ok(c) => c,
                Err(e) => {
                    log::error!("cannot build the API client: {e}");
                    server.abort();
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            let requested = {
                let stop = stop.clone();
                async move { stop.requested().await }
            };
            match agent::connected::run(&config, client, sampler(&config), health, requested).await
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(e @ agent::connected::StartError::Config(_)) => {
                    log::error!("{e}");
                    ExitCode::from(EXIT_CONFIG)
                }
                Err(e) => {
                    log::error!("{e}");
                    ExitCode::from(EXIT_RUNTIME)
                }
            }
        } else {
            // Standalone writes no state: the sampling loop returns on the request by itself.
            let mut tasks = Tasks::new();
            {
                let (config, stop) = (config.clone(), stop.clone());
                tasks.spawn("sampling", async move {
                    let sampler = sampler(&config);
                    agent::sampling::run(
                        &config,
                        sampler,
                        health,
                        None,
                        agent::clock::Clock::start(),
                        stop.requested(),
                    )
                    .await;
                });
            }
            stop.requested().await;
            shutdown::drain(tasks, shutdown::DRAIN_BOUND).await;
            ExitCode::SUCCESS
        };
        server.abort();
        code
    });
    // Nothing of ours blocks a thread; a resolver thread of the HTTP client may, and must not
    // hold up the exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// Triggers `stop` on the first SIGTERM or SIGINT, with the signal's name. The handlers are in
/// place when this returns (a signal before that would kill the process uncleanly).
fn watch_signals(stop: &Shutdown) {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        _ => {
            log::error!("cannot install signal handlers; stop with SIGKILL");
            return;
        }
    };
    let stop = stop.clone();
    tokio::spawn(async move {
        let why = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        stop.trigger(why);
    });
}
