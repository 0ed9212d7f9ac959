//! The design is in the repository (`docs/`), and the code cites it: every `docs/<name>.md §N`
//! in the code and the files shipped beside it must name a section that exists, and nothing may
//! cite the team's working notes (the design, semantics and style notes outside the repository,
//! which a clone does not have). `scripts/doc-citations.py` rewrites old citations; this test
//! keeps them from coming back. Reads a few hundred files: well under a second.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What is scanned, as in `scripts/doc-citations.py`: not `fuzz/` (mutated inputs, not prose)
/// and not `docs/` itself.
const SCAN: &[&str] = &[
    "src",
    "tests",
    "benches",
    "examples",
    "packaging",
    "systemd",
    "scripts",
    ".ci",
    "README.md",
    "BENCHMARKS.md",
    "config.example.toml",
    "build.rs",
];

/// Files that spell the old names on purpose: the rewriting script's mapping and this test.
const SKIP: &[&str] = &["scripts/doc-citations.py", "tests/docs.rs"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for entry in entries {
        walk(&entry, out);
    }
}

/// The section numbers of one doc: every heading that starts with `N.` or `N.M`.
fn sections(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start_matches('#');
            if rest.len() == line.len() {
                return None;
            }
            let number: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.');
            (!number.is_empty()).then(|| number.to_string())
        })
        .collect()
}

fn docs() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    walk(&repo().join("docs"), &mut files);
    files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, sections(&std::fs::read_to_string(p).unwrap()))
        })
        .collect()
}

/// A section reference after a `§`: `4`, `4.2`, `4–5`, `6.2–6.3` (both ends are checked).
fn numbers(after: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = after;
    loop {
        let n: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let n = n.trim_end_matches('.').to_string();
        if n.is_empty() {
            break;
        }
        rest = &rest[n.len()..];
        out.push(n);
        match rest.chars().next() {
            Some(c @ ('–' | '-')) => rest = &rest[c.len_utf8()..],
            _ => break,
        }
    }
    out
}

/// Every citation problem in one file's text: `(line, problem)`.
fn problems(text: &str, docs: &BTreeMap<String, BTreeSet<String>>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Built so that this file does not cite them itself.
    let old = [["DES", "IGN"].concat(), ["SEMAN", "TICS"].concat()];
    let style = ["STY", "LE §"].concat();
    for (n, line) in text.lines().enumerate() {
        let words = line.split(|c: char| !c.is_ascii_alphanumeric() && c != '_');
        if words.into_iter().any(|w| old.iter().any(|o| w == o)) || line.contains(&style) {
            out.push((n + 1, format!("cites the working notes: {}", line.trim())));
        }
    }
    // Explicit citations (`docs/x.md`, then maybe `§N` after a space or a comment line break) and
    // bare ones (`§N`, which refer to the doc cited last before them in the file).
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut explicit_sections = BTreeSet::new();
    let mut cites: Vec<(usize, String)> = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        // Part of a longer path or a URL (`…/docs/…`): not ours.
        if text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
        {
            continue;
        }
        let name: String = text[at + 5..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            .collect();
        if !text[at + 5 + name.len()..].starts_with(".md") {
            continue;
        }
        let name = format!("{name}.md");
        if !docs.contains_key(&name) {
            out.push((
                line_of(at),
                format!("cites docs/{name}, which does not exist"),
            ));
        }
        // The `§` that belongs to this citation, if any: after blanks and one comment break.
        let end = at + 5 + name.len();
        let gap: String = text[end..]
            .chars()
            .take_while(|c| c.is_whitespace() || matches!(c, '/' | '!' | '#'))
            .collect();
        if text[end + gap.len()..].starts_with('§') && gap.matches('\n').count() <= 1 {
            explicit_sections.insert(end + gap.len());
        }
        cites.push((at, name));
    }
    cites.reverse();
    let mut current: Option<String> = None;
    for (at, _) in text.match_indices('§') {
        while cites.last().is_some_and(|(c, _)| *c < at) {
            current = cites.pop().map(|(_, name)| name);
        }
        // Another document's sections (an RFC's) are not ours to check.
        let before = &text[..at];
        let prev_word = before
            .trim_end()
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .nth(1)
            .unwrap_or("");
        if prev_word == "RFC" {
            continue;
        }
        let refs = numbers(&text[at + '§'.len_utf8()..]);
        let Some(doc) = &current else {
            out.push((
                line_of(at),
                "a § with no docs/ citation before it in the file".into(),
            ));
            continue;
        };
        let kind = if explicit_sections.contains(&at) {
            "cites"
        } else {
            "cites (by the docs/ citation before it)"
        };
        for r in refs {
            if docs.get(doc).is_some_and(|s| !s.contains(&r)) {
                out.push((
                    line_of(at),
                    format!("{kind} docs/{doc} §{r}, which has no such section"),
                ));
            }
        }
    }
    out
}

#[test]
fn every_cited_doc_section_exists_and_nothing_cites_the_working_notes() {
    let docs = docs();
    for name in ["architecture.md", "semantics.md", "fence.md"] {
        assert!(
            docs.get(name).is_some_and(|s| s.len() >= 5),
            "docs/{name} is missing or has almost no numbered sections: {docs:?}"
        );
    }
    let mut files = Vec::new();
    for top in SCAN {
        walk(&repo().join(top), &mut files);
    }
    let mut checked = 0;
    let mut cited = 0;
    let mut found = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(repo())
            .unwrap()
            .to_string_lossy()
            .to_string();
        if SKIP.contains(&rel.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // not text
        };
        checked += 1;
        cited += text.matches("docs/").count();
        for (line, problem) in problems(&text, &docs) {
            found.push(format!("{rel}:{line}: {problem}"));
        }
    }
    assert!(checked > 100, "scanned only {checked} files");
    assert!(cited > 100, "found only {cited} docs/ citations");
    assert!(
        found.is_empty(),
        "{} citation problem(s) (scripts/doc-citations.py rewrites old ones):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The checker itself, on texts that must and must not pass.
#[test]
fn the_checker_finds_what_it_should() {
    let docs: BTreeMap<String, BTreeSet<String>> = [(
        "fence.md".to_string(),
        ["1", "2", "5", "5.5"].map(String::from).into(),
    )]
    .into();
    let ok = "//! The fence (docs/fence.md §5): see §5.5, §1–2.\n// docs/fence.md\n// §2\n";
    assert_eq!(problems(ok, &docs), vec![]);
    let bad = [
        ("// docs/fence.md §7", "no such section"),
        ("// docs/fence.md §5.5, §3", "no such section"),
        ("// docs/fence.md §1–4", "no such section"),
        ("// docs/nowhere.md", "does not exist"),
        ("// see §2", "no docs/ citation"),
        (
            &format!("// ({} §6)", ["DES", "IGN"].concat()),
            "working notes",
        ),
        (
            &format!("// {}.md §4", ["SEMAN", "TICS"].concat()),
            "working notes",
        ),
    ];
    for (text, why) in bad {
        let found = problems(text, &docs);
        assert!(
            found.iter().any(|(_, p)| p.contains(why)),
            "{text:?} should fail with {why:?}, found {found:?}"
        );
    }
    // An RFC's sections are not ours.
    assert_eq!(problems("// docs/fence.md §1 (RFC 2104 §3)", &docs), vec![]);
}
