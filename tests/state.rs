//! Durable state: written atomically and privately, read back identical, a corrupt file moved
//! aside with nothing inferred from it, a newer release's file left exactly as it is.

mod support;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use nodewarden::core::clock::Scale;
use nodewarden::core::event::PendingEvent;
use nodewarden::core::fence_plan::FencePod;
use nodewarden::core::qos::QosClass;
use nodewarden::core::resources::Effective;
use nodewarden::core::taint::{Effect, Toleration};
use nodewarden::state::{
    CONTACT_FILE, Loaded, STATE_FILE, State, StateError, StoredCondition, StoredNode, StoredPeer,
    StoredPod, StoredQuorum, StoredTaint, VERSION, contact_scale, format_time, load, parse_time,
    save, save_contact,
};

fn sample_state() -> State {
    let pod = FencePod {
        uid: "9d3c".into(),
        namespace: "shop".into(),
        name: "cart-7".into(),
        tolerations: vec![
            Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute))
                .with_seconds(300),
            Toleration::equal("dedicated", "gpu", None),
        ],
        termination_grace_seconds: 45,
        owner_kind: Some("ReplicaSet".into()),
        static_or_mirror: false,
        qos: QosClass::Guaranteed,
        opted_out: false,
        terminal: false,
        created: parse_time("2027-01-15T07:58:30Z"),
    };
    let resources = Effective {
        requests: [("cpu", "250m"), ("nvidia.com/gpu", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.parse().expect("quantity")))
            .collect(),
        limits: [("memory", "1Gi")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.parse().expect("quantity")))
            .collect(),
    };
    State {
        version: VERSION,
        node: "edge-1".into(),
        last_contact: Some(format_time(
            SystemTime::UNIX_EPOCH + Duration::new(1_800_000_000, 123_456_789),
        )),
        pods: vec![StoredPod { pod, resources }],
        fenced: vec!["9d3c".into()],
        pending_events: vec![PendingEvent {
            reason: "NodeHasDiskPressure".into(),
            message: "Node edge-1 status is now: NodeHasDiskPressure".into(),
            warning: false,
            at: parse_time("2027-01-15T08:00:00Z").expect("time"),
        }],
        node_status: Some(StoredNode {
            conditions: vec![StoredCondition {
                type_: "DiskPressure".into(),
                status: "True".into(),
                reason: "KubeletHasDiskPressure".into(),
                message: "kubelet has disk pressure".into(),
                last_transition_time: Some("2027-01-15T07:59:00Z".into()),
            }],
            taints: vec![
                StoredTaint {
                    key: "node.kubernetes.io/disk-pressure".into(),
                    value: String::new(),
                    effect: "NoSchedule".into(),
                    time_added: None,
                },
                StoredTaint {
                    key: "node.kubernetes.io/unreachable".into(),
                    value: String::new(),
                    effect: "NoExecute".into(),
                    time_added: Some("2027-01-15T07:58:30Z".into()),
                },
            ],
            allocatable: [("cpu".to_string(), "2".to_string())].into(),
            swapped_from: None,
        }),
        condition_events: vec![PendingEvent {
            reason: "NodeHasNoDiskPressure".into(),
            message: "Node edge-1 status is now: NodeHasNoDiskPressure".into(),
            warning: false,
            at: parse_time("2027-01-15T08:01:00.000000001Z").expect("time"),
        }],
        decided: vec![StoredCondition {
            type_: "DiskPressure".into(),
            status: "False".into(),
            reason: "KubeletHasNoDiskPressure".into(),
            message: "kubelet has no disk pressure".into(),
            last_transition_time: Some("2027-01-15T08:01:00.000000001Z".into()),
        }],
        zone: Some("site-a".into()),
        peers: vec![StoredPeer {
            node: "edge-2".into(),
            address: "[fd00::2]:9843".into(),
            zone: "site-a".into(),
        }],
        quorum: Some(StoredQuorum {
            verdict: "hold".into(),
            reason: "3 of 5 node(s) in zone site-a are cut off".into(),
            held_at: Some("2027-01-15T08:02:00.5Z".into()),
            held_from: Some("2027-01-15T08:01:30.25Z".into()),
        }),
        cut_off_since: None,
        counted_from: None,
        wall_scale: None,
        peers_read: false,
        unanswered: None,
    }
}

