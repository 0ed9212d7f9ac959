//! nodewarden: a per-node Kubernetes agent. See README.md; the design is docs/architecture.md.
//!
//! The house, from the bottom up — each layer uses only the layers below it, never one beside
//! it or above it (the test `layers` at the end of this file guards every layer):
//!
//! ```text
//!  main.rs     the binary: `run`, `check-config`, and the commands in `cli`
//!  6 cli       sample, status, explain: read, decide with the core, print
//!  5 agent     the tasks of `run`, thin loops on one clock (agent::clock): sampling, reporter,
//!              heartbeat, watches, quorum, fence task, shutdown — each gathers inputs, asks the
//!              core, carries out the answer
//!  4 observe   logs, metrics, health (reads the shells' counters and views)
//!    allocatable  Node Allocatable on the node (from sample's and state's readings)
//!  3 shells    one kind of I/O each, no policy, never each other: sample (/proc, cgroups,
//!              statvfs, PSI), api (the API server through kube), peer (the signed peer
//!              endpoint), terminate (pod cgroups, signals), state (atomic files), machine
//!  2 config    the TOML file, checked and translated into the core's types
//!    sim       the deterministic simulator (tests and `examples/simulate.rs`): the control plane
//!              as upstream implements it and N agents made of `core`'s decisions
//!  1 bounded   every file read capped in size, every outside text in a message capped
//!  0 core      pure decisions: no I/O, no clock reads, no async; `now` is a parameter
//!              (thresholds, pressure, conditions, taints, fence plans and the fence task's
//!              per-tick decisions, quorum, contact, names and API validation)
//! ```
//!
//! docs/architecture.md §2 says why.

pub mod agent;
pub mod allocatable;
pub mod api;
pub mod bounded;
pub mod cli;
pub mod config;
pub mod core;
pub mod machine;
pub mod observe;
pub mod peer;
pub mod sample;
pub mod sim;
pub mod state;
pub mod terminate;

/// The layer order drawn above, guarded by one test over every module rather than by a workspace
/// of crates: one crate builds and links once (a crate per layer would add a crate boundary, its
/// own compilation unit and a rebuild of each dependent crate to every change that moves an item
/// between layers, on machines where a clean build already takes minutes), and the whole order
/// reads in one place, here. The test reads the sources, so it costs milliseconds.
#[cfg(test)]
mod layers {
    use std::collections::{BTreeMap, BTreeSet};

    /// Each top-level module's layer: it may name modules of lower layers only.
    const LAYERS: &[(&str, u8)] = &[
        ("core", 0),
        ("bounded", 1),
        ("config", 2),
        ("sim", 2),
        ("api", 3),
        ("peer", 3),
        ("sample", 3),
        ("state", 3),
        ("terminate", 3),
        ("machine", 3),
        ("observe", 4),
        ("allocatable", 4),
        ("agent", 5),
        ("cli", 6),
    ];

    /// Arrows allowed although they point the wrong way, each with why. None today.
    const EXCEPTIONS: &[(&str, &str, &str)] = &[];

    /// Every `crate::<module>` a file names outside comments, with `crate::{a, b}` groups
    /// expanded.
    fn named(text: &str) -> BTreeSet<String> {
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut out = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            // `nodewarden::crate::` cannot occur; `$crate::` in a macro names this crate too.
            let rest = &code[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let head = item.trim().split("::").next().unwrap_or("");
                    out.insert(head.to_string());
                }
            } else {
                let head: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(head);
            }
        }
        out
    }

    /// `(from, to) → files` for every arrow between top-level modules.
    fn arrows() -> BTreeMap<(String, String), BTreeSet<String>> {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        let mut dirs = vec![src.clone()];
        let mut files = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let rel = path
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                let Some(from) = rel.split('/').next().map(|m| m.trim_end_matches(".rs")) else {
                    continue;
                };
                if !rel.ends_with(".rs") || !LAYERS.iter().any(|(m, _)| *m == from) {
                    continue; // lib.rs, main.rs: the top
                }
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                for to in named(&text) {
                    if to != from {
                        out.entry((from.to_string(), to))
                            .or_default()
                            .insert(rel.clone());
                    }
                }
            }
        }
        assert!(
            files > 60,
            "read only {files} files under {}",
            src.display()
        );
        out
    }

    fn layer(module: &str) -> Option<u8> {
        LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
    }

    #[test]
    fn every_import_points_down_a_layer() {
        let arrows = arrows();
        assert!(arrows.len() > 20, "found only {} arrows", arrows.len());
        let mut wrong = Vec::new();
        for ((from, to), files) in &arrows {
            let Some(to_layer) = layer(to) else {
                // `crate::main`-like names do not exist; anything else is a module this table
                // must place.
                wrong.push(format!("{from} → {to}: {to} has no layer in LAYERS"));
                continue;
            };
            let from_layer = layer(from).unwrap_or(u8::MAX);
            let excepted = EXCEPTIONS.iter().any(|(f, t, _)| f == from && t == to);
            if to_layer >= from_layer && !excepted {
                wrong.push(format!(
                    "{from} (layer {from_layer}) → {to} (layer {to_layer}) in {files:?}"
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "imports that point up or sideways (move the shared item down to a layer both can \
             see; src/lib.rs draws the order): {wrong:#?}"
        );
    }

    /// The table places every module `lib.rs` declares, so a new module cannot escape the guard.
    #[test]
    fn every_module_has_a_layer() {
        let lib = include_str!("lib.rs");
        let declared: Vec<&str> = lib
            .lines()
            .filter_map(|l| l.strip_prefix("pub mod "))
            .map(|l| l.trim_end_matches(';'))
            .collect();
        assert!(declared.len() > 10, "{declared:?}");
        for m in &declared {
            assert!(layer(m).is_some(), "module {m} has no layer in LAYERS");
        }
        assert_eq!(
            declared.len(),
            LAYERS.len(),
            "LAYERS names a module lib.rs does not"
        );
    }

    /// The reader itself: what it must see and what it must not.
    #[test]
    fn the_reader_sees_paths_and_groups_but_not_comments() {
        let text = "use crate::api::x;\n// crate::agent in a comment\n/// crate::cli in a doc\n\
                    use crate::{core::a, state::B};\nlet t = crate::bounded::excerpt(s);\n";
        let got: Vec<String> = named(text).into_iter().collect();
        assert_eq!(got, ["api", "bounded", "core", "state"]);
    }
}
