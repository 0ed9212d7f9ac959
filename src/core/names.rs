//! Kubernetes name rules (apimachinery `pkg/util/validation`, docs/semantics.md §8.1): DNS-1123
//! labels and subdomains, qualified names (taint and label keys) and label values. Each `*_errors`
//! returns upstream's messages, word for word, and is empty when the value is valid. Pure; used
//! by API-object validation, the configuration loader and the test API server alike.

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery `RegexError`: the message, examples, and the regex, in upstream's exact
/// punctuation (including its double space before "or").
fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{regex}')"));
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, any length.
fn matches_label(s: &str) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, any length.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsDNS1123Label`: at most 63 characters of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
pub fn dns_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_label(s) {
        errs.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// `IsDNS1123Subdomain`: at most 253 characters, labels joined by '.' (each label of any
/// length, as upstream's regex).
pub fn dns_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !s.split('.').all(matches_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsQualifiedName`: an optional DNS-1123 subdomain prefix and '/', then a name of at most 63
/// characters of alphanumerics with '-', '_' or '.' inside.
pub fn qualified_name_errors(s: &str) -> Vec<String> {
    let name_regex = || {
        regex_error(
            QUALIFIED_NAME_MSG,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        )
    };
    let mut errs = Vec::new();
    let name = match s.split('/').collect::<Vec<_>>().as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                let prefixed = dns_subdomain_errors(prefix).into_iter();
                errs.extend(prefixed.map(|e| format!("prefix part {e}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                name_regex()
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    // Upstream also gives the regex message for an empty name.
    if !matches_qualified_name_part(name) {
        errs.push(format!("name part {}", name_regex()));
    }
    errs
}

/// `IsValidLabelValue`: empty, or at most 63 characters of the qualified-name part's form.
pub fn label_value_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Whether `s` is a DNS-1123 label (a namespace or Service name).
pub fn is_dns_label(s: &str) -> bool {
    dns_label_errors(s).is_empty()
}

/// Whether `s` is a DNS-1123 subdomain (a node or Lease name).
pub fn is_dns_subdomain(s: &str) -> bool {
    dns_subdomain_errors(s).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABEL_REGEX: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN_REGEX: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const NAME_REGEX: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn name_part(message: &str) -> String {
        format!("name part {message}")
    }

    #[test]
    fn dns_labels_are_at_most_63_lowercase_alphanumerics_with_inner_dashes() {
        let long = "a".repeat(64);
        let table: &[(&str, &[&str])] = &[
            ("a", &[]),
            ("0", &[]),
            ("my-name", &[]),
            ("123-abc", &[]),
            (&long[..63], &[]),
            (&long, &["must be no more than 63 characters"]),
            ("", &[LABEL_REGEX]),
            ("-a", &[LABEL_REGEX]),
            ("a-", &[LABEL_REGEX]),
            ("My-name", &[LABEL_REGEX]),
            ("a.b", &[LABEL_REGEX]),
            ("a_b", &[LABEL_REGEX]),
        ];
        for (input, expected) in table {
            assert_eq!(dns_label_errors(input), *expected, "{input:?}");
            assert_eq!(is_dns_label(input), expected.is_empty(), "{input:?}");
        }
        let long_and_bad = format!("-{}", "a".repeat(63));
        assert_eq!(
            dns_label_errors(&long_and_bad),
            ["must be no more than 63 characters", LABEL_REGEX]
        );
    }

    #[test]
    fn dns_subdomains_are_at_most_253_characters_of_dot_separated_labels() {
        let at_limit = [
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61),
        ]
        .join(".");
        assert_eq!(at_limit.len(), 253);
        let over = format!("{at_limit}e");
        // Upstream's regex does not limit a subdomain's labels to 63 characters.
        let long_label = "a".repeat(100);
        let table: &[(&str, &[&str])] = &[
            ("example.com", &[]),
            ("a", &[]),
            ("1.2.3", &[]),
            ("a-b.c-d", &[]),
            (&long_label, &[]),
            (&at_limit, &[]),
            (&over, &["must be no more than 253 characters"]),
            ("", &[SUBDOMAIN_REGEX]),
            (".a", &[SUBDOMAIN_REGEX]),
            ("a.", &[SUBDOMAIN_REGEX]),
            ("a..b", &[SUBDOMAIN_REGEX]),
            ("-a.b", &[SUBDOMAIN_REGEX]),
            ("a.b-", &[SUBDOMAIN_REGEX]),
            ("Example.com", &[SUBDOMAIN_REGEX]),
            ("a_b.com", &[SUBDOMAIN_REGEX]),
        ];
        for (input, expected) in table {
            assert_eq!(dns_subdomain_errors(input), *expected, "{input:?}");
            assert_eq!(is_dns_subdomain(input), expected.is_empty(), "{input:?}");
        }
    }

    #[test]
    fn qualified_names_split_into_an_optional_prefix_and_a_name() {
        let name_63 = "n".repeat(63);
        let name_64 = "n".repeat(64);
        let prefix_254 = format!("{}/x", "p".repeat(254));
        let with_63 = format!("example.com/{name_63}");
        let with_64 = format!("example.com/{name_64}");
        let many_parts = format!(
            "a qualified name {NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        let table: Vec<(&str, Vec<String>)> = vec![
            ("simple", vec![]),
            ("a", vec![]),
            ("My_Name.1", vec![]),
            ("node.kubernetes.io/memory-pressure", vec![]),
            ("example.com/a_b.c", vec![]),
            (&name_63, vec![]),
            (&with_63, vec![]),
            (
                &name_64,
                vec!["name part must be no more than 63 characters".into()],
            ),
            (
                &with_64,
                vec!["name part must be no more than 63 characters".into()],
            ),
            (
                "",
                vec!["name part must be non-empty".into(), name_part(NAME_REGEX)],
            ),
            (
                "x/",
                vec!["name part must be non-empty".into(), name_part(NAME_REGEX)],
            ),
            ("/x", vec!["prefix part must be non-empty".into()]),
            ("-x", vec![name_part(NAME_REGEX)]),
            ("x-", vec![name_part(NAME_REGEX)]),
            ("a b", vec![name_part(NAME_REGEX)]),
            (
                "Example.com/x",
                vec![format!("prefix part {SUBDOMAIN_REGEX}")],
            ),
            (
                &prefix_254,
                vec!["prefix part must be no more than 253 characters".into()],
            ),
            ("a/b/c", vec![many_parts]),
        ];
        for (input, expected) in table {
            assert_eq!(qualified_name_errors(input), expected, "{input:?}");
        }
    }

    #[test]
    fn label_values_may_be_empty_or_up_to_63_name_characters() {
        let long = "v".repeat(64);
        let table: &[(&str, &[&str])] = &[
            ("", &[]),
            ("MyValue", &[]),
            ("my_value", &[]),
            ("12345", &[]),
            (&long[..63], &[]),
            (&long, &["must be no more than 63 characters"]),
            ("-v", &[VALUE_REGEX]),
            ("v.", &[VALUE_REGEX]),
            ("a/b", &[VALUE_REGEX]),
            ("a b", &[VALUE_REGEX]),
        ];
        for (input, expected) in table {
            assert_eq!(label_value_errors(input), *expected, "{input:?}");
        }
    }
}