#[test]
fn state_round_trips_exactly_including_the_nanosecond_anchor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("nodewarden");
    let state = sample_state();
    save(&state_dir, &state).expect("save");
    let meta = std::fs::metadata(&state_dir).expect("dir");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o700,
        "state dir is private"
    );
    match load(&state_dir, None) {
        Loaded::Found(back) => {
            assert_eq!(*back, state);
            let pod = &back.pods[0].pod;
            let resources = &back.pods[0].resources;
            assert_eq!(resources.requests["cpu"].to_string(), "250m");
            assert_eq!(resources.limits["memory"].to_string(), "1Gi");
            assert_eq!(pod.tolerations[0].toleration_seconds, Some(300));
            assert_eq!(
                back.last_contact.as_deref().and_then(parse_time),
                Some(SystemTime::UNIX_EPOCH + Duration::new(1_800_000_000, 123_456_789))
            );
        }
        other => panic!("{other:?}"),
    }
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(&state_dir)
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![STATE_FILE.to_string()]);
}

/// The contact a relapse counts from is kept with the partition (version 8), and read back: a
/// restart resumes the relapse from it (`Link::with_unproven_return`).
#[test]
fn the_contact_a_relapse_counts_from_round_trips_with_the_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("nodewarden");
    let mut state = sample_state();
    state.cut_off_since = Some("2027-01-15T08:03:00Z".into());
    state.counted_from = Some("2027-01-15T07:57:00.25Z".into());
    let text = saved_text(&state_dir, &state);
    assert!(
        text.contains("\"countedFrom\": \"2027-01-15T07:57:00.25Z\""),
        "{text}"
    );
    assert_eq!(found(&state_dir), state);
    // Without a relapse nothing is written for it.
    state.counted_from = None;
    let text = saved_text(&state_dir, &state);
    assert!(!text.contains("countedFrom"), "{text}");
}

/// Saves `state` into `dir` and gives the file's text.
fn saved_text(dir: &Path, state: &State) -> String {
    save(dir, state).expect("save");
    std::fs::read_to_string(dir.join(STATE_FILE)).expect("read")
}

/// The state `load` finds in `dir`.
fn found(dir: &Path) -> State {
    match load(dir, None) {
        Loaded::Found(back) => *back,
        other => panic!("{other:?}"),
    }
}

/// Whether the peers' reads for this node ever came back is kept (version 10), and read back: a
/// restart's SIGTERMs wait for their reads from its first round. Absent while false, so a file
/// of a run whose peers never read for it looks as an earlier version's did.
#[test]
fn whether_the_peers_ever_read_for_this_node_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("nodewarden");
    let mut state = sample_state();
    state.peers_read = true;
    let text = saved_text(&state_dir, &state);
    assert!(text.contains("\"peersRead\": true"), "{text}");
    assert_eq!(found(&state_dir), state);
    state.peers_read = false;
    let text = saved_text(&state_dir, &state);
    assert!(!text.contains("peersRead"), "{text}");
    assert!(!found(&state_dir).peers_read);
}

#[test]
fn the_unreachable_taint_is_found_with_or_without_its_time() {
    let mut node = sample_state().node_status.expect("a node");
    assert!(node.unreachable_tainted());
    assert_eq!(node.unreachable_added(), Some("2027-01-15T07:58:30Z"));
    // Added by hand, without `timeAdded`: the Node is tainted all the same.
    node.taints[1].time_added = None;
    assert!(node.unreachable_tainted());
    assert_eq!(node.unreachable_added(), None);
    // Another effect of the same key is not the NoExecute taint.
    node.taints[1].effect = "NoSchedule".into();
    assert!(!node.unreachable_tainted());
    assert!(!node.controller_tainted());
}

/// The not-ready NoExecute taint, kept with its `timeAdded` (docs/fence.md §3): the fence counts
/// each pod's timer for it, and the quorum counts the node as seen tainted.
#[test]
fn the_not_ready_taint_is_found_with_its_time() {
    let mut node = sample_state().node_status.expect("a node");
    assert_eq!(node.not_ready_added(), None);
    node.taints[1].key = "node.kubernetes.io/not-ready".into();
    assert!(!node.unreachable_tainted());
    assert!(node.controller_tainted());
    assert_eq!(node.not_ready_added(), Some("2027-01-15T07:58:30Z"));
    assert_eq!(node.unreachable_added(), None);
    // On the monotonic scale of a moment read 90 s after it.
    let wall = std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let now = nodewarden::core::clock::Moment {
        mono: Duration::from_secs(5_000),
        wall,
    };
    node.taints[1].time_added =
        Some(humantime::format_rfc3339(wall - Duration::from_secs(90)).to_string());
    assert_eq!(
        node.not_ready_added_at(now),
        Some(Duration::from_secs(4_910))
    );
    // Another effect is not the controller's.
    node.taints[1].effect = "NoSchedule".into();
    assert!(!node.controller_tainted());
    assert_eq!(node.not_ready_added(), None);
}

