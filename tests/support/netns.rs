//! A real network partition for tests: a network namespace joined to the host by a veth pair.
//! The agent runs inside it (`nsenter --net`, which leaves the mount namespace alone so the
//! host's cgroup hierarchies stay visible); the API test server listens on the host end. Cutting
//! the link (`ip link set <host end> down`) drops every packet: the agent's connections hang as in
//! a real partition. Addresses are a /30 of 10.213.0.0/16 on links this test made itself.

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct Netns {
    pub name: String,
    pub host_if: String,
    pub host_ip: Ipv4Addr,
    pub ns_ip: Ipv4Addr,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    /// Creates the namespace, the veth pair and the addresses, all links up.
    pub fn create() -> Netns {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let tag = format!("{:x}{n}", pid % 0xfffff);
        let name = format!("nwt{tag}");
        let host_if = format!("nwh{tag}");
        let ns_if = format!("nwp{tag}");
        // A /30 per namespace: third octet from the PID, fourth from the counter.
        let third = (pid % 250) as u8;
        let base = ((n % 60) * 4) as u8;
        let host_ip = Ipv4Addr::new(10, 213, third, base + 1);
        let ns_ip = Ipv4Addr::new(10, 213, third, base + 2);
        ip(&["netns", "add", &name]);
        let me = Netns {
            name: name.clone(),
            host_if: host_if.clone(),
            host_ip,
            ns_ip,
        };
        ip(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if,
        ]);
        ip(&["link", "set", &ns_if, "netns", &name]);
        ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &host_if]);
        ip(&["link", "set", &host_if, "up"]);
        ip(&[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{ns_ip}/30"),
            "dev",
            &ns_if,
        ]);
        ip(&["-n", &name, "link", "set", &ns_if, "up"]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        me
    }

    /// Cuts the link: packets in both directions are dropped from now on.
    pub fn cut(&self) {
        ip(&["link", "set", &self.host_if, "down"]);
    }

    /// Restores the link.
    pub fn heal(&self) {
        ip(&["link", "set", &self.host_if, "up"]);
        // The address route comes back with the link; nothing else to restore.
    }

    /// The prefix that runs a command inside the namespace without touching mounts.
    pub fn enter(&self) -> Vec<String> {
        vec![
            "nsenter".into(),
            format!("--net=/run/netns/{}", self.name),
            "--".into(),
        ]
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace destroys the peer, and with it the host end.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
    }
}
