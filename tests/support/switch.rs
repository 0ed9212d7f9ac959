//! A reading source for connected-mode tests and benches: healthy memory and PIDs, and disk
//! pressure (`nodefs.available` 1 of 1000) switched on or off from the test.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nodewarden::agent::{Reading, Source};
use nodewarden::core::signal::{Observation, Observations, Signal};

#[derive(Clone)]
pub struct Switch(pub Arc<AtomicBool>);

impl Source for Switch {
    fn read(&mut self) -> Reading {
        let mut o = Observations::default();
        let available = if self.0.load(Ordering::SeqCst) {
            1
        } else {
            900
        };
        let mut put = |signal, available, capacity| {
            o.eviction.insert(
                signal,
                Observation {
                    available,
                    capacity,
                },
            );
        };
        put(Signal::NodeFsAvailable, available, 1000);
        put(Signal::MemoryAvailable, 8 << 30, 16 << 30);
        put(Signal::PidAvailable, 30_000, 32_768);
        Reading {
            observations: o,
            errors: vec![],
        }
    }
}
