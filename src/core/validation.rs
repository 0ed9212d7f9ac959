//! API-server validation of taints and tolerations (SEMANTICS §8), with field paths. Pure.
//! TO BE IMPLEMENTED (helper B).
