//! Feature gates (`featureGates`, typed as KubeletConfiguration's `map[string]bool`): the
//! upstream switches behind which nodewarden follows a newer Kubernetes rule. Only the gates
//! listed in [`KNOWN`] are accepted, as a Kubernetes component refuses a gate it does not know
//! (`component-base/featuregate`: "unrecognized feature gate"). Pure.

/// `TaintTolerationComparisonOperators` (KEP-5471): the `Lt`/`Gt` toleration operators. Alpha
/// in 1.35, off by default (`pkg/features/kube_features.go`).
pub const TAINT_TOLERATION_COMPARISON_OPERATORS: &str = "TaintTolerationComparisonOperators";

/// Every gate this build knows: name, default, and the upstream stage that default follows.
pub const KNOWN: &[(&str, bool, &str)] = &[(
    TAINT_TOLERATION_COMPARISON_OPERATORS,
    false,
    "alpha since 1.35 (KEP-5471)",
)];

/// The gates in effect: each known gate's default (all off today, hence the derived default),
/// overridden by `featureGates`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// [`TAINT_TOLERATION_COMPARISON_OPERATORS`].
    pub taint_toleration_comparison_operators: bool,
}

impl FeatureGates {
    /// Sets a gate by its upstream name; `Err` with the known names when the name is unknown
    /// (names are case-sensitive, as upstream compares them).
    pub fn set(&mut self, name: &str, enabled: bool) -> Result<(), String> {
        match name {
            TAINT_TOLERATION_COMPARISON_OPERATORS => {
                self.taint_toleration_comparison_operators = enabled
            }
            _ => {
                let known: Vec<&str> = KNOWN.iter().map(|(n, _, _)| *n).collect();
                return Err(format!(
                    "unrecognized feature gate \"{name}\"; this build knows: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Whether the named gate is on; `None` for a name this build does not know.
    pub fn enabled(&self, name: &str) -> Option<bool> {
        match name {
            TAINT_TOLERATION_COMPARISON_OPERATORS => {
                Some(self.taint_toleration_comparison_operators)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_gate_has_its_listed_default() {
        let gates = FeatureGates::default();
        for (name, default, _) in KNOWN {
            assert_eq!(gates.enabled(name), Some(*default), "{name}");
        }
    }

    #[test]
    fn unknown_and_miscased_gate_names_are_refused() {
        let mut gates = FeatureGates::default();
        assert!(gates.set("NoSuchGate", true).is_err());
        assert!(
            gates
                .set("tainttolerationcomparisonoperators", true)
                .is_err()
        );
        assert_eq!(gates, FeatureGates::default());
        gates
            .set(TAINT_TOLERATION_COMPARISON_OPERATORS, true)
            .expect("known gate");
        assert!(gates.taint_toleration_comparison_operators);
    }
}
