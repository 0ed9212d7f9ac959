//! The `nodewarden` command line: `run`, `check-config`, `sample`, `explain`.
//!
//! Exit codes: 0 success; 1 runtime failure; 2 usage error; 65 malformed input to `explain`
//! (EX_DATAERR); 78 configuration error (EX_CONFIG), which the systemd unit excludes from
//! restarts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};

use nodewarden::agent::{self, Source};
use nodewarden::config::{self, Config};
use nodewarden::core::clock::Moment;
use nodewarden::observe::{self, http::Health};
use nodewarden::sample::{SamplePaths, Sampler};

const DEFAULT_CONFIG: &str = "/etc/nodewarden/config.toml";
const EXIT_RUNTIME: u8 = 1;
const EXIT_DATA: u8 = 65;
const EXIT_CONFIG: u8 = 78;

#[derive(Parser)]
#[command(
    name = "nodewarden",
    version,
    about = "Per-node Kubernetes agent: pressure conditions, self-tainting, local NoExecute fencing"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the agent (standalone when no kubeconfig is configured).
    Run {
        /// Configuration file.
        #[arg(long, short = 'c', default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Validate a configuration file and print the effective configuration.
    CheckConfig {
        /// Configuration file (also accepted as --config).
        file: Option<PathBuf>,
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
    /// Take one reading of every signal and print it with the conditions it implies.
    Sample {
        #[arg(long, short = 'c', default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
    /// Show contact with the control plane and every known pod's fence plan (from the state
    /// directory: works while the API server is unreachable).
    Status {
        #[arg(long, short = 'c', default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
    /// Explain a pod against a node's taints: schedulable? evicted when? which cgroup?
    Explain {
        /// A Node object, YAML or JSON.
        #[arg(long)]
        node: PathBuf,
        /// A Pod object, YAML or JSON.
        #[arg(long)]
        pod: PathBuf,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { config } => run(&config),
        Command::CheckConfig {
            file,
            config,
            output,
        } => {
            let path = file
                .or(config)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
            check_config(&path, output)
        }
        Command::Sample { config, output } => sample(&config, output),
        Command::Explain { node, pod, output } => explain(&node, &pod, output),
        Command::Status { config, output } => status(&config, output),
    }
}

/// Loads the configuration, printing every error (and warning) to stderr.
fn load(path: &Path) -> Result<Config, ExitCode> {
    match config::load_with_warnings(path) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            Ok(loaded.config)
        }
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!("nodewarden: configuration {} is invalid", path.display());
            Err(ExitCode::from(EXIT_CONFIG))
        }
    }
}

fn check_config(path: &Path, output: Output) -> ExitCode {
    let config = match load(path) {
        Ok(c) => c,
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
            println!("configuration {} is valid", path.display());
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

fn sample(path: &Path, output: Output) -> ExitCode {
    let config = match load(path) {
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
    let mut report = nodewarden::report::sample_report(
        &agent::node_name(&config),
        &reading,
        &decision.evaluation,
        &decider.conditions,
        &decider.taints,
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
        Output::Text => print!("{}", nodewarden::report::sample_text(&report)),
    }
    ExitCode::SUCCESS
}

fn status(path: &Path, output: Output) -> ExitCode {
    let config = match load(path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut report =
        match nodewarden::status::report(&config, &agent::node_name(&config), SystemTime::now()) {
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
        Output::Text => print!("{}", nodewarden::status::text(&report)),
    }
    ExitCode::SUCCESS
}

fn explain(node: &Path, pod: &Path, output: Output) -> ExitCode {
    match nodewarden::explain::explain_files(node, pod) {
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
                    let text = nodewarden::explain::render_text(&report);
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

fn run(path: &Path) -> ExitCode {
    let config = match load(path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    observe::log::init(&config.logging);
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
    runtime.block_on(async {
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
            let client = match nodewarden::api::connect(config.kubeconfig.as_deref()).await {
                Ok(c) => c,
                Err(e) => {
                    log::error!("cannot build the API client: {e}");
                    server.abort();
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            match agent::connected::run(
                &config,
                client,
                sampler(&config),
                health,
                shutdown_signal(),
            )
            .await
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
            agent::sampling::run(&config, sampler(&config), health, None, shutdown_signal()).await;
            ExitCode::SUCCESS
        };
        server.abort();
        code
    })
}

/// Resolves on the first SIGTERM or SIGINT with the signal's name.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        _ => {
            log::error!("cannot install signal handlers; stop with SIGKILL");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}
