//! The command line's definition: every command, argument and help text, as clap derives them.
//! Apart from `main.rs` so that what is generated from it outside the agent — the shell
//! completions and man pages the packages install (`examples/shell_assets.rs`) — reads the same
//! definitions without linking their generators into the agent.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// `nodewarden`: its subcommand.
#[derive(Parser)]
#[command(
    name = "nodewarden",
    version,
    about = "Per-node Kubernetes agent: pressure conditions, self-tainting, local NoExecute fencing",
    // The doc comment is for rustdoc; the help text is `about`.
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// How a command prints: a table for a person, or JSON.
#[derive(Clone, Copy, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Run the agent (standalone when no kubeconfig is configured).
    Run {
        /// Configuration file [default: /etc/nodewarden/config.toml, or the built-in defaults
        /// when that file does not exist].
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
    },
    /// Validate a configuration file and print the effective configuration.
    CheckConfig {
        /// Configuration file (also accepted as --config) [default: /etc/nodewarden/config.toml,
        /// or the built-in defaults when that file does not exist].
        file: Option<PathBuf>,
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
    /// Take one reading of every signal and print it with the conditions it implies.
    Sample {
        /// Configuration file [default: /etc/nodewarden/config.toml, or the built-in defaults
        /// when that file does not exist].
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
    /// Show contact with the control plane and every known pod's fence plan (from the state
    /// directory: works while the API server is unreachable).
    Status {
        /// Configuration file [default: /etc/nodewarden/config.toml, or the built-in defaults
        /// when that file does not exist].
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
    /// The fleet at a glance, from the API alone: each Node's nodewarden conditions and
    /// taints, its Lease's age, its latest fence and quorum Events.
    Nodes {
        #[command(flatten)]
        cluster: ClusterArgs,
        /// Where the agents' Leases are (`leaseNamespace` of their configuration).
        #[arg(long, default_value = "kube-node-lease")]
        lease_namespace: String,
    },
    /// Explain a pod against a node's taints: schedulable? evicted when? which cgroup?
    Explain {
        /// The Node: a file (YAML or JSON), - for standard input, or NAME to read it from the
        /// cluster.
        #[arg(long)]
        node: String,
        /// The Pod: a file (YAML or JSON), - for standard input, or NAMESPACE/NAME to read it
        /// from the cluster.
        #[arg(long)]
        pod: String,
        /// Configuration file whose `featureGates` say which cluster rules apply [default: none:
        /// every gate at its default].
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(long, short = 'o', value_enum, default_value = "text")]
        output: Output,
    },
}

/// How a command reaches the cluster, as kubectl is told: without `--kubeconfig`, the files in
/// `KUBECONFIG`, then `~/.kube/config`, then the pod's ServiceAccount.
#[derive(clap::Args, Clone, Default)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file to use.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use.
    #[arg(long)]
    pub context: Option<String>,
}
