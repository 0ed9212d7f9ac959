//! The object store: one global resourceVersion counter (etcd's revision), the objects, a
//! bounded history of changes for watch resumption and consistent list pages, and the open
//! watches that every committed change is fanned out to.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use tokio::sync::mpsc;

use super::errors::ApiError;
use super::resources::Resource;
use super::select::Selector;

/// `(resource plural, namespace ("" when cluster-scoped), name)`.
pub type Key = (&'static str, String, String);

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Removed.
    Deleted,
}

/// One committed change, kept in the history.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion this change produced.
    pub rv: u64,
    /// Which object.
    pub key: Key,
    /// What happened.
    pub change: Change,
    /// The object after the change (for a delete: its last state, at the delete's RV).
    pub object: Value,
    /// The object before the change.
    pub prev: Option<Value>,
}

/// One open watch.
#[derive(Debug)]
pub struct Watcher {
    /// Resource plural watched.
    pub plural: &'static str,
    /// Namespace, or None for all.
    pub namespace: Option<String>,
    /// Field and label selector.
    pub selector: Selector,
    /// Where the stream reads its events (`{"type":..,"object":..}`) from.
    pub tx: mpsc::UnboundedSender<Value>,
}

/// The store.
#[derive(Debug)]
pub struct Store {
    /// Live objects.
    pub objects: BTreeMap<Key, Value>,
    /// The global revision: the resourceVersion of the latest change.
    pub rv: u64,
    /// Recent changes, oldest first.
    pub history: VecDeque<Event>,
    /// How many changes the history keeps.
    pub history_cap: usize,
    /// Changes at or below this revision are no longer in the history.
    pub compacted: u64,
    /// Open watches.
    pub watchers: Vec<Watcher>,
    /// Existing namespaces (creates in other namespaces answer 404, as NamespaceLifecycle does).
    pub namespaces: BTreeSet<String>,
    /// While set, a create stamps this `creationTimestamp` rather than the server's clock: the
    /// history of an object a test seeds as created before the test began
    /// (`ApiServer::create_pod_created`). Nothing a client sends sets it.
    pub created_at: Option<String>,
    uid_seed: u64,
    uid_count: u64,
}

impl Store {
    /// An empty store with the namespaces every cluster has.
    pub fn new(history_cap: usize) -> Store {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()) << 40;
        Store {
            objects: BTreeMap::new(),
            rv: 1,
            history: VecDeque::new(),
            history_cap,
            compacted: 1,
            watchers: Vec::new(),
            namespaces: ["default", "kube-system", "kube-public", "kube-node-lease"]
                .into_iter()
                .map(String::from)
                .collect(),
            created_at: None,
            uid_seed: seed,
            uid_count: 0,
        }
    }

    /// A fresh UID.
    pub fn new_uid(&mut self) -> String {
        self.uid_count += 1;
        super::meta::uid(self.uid_seed, self.uid_count)
    }

    /// Commit a change: bump the revision, stamp it on the object, store, record, notify.
    pub fn commit(
        &mut self,
        key: Key,
        change: Change,
        mut object: Value,
        prev: Option<Value>,
    ) -> Value {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        match change {
            Change::Deleted => {
                self.objects.remove(&key);
            }
            Change::Added | Change::Modified => {
                self.objects.insert(key.clone(), object.clone());
            }
        }
        let event = Event {
            rv: self.rv,
            key,
            change,
            object: object.clone(),
            prev,
        };
        self.notify(&event);
        self.history.push_back(event);
        while self.history.len() > self.history_cap {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        object
    }

    /// Shrink the history now (tests use it to make a resourceVersion "too old").
    pub fn compact(&mut self, keep: usize) {
        while self.history.len() > keep {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        if keep == 0 {
            self.compacted = self.rv;
        }
    }

    fn notify(&mut self, event: &Event) {
        self.watchers.retain(|w| {
            if w.plural != event.key.0 || w.namespace.as_ref().is_some_and(|ns| *ns != event.key.1)
            {
                return !w.tx.is_closed();
            }
            match watch_event_for(w, event) {
                Some(e) => w.tx.send(e).is_ok(),
                None => !w.tx.is_closed(),
            }
        });
    }

    /// Whether `rv` is still covered by the history (all changes after it are known).
    pub fn covers(&self, rv: u64) -> bool {
        rv >= self.compacted
    }

    /// The objects of `res` (optionally in one namespace) as they were at revision `at`,
    /// reconstructed by undoing later changes from the history; borrowed, so a paged list clones
    /// only its page.
    pub fn snapshot(
        &self,
        res: &Resource,
        namespace: Option<&str>,
        at: u64,
    ) -> Result<Vec<&Value>, ApiError> {
        if !self.covers(at) {
            return Err(ApiError::expired(format!(
                "too old resource version: {at} ({})",
                self.compacted + 1
            )));
        }
        let in_scope = |k: &Key| k.0 == res.plural && namespace.is_none_or(|ns| k.1 == ns);
        let mut objs: BTreeMap<&Key, &Value> =
            self.objects.iter().filter(|(k, _)| in_scope(k)).collect();
        for e in self.history.iter().rev().take_while(|e| e.rv > at) {
            if !in_scope(&e.key) {
                continue;
            }
            match (&e.change, &e.prev) {
                (Change::Added, _) => {
                    objs.remove(&e.key);
                }
                (_, Some(prev)) => {
                    objs.insert(&e.key, prev);
                }
                (_, None) => {}
            }
        }
        Ok(objs.into_values().collect())
    }
}

/// The watch event a watcher sees for a change, following the watch cache: an object that
/// starts matching the selector is ADDED, one that stops matching is DELETED.
pub fn watch_event_for(w: &Watcher, event: &Event) -> Option<Value> {
    let new_matches = event.change != Change::Deleted && w.selector.matches(&event.object);
    let old_matches = match event.change {
        Change::Added => false,
        Change::Modified => event.prev.as_ref().is_some_and(|p| w.selector.matches(p)),
        Change::Deleted => w.selector.matches(&event.object),
    };
    let (kind, object) = match (old_matches, new_matches) {
        (false, true) if event.change == Change::Added => ("ADDED", event.object.clone()),
        (false, true) => ("ADDED", event.object.clone()),
        (true, true) => ("MODIFIED", event.object.clone()),
        (true, false) => {
            let mut o = if event.change == Change::Deleted {
                event.object.clone()
            } else {
                event.prev.clone().unwrap_or(Value::Null)
            };
            o["metadata"]["resourceVersion"] = json!(event.rv.to_string());
            ("DELETED", o)
        }
        (false, false) => return None,
    };
    Some(json!({ "type": kind, "object": object }))
}
