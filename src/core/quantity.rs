//! Kubernetes resource quantities (`100Mi`, `1.5Gi`, `500m`, `1e3`), parsed once into an exact
//! integer representation and printed back in canonical form.
//!
//! TO BE IMPLEMENTED (helper A). Public interface fixed here:
//! - `Quantity: FromStr<Err = QuantityError> + Display (canonical form) + Clone + Debug + PartialEq + Eq + Ord`
//! - `Quantity::value(&self) -> i64`: whole units rounded up (Kubernetes `Quantity.Value()`), saturating
//! - `Quantity::is_positive(&self) -> bool`, `Quantity::is_negative(&self) -> bool`
//! - `Quantity::from_units(v: i64, format: Format) -> Quantity`

/// Placeholder until the parser lands.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity {
    nanos: i128,
}
impl Quantity {
    /// Placeholder.
    pub fn value(&self) -> i64 {
        (self.nanos / 1_000_000_000) as i64
    }
}