/// The first taint of a run the controller swapped is carried from view to view while either
/// taint stays on, and dropped with the last of them (docs/semantics.md §4.3), so its timers are
/// counted: unreachable then not-ready (the kubelet posted Ready=False), and back.
#[test]
fn the_first_taint_of_a_swapped_run_is_carried_until_the_run_ends() {
    let base = sample_state().node_status.expect("a node");
    let with = |key: &str, added: &str| {
        let mut n = base.clone();
        n.taints[1].key = key.into();
        n.taints[1].time_added = Some(added.into());
        n
    };
    let unreachable = with("node.kubernetes.io/unreachable", "2027-01-15T07:58:30Z");
    let mut swapped = with("node.kubernetes.io/not-ready", "2027-01-15T07:59:10Z");
    swapped.carry_run(Some(&unreachable));
    let first = swapped
        .swapped_from
        .clone()
        .expect("the unreachable taint first");
    assert_eq!(first.key, "node.kubernetes.io/unreachable");
    assert_eq!(first.time_added.as_deref(), Some("2027-01-15T07:58:30Z"));
    let wall = humantime::parse_rfc3339("2027-01-15T08:00:00Z").expect("time");
    let now = nodewarden::core::clock::Moment {
        mono: Duration::from_secs(5_000),
        wall,
    };
    assert_eq!(
        swapped.swapped_from_at(now),
        Some((Duration::from_secs(4_910), false))
    );
    // Swapped back: the run's first stays.
    let mut back = with("node.kubernetes.io/unreachable", "2027-01-15T07:59:40Z");
    back.carry_run(Some(&swapped));
    assert_eq!(back.swapped_from, Some(first.clone()));
    // The same taint seen again: no swap, nothing carried.
    let mut again = unreachable.clone();
    again.carry_run(Some(&unreachable));
    assert_eq!(again.swapped_from, None);
    // A view without either ends the run.
    let mut gone = base.clone();
    gone.taints.truncate(1);
    gone.carry_run(Some(&back));
    assert_eq!(gone.swapped_from, None);
    assert!(!gone.controller_tainted());
    // A first view (no previous) carries nothing.
    let mut fresh = with("node.kubernetes.io/not-ready", "2027-01-15T07:59:10Z");
    fresh.carry_run(None);
    assert_eq!(fresh.swapped_from, None);
    // Kept in the state file.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut state = sample_state();
    state.node_status = Some(swapped.clone());
    save(dir.path(), &state).expect("save");
    match load(dir.path(), None) {
        Loaded::Found(back) => assert_eq!(back.node_status, Some(swapped)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_version_1_file_is_read_with_no_node_and_no_resources() {
    // What the previous release wrote: a restart after an upgrade mid-partition keeps its
    // deadlines.
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = r#"{"version": 1, "node": "edge-1", "lastContact": "2027-01-15T08:00:00.5Z",
        "pods": [{"uid": "u1", "namespace": "shop", "name": "cart", "tolerations": [],
                  "terminationGracePeriodSeconds": 30, "ownerKind": "ReplicaSet",
                  "staticOrMirror": false, "qosClass": "BestEffort", "optedOut": false,
                  "terminal": false}],
        "fenced": ["u1"], "pendingEvents": []}"#;
    std::fs::write(dir.path().join(STATE_FILE), v1).expect("write");
    match load(dir.path(), None) {
        Loaded::Found(s) => {
            assert_eq!(s.version, 1);
            assert_eq!(s.fenced, vec!["u1".to_string()]);
            assert_eq!(s.pods.len(), 1, "the pod is read");
            assert_eq!(s.pods[0].pod.uid, "u1");
            assert_eq!(s.pods[0].resources, Effective::default());
            assert_eq!(s.node_status, None);
            assert!(s.condition_events.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_file_is_a_first_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(matches!(load(dir.path(), None), Loaded::Missing));
}

#[test]
fn a_corrupt_file_is_moved_aside_and_nothing_is_loaded() {
    for garbage in [
        &b"{\"version\": 1, \"node\": \"x\""[..],
        &b"not json at all"[..],
        // Older than any release wrote: not a newer release's, so nothing to keep it for.
        &b"{\"version\": 0, \"node\": \"x\", \"lastContact\": null, \"pods\": [], \"fenced\": [], \"pendingEvents\": []}"[..],
        // A newer version, but not JSON to the end: unreadable, so moved aside (kept) too.
        &b"{\"version\": 99, \"node\": \"x\""[..],
        &b"{\"version\": 1, \"node\": \"x\", \"lastContact\": null, \"pods\": [], \"fenced\": [], \"pendingEvents\": [], \"extra\": 1}"[..],
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(STATE_FILE), garbage).expect("write");
        match load(dir.path(), None) {
            Loaded::Corrupt { error, moved_to } => {
                assert!(error.contains(STATE_FILE), "{error}");
                let aside = moved_to.expect("moved aside");
                assert_eq!(std::fs::read(&aside).expect("kept"), garbage, "nothing lost");
                assert!(!dir.path().join(STATE_FILE).exists());
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The sample state saved in `dir`, its file's path, and the file as JSON to edit.
fn saved_as_json(dir: &Path) -> (State, std::path::PathBuf, serde_json::Value) {
    let state = sample_state();
    save(dir, &state).expect("save");
    let path = dir.join(STATE_FILE);
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    // The pod's creation time is written as the API writes times, to the nanosecond.
    assert_eq!(
        file["pods"][0]["creationTimestamp"],
        "2027-01-15T07:58:30.000000000Z"
    );
    (state, path, file)
}

/// An entry no build writes is refused on its own: that pod is not used (so never fenced), and
/// the rest of the file stands.
#[test]
fn a_stored_pod_this_build_could_not_have_written_is_not_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (state, path, mut file) = saved_as_json(dir.path());
    let good = file["pods"][0].clone();
    let unreadable = |uid: &str, at: &str, word: serde_json::Value| {
        let mut p = good.clone();
        p["uid"] = uid.into();
        p.pointer_mut(at).map(|v| *v = word).expect(at);
        p
    };
    let pods = file["pods"].as_array_mut().expect("pods");
    // `Gt` and `Lt` are stored since the comparison operators (issue 27); no build writes these.
    pods.push(unreadable(
        "u-between",
        "/tolerations/0/operator",
        "Between".into(),
    ));
    // The API reads an empty operator as `Equal`, but no build writes it empty.
    pods.push(unreadable("u-empty", "/tolerations/0/operator", "".into()));
    pods.push(unreadable(
        "u-effect",
        "/tolerations/0/effect",
        "NoEntry".into(),
    ));
    pods.push(unreadable("u-qos", "/qosClass", "Platinum".into()));
    pods.push(unreadable(
        "u-grace",
        "/terminationGracePeriodSeconds",
        "45".into(),
    ));
    // A creation time is RFC 3339 (since the forty-fourth session); null is none.
    pods.push(unreadable(
        "u-created",
        "/creationTimestamp",
        "yesterday".into(),
    ));
    let mut extra = good.clone();
    extra["uid"] = "u-extra".into();
    extra["priority"] = 7.into();
    pods.push(extra);
    file["fenced"] = serde_json::json!(["9d3c", "u-between", "u-qos"]);
    std::fs::write(&path, serde_json::to_vec_pretty(&file).expect("encode")).expect("write");
    match load(dir.path(), None) {
        Loaded::Found(back) => {
            let uids: Vec<&str> = back.pods.iter().map(|p| p.pod.uid.as_str()).collect();
            assert_eq!(uids, ["9d3c"], "only the pod this build wrote is used");
            assert_eq!(back.pods, state.pods);
            assert_eq!(
                back.fenced,
                ["9d3c", "u-between", "u-qos"],
                "the rest stands"
            );
            assert_eq!(back.pending_events, state.pending_events);
        }
        other => panic!("{other:?}"),
    }
}

/// Held Events are parsed once, when the file is read: one whose time no build writes is not
/// sent (it cannot say when it happened), the others are.
#[test]
fn a_held_event_with_a_time_this_build_does_not_write_is_left_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (state, path, mut file) = saved_as_json(dir.path());
    let mut late = file["conditionEvents"][0].clone();
    late["at"] = "yesterday".into();
    file["conditionEvents"]
        .as_array_mut()
        .expect("events")
        .insert(0, late);
    file["pendingEvents"][0]["at"] = "2027-13-45T08:00:00Z".into();
    std::fs::write(&path, serde_json::to_vec_pretty(&file).expect("encode")).expect("write");
    match load(dir.path(), None) {
        Loaded::Found(back) => {
            assert_eq!(back.condition_events, state.condition_events);
            assert!(back.pending_events.is_empty(), "{:?}", back.pending_events);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn saving_replaces_the_previous_state_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut state = sample_state();
    save(dir.path(), &state).expect("save");
    state.fenced.clear();
    state.pods.clear();
    save(dir.path(), &state).expect("save again");
    match load(dir.path(), None) {
        Loaded::Found(back) => assert_eq!(*back, state),
        other => panic!("{other:?}"),
    }
}

/// A directory holding the sample state, and that state's last contact.
fn saved_sample() -> (tempfile::TempDir, SystemTime) {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = sample_state();
    let in_state = state
        .last_contact
        .as_deref()
        .and_then(parse_time)
        .expect("contact");
    save(dir.path(), &state).expect("save");
    (dir, in_state)
}

/// What `load` finds in `dir`: its last contact and the contact file's wait.
fn contact_and_wait(dir: &Path) -> (Option<SystemTime>, Option<Duration>) {
    match load(dir, None) {
        Loaded::Found(s) => (s.last_contact.as_deref().and_then(parse_time), s.unanswered),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_later_of_the_state_files_and_the_contact_files_last_contact_wins() {
    let (dir, in_state) = saved_sample();
    let contact_of = |dir: &Path| contact_and_wait(dir).0;
    // Renewals since the last full write: the small file is later and wins, to the nanosecond.
    let later = in_state + Duration::new(12, 345);
    save_contact(dir.path(), later, None, None).expect("save contact");
    assert_eq!(contact_of(dir.path()), Some(later));
    // An older contact file (the full state was written after it) changes nothing.
    save_contact(dir.path(), in_state - Duration::from_secs(60), None, None).expect("save contact");
    assert_eq!(contact_of(dir.path()), Some(in_state));
    // Nor does one that is not a time: the state file's own stands.
    std::fs::write(dir.path().join(CONTACT_FILE), "yesterday\n").expect("write");
    assert_eq!(contact_of(dir.path()), Some(in_state));
}

/// The contact file's second line: how long the agent waited for an answer past that contact
/// (`core::fencing::Link::unanswered`). It is read with the contact it follows, and only when
/// that contact is the one `load` takes; a line this build does not write leaves the contact
/// standing and the wait unread; the scale still reads.
#[test]
fn a_wait_without_an_answer_is_read_with_the_contact_it_counts_from() {
    let (dir, in_state) = saved_sample();
    let read = contact_and_wait;
    let waited = Duration::from_millis(5_450);
    let boot = 0x6b0f_d2c0_a1b2_4e6f_9c3d_2e1f_00aa_11bb;
    let scale = Scale::of(boot, in_state, Duration::from_secs(1_000)).expect("scale");
    // Written with the state's own contact (no renewal answered since): both read.
    save_contact(dir.path(), in_state, Some(scale), Some(waited)).expect("save contact");
    let text = std::fs::read_to_string(dir.path().join(CONTACT_FILE)).expect("contact file");
    assert_eq!(
        text,
        format!(
            "{} {}\nunanswered 5450ms\n",
            format_time(in_state),
            scale.to_text()
        )
    );
    assert_eq!(read(dir.path()), (Some(in_state), Some(waited)));
    assert_eq!(contact_scale(dir.path()), Some(scale));
    // A later contact in the contact file: the wait counts from it.
    let later = in_state + Duration::from_secs(12);
    save_contact(dir.path(), later, None, Some(waited)).expect("save contact");
    assert_eq!(read(dir.path()), (Some(later), Some(waited)));
    // The state written since with a later contact than the contact file's: the wait counted
    // from an older contact and says nothing of the one read.
    save_contact(
        dir.path(),
        in_state - Duration::from_secs(1),
        None,
        Some(waited),
    )
    .expect("save contact");
    assert_eq!(read(dir.path()), (Some(in_state), None));
    // The same contact a few microseconds earlier (each file's scale measured as it was
    // written): the same contact, the wait read, the state's time kept.
    save_contact(
        dir.path(),
        in_state - Duration::from_micros(7),
        None,
        Some(waited),
    )
    .expect("save contact");
    assert_eq!(read(dir.path()), (Some(in_state), Some(waited)));
    // No wait written: none read.
    save_contact(dir.path(), later, None, None).expect("save contact");
    assert_eq!(read(dir.path()), (Some(later), None));
    // A second line this build does not write: the contact stands, the wait is not guessed.
    for bad in [
        "unanswered 5.4s",
        "unanswered -5ms",
        "unanswered ms",
        "waited 5450ms",
        "unanswered 99999999999999999999999ms",
    ] {
        std::fs::write(
            dir.path().join(CONTACT_FILE),
            format!("{}\n{bad}\n", format_time(later)),
        )
        .expect("write");
        assert_eq!(read(dir.path()), (Some(later), None), "{bad:?}");
    }
}

/// The wall clock stepped back an hour between two runs of the same boot: every time a file holds
/// reads as an hour later than it was, on the new run's clock. Carried through the boot clock
/// (`core::clock::Scale`), each comes back to the instant it named; from another boot, or from a
/// file written without a scale, each is taken as it reads (issue 22, seed 0x14e8).
#[test]
fn the_times_of_an_earlier_run_are_carried_past_a_wall_step_between_the_runs() {
    let boot = 0x6b0f_d2c0_a1b2_4e6f_9c3d_2e1f_00aa_11bb;
    let hour = Duration::from_secs(3_600);
    let mut state = sample_state();
    let written = state
        .last_contact
        .as_deref()
        .and_then(parse_time)
        .expect("contact");
    state.cut_off_since = Some(format_time(written + Duration::from_secs(20)));
    state.quorum = Some(StoredQuorum {
        verdict: "hold".into(),
        reason: "peers reach the API server".into(),
        held_at: Some(format_time(written + Duration::from_secs(25))),
        held_from: Some(format_time(written + Duration::from_secs(22))),
    });
    // The writing run: booted 1,000 s before `written` (on its own wall scale).
    let then = Scale::of(boot, written, Duration::from_secs(1_000)).expect("scale");
    state.wall_scale = Some(then.to_text());
    let dir = tempfile::tempdir().expect("tempdir");
    save(dir.path(), &state).expect("save");
    let contact = written + Duration::from_secs(30);
    save_contact(dir.path(), contact, Some(then), None).expect("save contact");
    let head = std::fs::read_to_string(dir.path().join(CONTACT_FILE)).expect("contact file");
    assert_eq!(
        head,
        format!("{} {}\n", format_time(contact), then.to_text())
    );

    // This run reads its wall clock an hour behind the true time.
    let now = Scale {
        wall_minus_boot_ns: then.wall_minus_boot_ns - 3_600_000_000_000,
        ..then
    };
    let times = |to: Option<Scale>| match load(dir.path(), to) {
        Loaded::Found(s) => (
            s.last_contact.as_deref().and_then(parse_time),
            s.cut_off_since.as_deref().and_then(parse_time),
            s.quorum
                .as_ref()
                .and_then(|q| q.held_at.as_deref())
                .and_then(parse_time),
            s.wall_scale,
            s.quorum
                .and_then(|q| q.held_from)
                .as_deref()
                .and_then(parse_time),
        ),
        other => panic!("{other:?}"),
    };
    let (contact_now, since, held, scale, held_from) = times(Some(now));
    assert_eq!(
        contact_now,
        Some(contact - hour),
        "the contact file's time, carried"
    );
    assert_eq!(since, Some(written + Duration::from_secs(20) - hour));
    assert_eq!(held, Some(written + Duration::from_secs(25) - hour));
    assert_eq!(held_from, Some(written + Duration::from_secs(22) - hour));
    assert_eq!(
        scale,
        Some(now.to_text()),
        "the loaded times are on this run's scale"
    );

    // Another boot: nothing relates the clocks, the times read as written.
    let other_boot = Scale { boot: 7, ..now };
    let (contact_now, since, held, _, _) = times(Some(other_boot));
    assert_eq!(contact_now, Some(contact));
    assert_eq!(since, Some(written + Duration::from_secs(20)));
    assert_eq!(held, Some(written + Duration::from_secs(25)));
    // A reader that cannot read its boot clock takes them as they read too.
    assert_eq!(times(None).0, Some(contact));

    // A contact file of an earlier build (the time alone) is still read, as it reads.
    std::fs::write(
        dir.path().join(CONTACT_FILE),
        format!("{}\n", format_time(contact)),
    )
    .expect("write");
    assert_eq!(times(Some(now)).0, Some(contact));
    // One whose scale is not this build's is ignored (and logged): the state file's contact,
    // carried, stands.
    std::fs::write(
        dir.path().join(CONTACT_FILE),
        format!("{} 6b0fd2c0 12\n", format_time(contact)),
    )
    .expect("write");
    assert_eq!(times(Some(now)).0, Some(written - hour));
}

/// What a newer release might write: a version this build does not know, fields it has never
/// heard of, and the last contact beside it.
const NEWER: &str = r#"{"version": 99, "node": "edge-1", "lastContact": "2027-01-15T08:00:00Z",
    "pods": [{"uid": "u1", "futureField": {"deadline": "2027-01-15T08:05:00Z"}}],
    "heldEvents": [{"reason": "X"}]}"#;
const NEWER_CONTACT: &str = "2027-01-15T08:00:03Z\n";

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_newer_releases_state_is_kept_byte_for_byte_and_nothing_overwrites_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (state_path, contact_path) = (dir.path().join(STATE_FILE), dir.path().join(CONTACT_FILE));
    std::fs::write(&state_path, NEWER).expect("write");
    std::fs::write(&contact_path, NEWER_CONTACT).expect("write");
    let untouched = || {
        assert_eq!(std::fs::read_to_string(&state_path).expect("state"), NEWER);
        assert_eq!(
            std::fs::read_to_string(&contact_path).expect("contact"),
            NEWER_CONTACT
        );
        assert_eq!(
            names_in(dir.path()),
            vec![CONTACT_FILE, STATE_FILE],
            "nothing moved or added"
        );
    };

    match load(dir.path(), None) {
        Loaded::Newer { path, version } => {
            assert_eq!((path, version), (state_path.clone(), 99));
        }
        other => panic!("{other:?}"),
    }
    untouched();

    // The agent's start-up: nothing is resumed from it, and it stays.
    assert!(nodewarden::agent::fence_task::load_state(dir.path(), "edge-1", None).is_none());
    untouched();

    // Saving the state or the contact is refused, with a message that says why.
    let refused = save(dir.path(), &sample_state()).expect_err("refused");
    assert!(
        matches!(refused, StateError::Newer { version: 99, .. }),
        "{refused:?}"
    );
    let shown = refused.to_string();
    assert!(
        shown.contains("format version 99") && shown.contains(&format!("this build's {VERSION}")),
        "{shown}"
    );
    let later = SystemTime::now();
    assert!(matches!(
        save_contact(dir.path(), later, None, None),
        Err(StateError::Newer { .. })
    ));
    untouched();
}

#[test]
fn a_newer_version_is_refused_whatever_the_files_layout() {
    // As this build writes it (the version first, pretty-printed) and any other way JSON allows.
    let newer = format!(
        "{{\n  \"version\": {},\n  \"node\": \"edge-1\"\n}}",
        VERSION + 1
    );
    let reordered = format!("{{\"node\":\"edge-1\",\"version\":{}}}", VERSION + 1);
    let spaced = format!("  {{ \"version\" : {} }}", VERSION + 1);
    for text in [newer, reordered, spaced] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(STATE_FILE), &text).expect("write");
        assert!(
            matches!(
                save(dir.path(), &sample_state()),
                Err(StateError::Newer { .. })
            ),
            "{text}"
        );
        assert!(
            matches!(load(dir.path(), None), Loaded::Newer { .. }),
            "{text}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(STATE_FILE)).expect("kept"),
            text
        );
    }
}

#[test]
fn an_older_or_current_version_is_overwritten_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join(STATE_FILE),
        r#"{"version": 1, "node": "edge-1", "lastContact": null, "pods": [], "fenced": [], "pendingEvents": []}"#,
    )
    .expect("write");
    let state = sample_state();
    save(dir.path(), &state).expect("an upgrade rewrites a version 1 file");
    save(dir.path(), &state).expect("and its own");
    save_contact(dir.path(), SystemTime::now(), None, None).expect("contact");
    assert!(matches!(load(dir.path(), None), Loaded::Found(_)));
}

/// `nodewarden status` on a newer release's state says so, fails, and leaves every file as it
/// was (it used to move the file aside, and the next agent start wrote a fresh one).
#[test]
fn status_on_a_newer_releases_state_says_so_and_keeps_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("state");
    std::fs::create_dir(&state_dir).expect("mkdir");
    std::fs::write(state_dir.join(STATE_FILE), NEWER).expect("write");
    std::fs::write(state_dir.join(CONTACT_FILE), NEWER_CONTACT).expect("write");
    let config = support::write_config(
        dir.path(),
        &format!(
            "nodeName = \"edge-1\"\nstateDirectory = \"{}\"\n",
            state_dir.display()
        ),
    );
    let ran = support::command::run(
        std::process::Command::new(support::agent_bin())
            .args(["status", "--config"])
            .arg(&config),
        Duration::from_secs(30),
    );
    assert_eq!(ran.code, Some(1), "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains(&format!(
            "state file {} was written by a newer nodewarden (format version 99",
            state_dir.join(STATE_FILE).display()
        )),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_to_string(state_dir.join(STATE_FILE)).expect("kept"),
        NEWER
    );
    assert_eq!(names_in(&state_dir), vec![CONTACT_FILE, STATE_FILE]);
}

/// A state "file" that never ends (a symlink to `/dev/zero`) is unusable like a corrupt one:
/// reported with the limit, and moved aside, in seconds and bounded memory (`status` runs capped
/// at 512 MiB of address space).
#[test]
fn a_state_file_that_never_ends_is_unusable_in_bounded_memory_and_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("state");
    std::fs::create_dir(&state_dir).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", state_dir.join(STATE_FILE)).expect("symlink");
    let config = support::write_config(
        dir.path(),
        &format!(
            "nodeName = \"edge-1\"\nstateDirectory = \"{}\"\n",
            state_dir.display()
        ),
    );
    let started = Instant::now();
    let ran = support::command::run(
        support::command::memory_capped(&support::agent_bin(), 512)
            .args(["status", "--config"])
            .arg(&config),
        Duration::from_secs(30),
    );
    let took = started.elapsed();
    assert_eq!(ran.code, Some(1), "{}\n{}", ran.stdout, ran.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        ran.stderr
            .contains("longer than 67108864 bytes, the limit for a state file"),
        "{}",
        ran.stderr
    );
    assert!(!state_dir.join(STATE_FILE).exists(), "moved aside");
}

