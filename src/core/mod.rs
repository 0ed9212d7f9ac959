//! The pure core: no I/O, no clock reads, no async. Every decision takes `now` as a parameter.

pub mod backoff;
pub mod clock;
pub mod condition;
pub mod contact;
pub mod fence;
pub mod ownership;
pub mod pressure;
pub mod qos;
pub mod quantity;
pub mod resources;
pub mod signal;
pub mod taint;
pub mod taint_plan;
pub mod threshold;
pub mod validation;
