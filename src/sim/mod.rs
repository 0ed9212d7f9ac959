//! Deterministic simulation of the fence (issue 22): the control plane as upstream implements
//! it ([`control`]) and a cluster of agents running this crate's own decisions — contact
//! (`core::contact::Contact`), cut off (`core::fencing::Link`), the peers' answers and rounds
//! (`core::quorum::{answer, select, RoundBasis, decide, Gate, planning}`, `core::zone::round`), the fence plan
//! (`core::fence_plan::plan`), its steps (`core::fencing::Steps`) and what is written to disk
//! (`core::fencing::Durability`) — through random partitions, control-plane outages, restarts
//! and pod churn, in virtual time. A seed reproduces a run exactly.
//!
//! Why a scheduler of our own rather than turmoil or madsim: those run the async tasks under a
//! simulated runtime and network, which needs the tasks' I/O (kube client, hyper, signals,
//! cgroups) behind simulated sockets; the decisions that matter are already pure functions of
//! their inputs and the instant (the sans-IO shape), so the simulator feeds them directly and
//! steps virtual time from one due instant to the next — the same functions the tasks call, with
//! no runtime in between. stateright explores every interleaving but needs the world as a finite
//! model; proptest's state machines shrink well but replay by their own seeds, not ours.
//!
//! What it checks at every instant (see `world`): a pod whose processes run on its node after the
//! control plane deleted it ("running twice"); a pod stopped that the control plane keeps
//! ("wrongful stop"); an agent that says enforce in an outage of the whole control plane it lost
//! contact in; and the earliness of every stop against the control plane's deletion.

pub mod control;
pub mod scenario;
pub mod world;

pub use scenario::{Event, PodSpec, Scenario};
pub use world::{Outcome, Settings, Violation, run};

/// A small, fast generator (xorshift64*): the whole run follows from its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // A zero state stays zero: mix the seed first (splitmix64).
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }
    pub fn draw(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.draw() % n.max(1)
    }
    /// True with probability `p` percent.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