/// Set in the child that [`state_files_are_private_whatever_the_umask`] starts under umask 000.
const UMASK_CHILD: &str = "NODEWARDEN_TEST_UMASK_CHILD";

/// State files are 0600 and a directory the agent creates is 0700 even under umask 000 — also
/// when a temporary file of the same name, left world-readable by a crash, is in the way. The
/// umask is process-wide, so the writing happens in a child (this test binary again, run by a
/// shell that sets umask 000 first); the parent checks the modes.
#[test]
fn state_files_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    if let Some(root) = std::env::var_os(UMASK_CHILD) {
        let root = Path::new(&root);
        // The umask can only be read by setting it: set it to what it must already be.
        let before = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
        assert_eq!(before.bits(), 0, "the child runs under umask 000");
        save(&root.join("fresh"), &sample_state()).expect("save");
        save_contact(&root.join("fresh"), SystemTime::now(), None, None).expect("save contact");
        let stale = root.join("stale");
        std::fs::write(
            stale.join(format!(".{STATE_FILE}.tmp-{}", std::process::id())),
            "left by a crash",
        )
        .expect("stale temp file");
        save(&stale, &sample_state()).expect("save over a stale temp file");
        return;
    }
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(root.path().join("stale")).expect("mkdir");
    let exe = std::env::current_exe().expect("test binary");
    let ran = support::command::run(
        std::process::Command::new("sh")
            .args(["-c", "umask 000 && exec \"$0\" \"$@\""])
            .arg(exe)
            .args([
                "--exact",
                "state_files_are_private_whatever_the_umask",
                "--nocapture",
            ])
            .env(UMASK_CHILD, root.path()),
        Duration::from_secs(60),
    );
    assert!(ran.ok, "child failed:\n{}\n{}", ran.stdout, ran.stderr);
    let mode = |p: &Path| {
        let bits = std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        format!("{bits:04o}")
    };
    let fresh = root.path().join("fresh");
    assert_eq!(mode(&fresh), "0700", "the directory created");
    assert_eq!(mode(&fresh.join(STATE_FILE)), "0600");
    assert_eq!(mode(&fresh.join(CONTACT_FILE)), "0600");
    assert_eq!(mode(&root.path().join("stale").join(STATE_FILE)), "0600");
    assert_eq!(
        names_in(&root.path().join("stale")),
        vec![STATE_FILE],
        "the temp file became it"
    );
}

