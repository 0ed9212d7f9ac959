//! Ordering of watch events by `resourceVersion` (docs/semantics.md §8; KEP-5504, GA in Kubernetes
//! 1.35: a resourceVersion is a positive decimal integer without leading zeros, and two of the same
//! resource compare as integers). A watch delivers events in resourceVersion order; one older
//! than what the same watch already delivered can only come from a faulty proxy or a replaying
//! cache, and applying it would roll the agent's view back (a pod deleted and re-created under
//! the same name would vanish from the fence on a stale DELETED).

use std::cmp::Ordering;

/// `a` against `b` as KEP-5504 orders them, or `None` when either is not a well-formed
/// resourceVersion (then only equality means anything, as before 1.35).
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    let well_formed =
        |s: &str| !s.is_empty() && !s.starts_with('0') && s.bytes().all(|c| c.is_ascii_digit());
    if !well_formed(a) || !well_formed(b) {
        return None;
    }
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// One event of a watch, as far as ordering goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The watch (re)starts a list: every object of it follows, in no order.
    ListStart,
    /// An object of the list, with its resourceVersion.
    Listed(Option<&'a str>),
    /// The list is complete.
    ListDone,
    /// An added, modified or deleted object, with its resourceVersion.
    Changed(Option<&'a str>),
}

/// The newest resourceVersion a watch has delivered. Objects of a list carry their own last
/// modification, so they come in any order and only raise the mark; after the list every change
/// must be newer than the mark, and one that is not is stale.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watermark {
    mark: Option<String>,
}

impl Watermark {
    /// Whether to apply `event`; raises the mark when it does. A change whose resourceVersion
    /// is missing or not comparable is applied (nothing proves it stale).
    pub fn admit(&mut self, event: Event<'_>) -> bool {
        match event {
            Event::ListStart => {
                self.mark = None;
                true
            }
            Event::ListDone => true,
            Event::Listed(rv) => {
                self.raise(rv);
                true
            }
            Event::Changed(rv) => {
                let (Some(rv), Some(mark)) = (rv, self.mark.as_deref()) else {
                    self.raise(rv);
                    return true;
                };
                match compare(rv, mark) {
                    Some(Ordering::Greater) => {
                        self.mark = Some(rv.to_string());
                        true
                    }
                    Some(_) => false,
                    None => true,
                }
            }
        }
    }

    fn raise(&mut self, rv: Option<&str>) {
        let Some(rv) = rv else { return };
        let newer = match self.mark.as_deref() {
            None => compare(rv, rv).is_some(),
            Some(mark) => compare(rv, mark) == Some(Ordering::Greater),
        };
        if newer {
            self.mark = Some(rv.to_string());
        }
    }

    /// The newest resourceVersion delivered, if any was comparable.
    pub fn mark(&self) -> Option<&str> {
        self.mark.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::{Equal, Greater, Less};

    #[test]
    fn resource_versions_compare_as_integers_of_any_length() {
        let cases: &[(&str, &str, Option<Ordering>)] = &[
            ("1", "1", Some(Equal)),
            ("9", "10", Some(Less)),
            ("10", "9", Some(Greater)),
            ("123", "124", Some(Less)),
            (
                "99999999999999999999999",
                "100000000000000000000000",
                Some(Less),
            ),
            (
                "18446744073709551616",
                "18446744073709551615",
                Some(Greater),
            ),
            // Not well formed: zero, a leading zero, a sign, a letter, empty, spaces.
            ("0", "1", None),
            ("01", "2", None),
            ("1", "+2", None),
            ("-1", "2", None),
            ("1a", "2", None),
            ("", "2", None),
            ("2", " 3", None),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare(a, b), *want, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn a_change_older_than_what_the_watch_delivered_is_stale() {
        use Event::*;
        let mut w = Watermark::default();
        let steps: &[(Event, bool, Option<&str>)] = &[
            (ListStart, true, None),
            // Listed objects in any order raise the mark to the newest.
            (Listed(Some("12")), true, Some("12")),
            (Listed(Some("7")), true, Some("12")),
            (Listed(None), true, Some("12")),
            (ListDone, true, Some("12")),
            (Changed(Some("13")), true, Some("13")),
            // A replay of the same event, and an older one: stale.
            (Changed(Some("13")), false, Some("13")),
            (Changed(Some("9")), false, Some("13")),
            // Missing or opaque resourceVersions cannot be proven stale.
            (Changed(None), true, Some("13")),
            (Changed(Some("abc")), true, Some("13")),
            (Changed(Some("100")), true, Some("100")),
            // A relist starts over: its objects may be older than the old mark.
            (ListStart, true, None),
            (Listed(Some("50")), true, Some("50")),
            (ListDone, true, Some("50")),
            (Changed(Some("51")), true, Some("51")),
        ];
        for (i, (event, admit, mark)) in steps.iter().enumerate() {
            assert_eq!(w.admit(*event), *admit, "step {i}: {event:?}");
            assert_eq!(w.mark(), *mark, "step {i}: mark after {event:?}");
        }
    }

    #[test]
    fn a_watch_without_a_list_takes_its_first_change_as_the_mark() {
        let mut w = Watermark::default();
        assert!(w.admit(Event::Changed(Some("5"))));
        assert_eq!(w.mark(), Some("5"));
        assert!(!w.admit(Event::Changed(Some("4"))));
        // An opaque first version sets no mark, so nothing after it is judged.
        let mut w = Watermark::default();
        assert!(w.admit(Event::Changed(Some("x"))));
        assert_eq!(w.mark(), None);
        assert!(w.admit(Event::Changed(Some("1"))));
    }
}
