//! The pure core: no I/O, no clock reads, no async. Every decision takes `now` as a parameter.
//! It names no other module of this crate: it is the bottom layer (`src/lib.rs`, test `layers`).

pub mod allocatable;
pub mod api_validation;
pub mod backoff;
pub mod clock;
pub mod condition;
pub mod contact;
pub mod event;
pub mod features;
pub mod fence_plan;
pub mod fencing;
pub mod leader;
pub mod names;
pub mod ownership;
pub mod pod_view;
pub mod pressure;
pub mod qos;
pub mod quantity;
pub mod quorum;
pub mod reporting;
pub mod resource_version;
pub mod resources;
pub mod signal;
pub mod taint;
pub mod taint_plan;
pub mod threshold;
pub mod units;
pub mod unlisted;
pub mod zone;