/// A file written by an earlier build (tests/data/state/README.md) loads, and writing what was
/// loaded gives the very same bytes: the on-disk form did not move.
#[test]
fn a_file_an_earlier_build_wrote_loads_and_is_written_back_byte_for_byte() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/state/v4.json");
    let bytes = std::fs::read(&fixture).expect("fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(STATE_FILE), &bytes).expect("write");
    let Loaded::Found(state) = load(dir.path(), None) else {
        panic!("{} does not load", fixture.display());
    };
    assert_eq!(state.pods.len(), 3, "every pod is read");
    let again = tempfile::tempdir().expect("tempdir");
    save(again.path(), &state).expect("save");
    let written = std::fs::read(again.path().join(STATE_FILE)).expect("read");
    assert!(
        written == bytes,
        "written back differently:\n{}",
        String::from_utf8_lossy(&written)
    );
}

mod contact_file_never_guesses {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever follows the contact's line, `load` keeps the contact and reads a wait only
        /// from exactly `unanswered <digits>ms`.
        #[test]
        fn a_second_line_is_a_wait_or_nothing(
            line in prop_oneof![
                ".{0,40}",
                "unanswered [0-9]{1,6}ms",
                "unanswered [0-9 .a-z-]{0,8}(ms|s)?",
            ]
        ) {
            let (dir, in_state) = saved_sample();
            let later = in_state + Duration::from_secs(5);
            std::fs::write(
                dir.path().join(CONTACT_FILE),
                format!("{}\n{line}\n", format_time(later)),
            )
            .expect("write");
            let (contact, unanswered) = contact_and_wait(dir.path());
            let exact = line
                .trim()
                .strip_prefix("unanswered ")
                .and_then(|r| r.strip_suffix("ms"))
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u64>().ok());
            if line.trim().is_empty() {
                // A blank second line is no second line: the contact and no wait.
                prop_assert_eq!(unanswered, None);
            } else {
                prop_assert_eq!(unanswered, exact.map(Duration::from_millis));
            }
            prop_assert_eq!(contact, Some(later));
        }
    }
}
