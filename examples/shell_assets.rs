//! Writes the shell completions (bash, zsh, fish) and the man pages (`nodewarden.1` and one per
//! subcommand, each also gzipped) the .deb and the .rpm install, generated from the command
//! line's definition (`nodewarden::cli::args`) by `clap_complete` and `clap_mangen`.
//!
//! A build step, not a subcommand of the agent: the generators stay out of the release binary
//! the daemon runs (the packages ship files, so nothing needs them at run time). Run it before
//! `cargo deb` and `cargo generate-rpm`, which pack what it writes:
//!
//! ```sh
//! cargo run --example shell_assets -- target/assets
//! ```
//!
//! Writes `DIR/completions/{nodewarden.bash,_nodewarden,nodewarden.fish}` and
//! `DIR/man/nodewarden*.1{,.gz}`. Each file is written beside its place and renamed into it, so
//! a packager reading the directory while it is regenerated never reads half a file.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::CommandFactory;
use clap_complete::Shell;

use nodewarden::cli::args::Cli;

/// The name the completions complete and the man pages are named after.
const BIN: &str = "nodewarden";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: shell_assets DIR");
        return ExitCode::from(2);
    };
    match write_all(Path::new(&dir)) {
        Ok(written) => {
            for p in written {
                println!("{}", p.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shell_assets: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_all(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let completions = dir.join("completions");
    let man = dir.join("man");
    for d in [&completions, &man] {
        fs::create_dir_all(d).map_err(|e| format!("create {}: {e}", d.display()))?;
    }
    let mut written = Vec::new();
    // The file names each shell looks for under its vendor directory: bash-completion loads
    // `completions/<command>`, zsh's compinit `_<command>` on $fpath, fish
    // `vendor_completions.d/<command>.fish`. The .bash suffix is dropped when packed.
    for (shell, name) in [
        (Shell::Bash, format!("{BIN}.bash")),
        (Shell::Zsh, format!("_{BIN}")),
        (Shell::Fish, format!("{BIN}.fish")),
    ] {
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), BIN, &mut text);
        written.push(replace(&completions.join(name), &text)?);
    }
    // One page for the command and one per subcommand (`nodewarden-run.1`, …), as git and
    // cargo name theirs; help is clap's own subcommand, not a page.
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let mut pages = vec![command.clone()];
    pages.extend(
        command
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .cloned(),
    );
    for page in pages {
        let page = clap_mangen::Man::new(page);
        let mut roff = Vec::new();
        page.render(&mut roff)
            .map_err(|e| format!("render {}: {e}", page.get_filename()))?;
        let path = man.join(page.get_filename());
        written.push(replace(&path, &roff)?);
        // gzip -9n, as Debian policy asks of installed man pages and rpmbuild's brp-compress
        // does (no name or time in the header, so a rebuild is byte-identical). cargo-deb
        // compresses the .deb's itself; cargo-generate-rpm does not, so the .rpm packs these.
        written.push(replace(&path.with_extension("1.gz"), &gzip(&path)?)?);
    }
    Ok(written)
}

/// Writes `bytes` to `path` through a temporary file beside it.
fn replace(path: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, bytes).map_err(|e| format!("write {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("rename to {}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

/// `gzip -9 -n` of the file at `path` (the system's gzip: no compression crate for a few
/// kilobytes).
fn gzip(path: &Path) -> Result<Vec<u8>, String> {
    let out = Command::new("gzip")
        .args(["-9", "-n", "-c"])
        .arg(path)
        .output()
        .map_err(|e| format!("run gzip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "gzip {}: {}: {}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}
