//! The systemd unit and the packages, checked as shipped: `systemd-analyze verify` and its
//! exposure score, the .deb built, installed, checked and purged with dpkg (with its shell
//! completions, man pages and kubectl plugin symlink: the man page rendered by `man`, the bash
//! completion run in a real bash), and the .rpm's files, config marks and scriptlets. dpkg work
//! is one test function: dpkg holds one lock, and install, remove and purge are one story.
//! Needs root, dpkg, rpm, man, cargo-deb and cargo-generate-rpm (`.ci/install-packaging.sh`);
//! outside CI a missing one skips with a message.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::command::{cargo_command, have, must, run, write_shell_assets};
use support::{agent_bin, is_root, require};

const UNIT: &str = "systemd/nodewarden.service";
/// The ceiling we keep the unit under (docs/architecture.md §7: scored and kept low; "OK" starts
/// below 4.0).
const MAX_EXPOSURE: f64 = 3.0;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The unit with its /usr/bin/nodewarden paths pointed at the binary cargo built for the tests,
/// in a temporary directory: `systemd-analyze verify` checks that ExecStart= is executable, and
/// the tests must not install anything into /usr/bin to prove a text file correct.
fn unit_with_built_binary() -> (tempfile::TempDir, PathBuf) {
    let text = fs::read_to_string(repo().join(UNIT)).expect("read unit");
    assert!(
        text.contains("/usr/bin/nodewarden"),
        "unit runs /usr/bin/nodewarden"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nodewarden.service");
    let bin = agent_bin();
    fs::write(
        &path,
        text.replace("/usr/bin/nodewarden", bin.to_str().expect("utf-8 path")),
    )
    .expect("write unit copy");
    (dir, path)
}

#[test]
fn unit_keeps_its_contract_with_the_binary() {
    let text = fs::read_to_string(repo().join(UNIT)).expect("read unit");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for wanted in [
        "Type=notify",
        "NotifyAccess=main",
        "WatchdogSec=30s",
        "ExecStart=/usr/bin/nodewarden run --config /etc/nodewarden/config.toml",
        "Restart=on-failure",
        "RestartPreventExitStatus=78",
        "StateDirectory=nodewarden",
        "StateDirectoryMode=0700",
        "UMask=0077",
        "CapabilityBoundingSet=CAP_KILL",
        "ReadWritePaths=/sys/fs/cgroup",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
    ] {
        assert!(lines.contains(&wanted), "unit lacks `{wanted}`");
    }
    // Root with a bounding set, never ambient capabilities or another user (see the unit's
    // comment): a User= would need CAP_DAC_OVERRIDE to write the pods' cgroup.kill.
    assert!(!lines.iter().any(|l| l.starts_with("User=")));
    assert!(!lines.iter().any(|l| l.starts_with("AmbientCapabilities=")));
    // The configuration is checked by the main process: RestartPreventExitStatus= does not cover
    // an ExecStartPre= failure, which systemd restarts every RestartSec= (tests/live_systemd.rs).
    assert!(!lines.iter().any(|l| l.starts_with("ExecStartPre=")));
}

#[test]
fn unit_verifies_cleanly() {
    if !require(have("systemd-analyze"), "systemd-analyze (package systemd)") {
        return;
    }
    let (_dir, unit) = unit_with_built_binary();
    let ran = run(
        Command::new("systemd-analyze").arg("verify").arg(&unit),
        Duration::from_secs(60),
    );
    assert!(
        ran.ok && ran.stderr.trim().is_empty() && ran.stdout.trim().is_empty(),
        "systemd-analyze verify complained ({:?}):\n{}{}",
        ran.code,
        ran.stdout,
        ran.stderr
    );
}

/// The "Overall exposure level for <unit>: N.N" figure.
fn exposure(report: &str) -> Option<f64> {
    let line = report
        .lines()
        .find(|l| l.contains("Overall exposure level"))?;
    let after = &line[line.rfind(": ")? + 2..];
    after.split_whitespace().next()?.parse().ok()
}

#[test]
fn exposure_is_parsed_from_the_report_line() {
    let report = "✗ PrivateNetwork=   Service has access to the host's network   0.5\n\
                  \n→ Overall exposure level for nodewarden.service: 2.1 OK 🙂\n";
    assert_eq!(exposure(report), Some(2.1));
    assert_eq!(exposure("no such line"), None);
}

#[test]
fn unit_exposure_is_low_and_every_exposure_is_explained() {
    if !require(have("systemd-analyze"), "systemd-analyze (package systemd)") {
        return;
    }
    let (_dir, unit) = unit_with_built_binary();
    let ran = must(
        Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--no-pager"])
            .arg(&unit),
        Duration::from_secs(60),
    );
    let score =
        exposure(&ran.stdout).unwrap_or_else(|| panic!("no overall exposure in:\n{}", ran.stdout));
    eprintln!("systemd-analyze security: overall exposure {score}");
    assert!(
        score < MAX_EXPOSURE,
        "exposure {score} >= {MAX_EXPOSURE}:\n{}",
        ran.stdout
    );

    // Each remaining exposure (a ✗ line) names a setting; the unit's comments must say why it
    // stays, naming the setting.
    let text = fs::read_to_string(repo().join(UNIT)).expect("read unit");
    let comments: String = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let mut unexplained = Vec::new();
    for line in ran.stdout.lines().filter(|l| l.starts_with('✗')) {
        let setting = line.trim_start_matches('✗').split_whitespace().next();
        let Some(setting) = setting else { continue };
        // "User=/DynamicUser=" or "CapabilityBoundingSet=~CAP_KILL": the first name and, after
        // "~", the item are what a comment mentions.
        let name = setting.split(['/', '=']).next().unwrap_or(setting);
        let item = setting.split('~').nth(1);
        let mentioned = comments.contains(name) || item.is_some_and(|i| comments.contains(i));
        if !mentioned {
            unexplained.push(line.to_string());
        }
    }
    assert!(
        unexplained.is_empty(),
        "exposures without a comment in the unit:\n{}",
        unexplained.join("\n")
    );
}

/// Every subcommand a person types, each with a man page (`nodewarden-<sub>.1`).
const SUBCOMMANDS: [&str; 6] = [
    "run",
    "check-config",
    "sample",
    "status",
    "nodes",
    "explain",
];

/// The subcommands `nodewarden --help` lists (its "Commands:" section, bar `help`).
fn listed_subcommands(bin: &Path) -> Vec<String> {
    let help = must(Command::new(bin).arg("--help"), Duration::from_secs(30)).stdout;
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// A man page rendered by `man -l` as a person reads it (plain text, no pager).
fn man_text(page: &Path) -> String {
    let ran = must(
        Command::new("man")
            .arg("-l")
            .arg(page)
            .env("MANPAGER", "cat")
            // ASCII hyphens and quotes, whatever the caller's locale.
            .env("LC_ALL", "C")
            .env("MANWIDTH", "100")
            .env("MAN_KEEP_FORMATTING", "0"),
        Duration::from_secs(60),
    );
    // Bold and underline as overstrikes when man thinks it writes to a terminal.
    let mut text = String::with_capacity(ran.stdout.len());
    for c in ran.stdout.chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    text
}

/// What the bash completion `script` offers for `line` (the last word being completed), sourced
/// in a real bash with no startup files, its completion function called as readline would.
fn bash_completes(script: &Path, line: &str) -> Vec<String> {
    let program = r#"
        source "$1" || exit 3
        spec=$(complete -p nodewarden) || exit 4
        fn=${spec#*-F }
        fn=${fn%% *}
        read -ra COMP_WORDS <<< "$2"
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE=$2
        COMP_POINT=${#COMP_LINE}
        "$fn" nodewarden "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let ran = must(
        Command::new("bash")
            .args(["--norc", "--noprofile", "-c", program, "bash"])
            .arg(script)
            .arg(line),
        Duration::from_secs(30),
    );
    ran.stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completion_check_is_not_satisfied_by_an_empty_script() {
    // The check above must be able to fail: a script completing nothing offers nothing, and
    // one completing every word with a fixed list offers what it lists.
    if !require(have("bash"), "bash") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let none = dir.path().join("none");
    fs::write(
        &none,
        "_nw() { COMPREPLY=(); }\ncomplete -F _nw nodewarden\n",
    )
    .expect("write");
    assert!(bash_completes(&none, "nodewarden che").is_empty());
    let wrong = dir.path().join("wrong");
    fs::write(
        &wrong,
        "_nw() { COMPREPLY=($(compgen -W 'sample status' -- \"$2\")); }\ncomplete -F _nw nodewarden\n",
    )
    .expect("write");
    assert_eq!(bash_completes(&wrong, "nodewarden s"), ["sample", "status"]);
    assert!(bash_completes(&wrong, "nodewarden che").is_empty());
}

/// Whether dpkg knows the nodewarden package in any state (installed or config-files).
fn dpkg_status() -> Option<String> {
    let ran = run(
        Command::new("dpkg-query").args(["-W", "--showformat=${Status}", "nodewarden"]),
        Duration::from_secs(30),
    );
    ran.ok.then_some(ran.stdout)
}

/// Purges the package on drop, so a failed assertion does not leave it installed.
struct PurgeOnDrop;

impl Drop for PurgeOnDrop {
    fn drop(&mut self) {
        let _ = run(
            Command::new("dpkg").args(["-P", "nodewarden"]),
            Duration::from_secs(120),
        );
    }
}

/// The completions and man pages the .deb installs (Debian: zsh's vendor-completions; man
/// pages gzipped).
fn debian_shell_files() -> Vec<String> {
    let mut files = vec![
        "/usr/share/bash-completion/completions/nodewarden".to_string(),
        "/usr/share/zsh/vendor-completions/_nodewarden".to_string(),
        "/usr/share/fish/vendor_completions.d/nodewarden.fish".to_string(),
        "/usr/share/man/man1/nodewarden.1.gz".to_string(),
    ];
    files.extend(SUBCOMMANDS.map(|s| format!("/usr/share/man/man1/nodewarden-{s}.1.gz")));
    files
}

#[test]
fn deb_builds_installs_checks_config_and_purges() {
    if !require(is_root(), "root (dpkg -i)")
        || !require(have("dpkg"), "dpkg")
        || !require(
            have("cargo-deb"),
            "cargo-deb (bash .ci/install-packaging.sh)",
        )
    {
        return;
    }
    // Never clobber an installation this test did not make.
    if dpkg_status().is_none() {
        for p in ["/usr/bin/nodewarden", "/etc/nodewarden/config.toml"] {
            assert!(
                !Path::new(p).exists(),
                "{p} exists but no nodewarden package owns it: refusing to install over it"
            );
        }
    }

    if !require(
        have("man"),
        "man (package man-db; bash .ci/install-packaging.sh)",
    ) {
        return;
    }
    write_shell_assets(&repo());
    let out = tempfile::tempdir().expect("tempdir");
    // cargo deb builds the release profile itself, then packs.
    must(
        cargo_command()
            .args(["deb", "--locked", "--output"])
            .arg(out.path())
            .current_dir(repo()),
        Duration::from_secs(900),
    );
    let deb = fs::read_dir(out.path())
        .expect("read output dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .expect("cargo deb wrote a .deb");

    let _purge = PurgeOnDrop;
    must(
        Command::new("dpkg")
            .arg("-i")
            .arg(&deb)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        Duration::from_secs(120),
    );

    // The shipped configuration is valid, read by the installed binary.
    let check = run(
        Command::new("/usr/bin/nodewarden").args(["check-config", "/etc/nodewarden/config.toml"]),
        Duration::from_secs(30),
    );
    assert!(
        check.ok,
        "installed check-config failed ({:?}):\n{}{}",
        check.code, check.stdout, check.stderr
    );
    assert_eq!(
        fs::read_to_string("/etc/nodewarden/config.toml").expect("installed config"),
        fs::read_to_string(repo().join("packaging/config.toml")).expect("packaging config"),
    );
    // The unit as in the repository, and it verifies against the installed binary.
    let unit = "/usr/lib/systemd/system/nodewarden.service";
    assert_eq!(
        fs::read_to_string(unit).expect("installed unit"),
        fs::read_to_string(repo().join(UNIT)).expect("repository unit"),
    );
    if have("systemd-analyze") {
        let ran = run(
            Command::new("systemd-analyze").args(["verify", unit]),
            Duration::from_secs(60),
        );
        assert!(
            ran.ok && ran.stderr.trim().is_empty(),
            "installed unit does not verify:\n{}",
            ran.stderr
        );
    }
    let state = fs::metadata("/var/lib/nodewarden").expect("state directory exists");
    assert!(state.is_dir());
    assert_eq!(state.permissions().mode() & 0o7777, 0o700, "state dir mode");

    let conffiles = must(
        Command::new("dpkg-query").args(["-W", "--showformat=${Conffiles}", "nodewarden"]),
        Duration::from_secs(30),
    );
    assert!(
        conffiles
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with("/etc/nodewarden/config.toml ")),
        "config.toml is not a conffile: {:?}",
        conffiles.stdout
    );
    // Enabled (deb-systemd-helper works without a running systemd), never started here: the
    // shipped config names no kubeconfig, and this machine's PID 1 is not systemd anyway.
    let wants = Path::new("/etc/systemd/system/multi-user.target.wants/nodewarden.service");
    assert!(
        wants.symlink_metadata().is_ok(),
        "postinst did not enable the unit"
    );

    // The completions and man pages where Debian's conventions put them, and the kubectl plugin.
    let installed = debian_shell_files();
    for f in &installed {
        assert!(Path::new(f).is_file(), "{f} not installed");
    }
    assert_eq!(
        fs::read_link("/usr/bin/kubectl-nodewarden").expect("kubectl-nodewarden is a symlink"),
        Path::new("nodewarden")
    );
    let plugin = must(
        Command::new("/usr/bin/kubectl-nodewarden").arg("--help"),
        Duration::from_secs(30),
    );
    assert!(
        plugin.stdout.contains("kubectl nodewarden"),
        "{}",
        plugin.stdout
    );
    // The man page renders and names every subcommand the binary lists; each has its own page.
    let listed = listed_subcommands(Path::new("/usr/bin/nodewarden"));
    assert_eq!(listed, SUBCOMMANDS, "the binary's subcommands");
    let page = man_text(Path::new("/usr/share/man/man1/nodewarden.1.gz"));
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!("nodewarden-{sub}(1)")),
            "nodewarden(1) does not name {sub}:\n{page}"
        );
        let sub_page = man_text(Path::new(&format!(
            "/usr/share/man/man1/nodewarden-{sub}.1.gz"
        )));
        assert!(
            sub_page.contains(&format!("nodewarden-{sub}")),
            "nodewarden-{sub}(1):\n{sub_page}"
        );
    }
    assert!(
        man_text(Path::new("/usr/share/man/man1/nodewarden-explain.1.gz")).contains("--pod"),
        "explain's page lists its options"
    );
    // The bash completion, sourced in a real bash, completes a subcommand's start.
    let bash = Path::new("/usr/share/bash-completion/completions/nodewarden");
    assert_eq!(bash_completes(bash, "nodewarden che"), ["check-config"]);
    assert_eq!(bash_completes(bash, "nodewarden s"), ["sample", "status"]);

    // Remove: the binary goes, the conffile stays.
    must(
        Command::new("dpkg").args(["-r", "nodewarden"]),
        Duration::from_secs(120),
    );
    assert!(!Path::new("/usr/bin/nodewarden").exists(), "binary left");
    assert!(!Path::new(unit).exists(), "unit left");
    for f in &installed {
        assert!(!Path::new(f).exists(), "{f} left");
    }
    assert!(
        Path::new("/usr/bin/kubectl-nodewarden")
            .symlink_metadata()
            .is_err(),
        "kubectl-nodewarden left"
    );
    assert!(
        Path::new("/etc/nodewarden/config.toml").exists(),
        "remove must keep the conffile"
    );
    assert_eq!(dpkg_status().as_deref(), Some("deinstall ok config-files"));

    // Purge: configuration, state and enablement go too.
    must(
        Command::new("dpkg").args(["-P", "nodewarden"]),
        Duration::from_secs(120),
    );
    assert!(
        !Path::new("/etc/nodewarden/config.toml").exists(),
        "purge left the config"
    );
    assert!(
        !Path::new("/etc/nodewarden").exists(),
        "purge left /etc/nodewarden"
    );
    assert!(
        !Path::new("/var/lib/nodewarden").exists(),
        "purge left the state"
    );
    assert!(
        wants.symlink_metadata().is_err(),
        "purge left the enablement"
    );
    let status = dpkg_status();
    assert!(
        status.is_none() || status.as_deref() == Some("unknown ok not-installed"),
        "dpkg still knows the package: {status:?}"
    );
}

/// The lines of a shell script that start the agent must all sit in a branch taken only when the
/// configuration names a kubeconfig (or on upgrade, try-restart: only if it was running).
fn starts_only_with_kubeconfig(script: &str) -> Result<(), String> {
    // The conditions of the if/elif/else blocks around each line, innermost last.
    let mut open: Vec<&str> = Vec::new();
    for line in script.lines().map(str::trim) {
        let one_line_if = line.ends_with(" fi") || line.ends_with("; fi");
        if line.starts_with("if ") && !one_line_if {
            open.push(line);
            continue;
        }
        if line.starts_with("elif ") || line == "else" {
            if let Some(top) = open.last_mut() {
                *top = line;
            }
            continue;
        }
        if line == "fi" {
            open.pop();
            continue;
        }
        let starts = line.contains("systemctl")
            && !line.starts_with("echo ")
            && (line.contains(" start ") || line.contains("--now") || line.contains(" restart "));
        if !starts {
            continue;
        }
        match open.last() {
            Some(guard) if guard.contains("kubeconfig") => {}
            Some(guard) => {
                return Err(format!(
                    "start not guarded by a kubeconfig check: {guard} / {line}"
                ));
            }
            None => return Err(format!("unguarded start: {line}")),
        }
    }
    Ok(())
}

#[test]
fn start_guard_check_catches_an_unconditional_start() {
    assert!(starts_only_with_kubeconfig("systemctl start nodewarden.service\n").is_err());
    // A start after a guarded block has closed is not guarded by it.
    assert!(
        starts_only_with_kubeconfig(
            "if grep -q kubeconfig /etc/x; then\n  echo ok\nfi\nsystemctl start x || true"
        )
        .is_err()
    );
    assert!(
        starts_only_with_kubeconfig("if [ -d /run/systemd/system ]; then\nsystemctl start x\nfi")
            .is_err()
    );
    assert!(
        starts_only_with_kubeconfig(
            "if grep -q kubeconfig /etc/x; then\n  systemctl start x >/dev/null\nfi"
        )
        .is_ok()
    );
}

#[test]
fn debian_scripts_reload_systemd_and_start_only_with_a_kubeconfig() {
    let postinst = fs::read_to_string(repo().join("packaging/debian/postinst")).expect("postinst");
    assert!(postinst.contains("daemon-reload"));
    assert!(postinst.contains("[ -d /run/systemd/system ]"));
    starts_only_with_kubeconfig(&postinst).unwrap();
    for script in ["postinst", "prerm", "postrm"] {
        let path = repo().join("packaging/debian").join(script);
        let mode = fs::metadata(&path).expect("script").permissions().mode();
        assert!(mode & 0o111 != 0, "{script} is not executable");
        let text = fs::read_to_string(&path).expect("script");
        // Every systemctl call tolerates a missing or non-running systemd.
        for line in text.lines().filter(|l| l.contains("systemctl ")) {
            if line.trim_start().starts_with('#') || line.contains("echo ") {
                continue;
            }
            assert!(
                line.contains("|| true"),
                "{script}: `{line}` can fail the install"
            );
        }
    }
}

#[test]
fn rpm_has_files_noreplace_config_and_safe_scripts() {
    if !require(have("rpm"), "rpm (apt-get install rpm)")
        || !require(
            have("cargo-generate-rpm"),
            "cargo-generate-rpm (bash .ci/install-packaging.sh)",
        )
    {
        return;
    }
    write_shell_assets(&repo());
    // cargo generate-rpm packs what is built; cargo waits for the .deb test's build if one runs.
    must(
        cargo_command()
            .args(["build", "--release", "--locked", "--bin", "nodewarden"])
            .current_dir(repo()),
        Duration::from_secs(900),
    );
    let out = tempfile::tempdir().expect("tempdir");
    must(
        cargo_command()
            .args(["generate-rpm", "-o"])
            .arg(out.path())
            .current_dir(repo()),
        Duration::from_secs(120),
    );
    let rpm = fs::read_dir(out.path())
        .expect("read output dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "rpm"))
        .expect("cargo generate-rpm wrote an .rpm");

    let q = |args: &[&str]| {
        must(
            Command::new("rpm").args(args).arg(&rpm),
            Duration::from_secs(60),
        )
        .stdout
    };
    let files = q(&["-qlp"]);
    // Fedora's places: zsh's site-functions, and the man pages gzipped as brp-compress leaves
    // them.
    let mut wanted = vec![
        "/usr/bin/nodewarden".to_string(),
        "/usr/lib/systemd/system/nodewarden.service".to_string(),
        "/etc/nodewarden/config.toml".to_string(),
        "/usr/share/bash-completion/completions/nodewarden".to_string(),
        "/usr/share/zsh/site-functions/_nodewarden".to_string(),
        "/usr/share/fish/vendor_completions.d/nodewarden.fish".to_string(),
        "/usr/share/man/man1/nodewarden.1.gz".to_string(),
    ];
    wanted.extend(SUBCOMMANDS.map(|s| format!("/usr/share/man/man1/nodewarden-{s}.1.gz")));
    for f in &wanted {
        assert!(
            files.lines().any(|l| l == f),
            "{f} not in the rpm:\n{files}"
        );
    }
    let configs = q(&["-qp", "--configfiles"]);
    assert_eq!(configs.trim(), "/etc/nodewarden/config.toml");
    // %config(noreplace): the file flags hold RPMFILE_CONFIG (1) | RPMFILE_NOREPLACE (16).
    let flags = q(&[
        "-qp",
        "--queryformat",
        "[%{FILENAMES} %{FILEFLAGS:fflags} %{FILEMODES:perms}\n]",
    ]);
    let config = flags
        .lines()
        .find(|l| l.starts_with("/etc/nodewarden/config.toml "))
        .expect("config flags");
    assert!(
        config.contains(" cn "),
        "config not %config(noreplace): {config}"
    );
    let bin = flags
        .lines()
        .find(|l| l.starts_with("/usr/bin/nodewarden "))
        .expect("binary entry");
    assert!(bin.ends_with(" -rwxr-xr-x"), "binary mode: {bin}");

    let scripts = q(&["-qp", "--scripts"]);
    assert!(scripts.contains("postinstall scriptlet"), "{scripts}");
    assert!(scripts.contains("preuninstall scriptlet"), "{scripts}");
    assert!(scripts.contains("postuninstall scriptlet"), "{scripts}");
    assert!(scripts.contains("daemon-reload"), "{scripts}");
    assert!(scripts.contains("[ -d /run/systemd/system ]"), "{scripts}");
    // The state directory is made by %post, not owned by the package (see Cargo.toml).
    assert!(
        scripts.contains("install -d -m 0700 /var/lib/nodewarden"),
        "{scripts}"
    );
    starts_only_with_kubeconfig(&scripts).unwrap();
    // The kubectl plugin's symlink, made by %post and removed on erase (no symlink assets in
    // cargo-generate-rpm 0.21).
    assert!(
        scripts.contains("ln -s nodewarden /usr/bin/kubectl-nodewarden"),
        "{scripts}"
    );
    assert!(
        scripts.contains("rm -f /usr/bin/kubectl-nodewarden"),
        "{scripts}"
    );
}
