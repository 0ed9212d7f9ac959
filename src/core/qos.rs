//! QoS class (SEMANTICS §11) and pod cgroup names (§12). Pure. TO BE IMPLEMENTED (helper B).
