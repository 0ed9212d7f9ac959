//! The pure core: no I/O, no clock reads, no async. Every decision takes `now` as a parameter.

pub mod allocatable;
pub mod api_validation;
pub mod backoff;
pub mod clock;
pub mod condition;
pub mod contact;
pub mod features;
pub mod fence_plan;
pub mod fencing;
pub mod names;
pub mod ownership;
pub mod pod_view;
pub mod pressure;
pub mod qos;
pub mod quantity;
pub mod quorum;
pub mod resource_version;
pub mod resources;
pub mod signal;
pub mod taint;
pub mod taint_plan;
pub mod threshold;

#[cfg(test)]
mod tests {
    /// The layering is one-way: the shells (config, agent, api, sample, …) use the core, and the
    /// core takes plain values, so no core file may name a shell module.
    #[test]
    fn core_imports_no_shell_module() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
        // Built with `format!` so this list does not match itself.
        let shells: Vec<String> = [
            "config",
            "agent",
            "api",
            "sample",
            "observe",
            "terminate",
            "state",
            "cli",
            "peer",
            "machine",
            "allocatable",
        ]
        .iter()
        .map(|m| format!("crate::{m}"))
        .collect();
        let mut offenders = Vec::new();
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                if let Some(s) = shells.iter().find(|s| line.contains(s.as_str())) {
                    offenders.push(format!("{}:{}: {s}", path.display(), n + 1));
                }
            }
        }
        assert!(
            files > 10,
            "read only {files} core files from {}",
            dir.display()
        );
        assert!(offenders.is_empty(), "core imports a shell: {offenders:#?}");
    }
}
