//! The repository is self-contained: every tracked file stands on its own.
//!
//! Over every file `git ls-files` lists:
//! - no text names a path outside the repository or a document that is not in it (sections
//!   are cited as `§N`, or `docs/reference.md §N` where a reader may not know the file);
//! - every section it cites (`§N`, `§N.M`) is a section of `docs/reference.md`
//!   (for `§N.M`, section `§N` must exist: `M` is an item within it);
//! - the licence files, the changelog and the contributing guide exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ has a parent: the repository root")
        .to_path_buf()
}

/// Every tracked file, as `git ls-files` lists it (relative to the root).
fn tracked() -> Vec<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "-z"])
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git ls-files failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    assert!(
        files.iter().any(|f| f == "core/Cargo.toml"),
        "git ls-files lists this repository's files"
    );
    files
}

/// The tracked files that are text (valid UTF-8 without NUL), with their contents. A file
/// deleted in the working tree but still tracked is left out: there is nothing to read.
fn tracked_text() -> Vec<(String, String)> {
    tracked()
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(root().join(&path)).ok()?;
            if bytes.contains(&0) {
                return None;
            }
            String::from_utf8(bytes).ok().map(|text| (path, text))
        })
        .collect()
}

/// What no tracked file may contain, spelled in pieces so this file does not contain them.
fn forbidden() -> Vec<String> {
    vec![
        ["..", "/shared"].concat(),
        ["/wo", "rk/"].concat(),
        ["SPEC", ".md"].concat(),
        ["shared", "/spec"].concat(),
        ["STYLE", ".md"].concat(),
        ["SPEC", " §"].concat(),
        ["SPEC", " section"].concat(),
    ]
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    let patterns = forbidden();
    let mut found = Vec::new();
    for (path, text) in tracked_text() {
        for (n, line) in text.lines().enumerate() {
            for p in &patterns {
                if line.contains(p.as_str()) {
                    found.push(format!("{path}:{}: {p:?} in {:?}", n + 1, line.trim()));
                }
            }
            let lower = line.to_lowercase();
            let seed = ["the ", "seed"].concat();
            if let Some(i) = lower.find(&seed) {
                let after = lower[i + seed.len()..].chars().next();
                if !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
                    found.push(format!("{path}:{}: {seed:?} in {:?}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} line(s) point outside the repository:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The section numbers of `docs/reference.md`: its `## §N …` headings.
fn reference_sections() -> BTreeSet<u32> {
    let text = std::fs::read_to_string(root().join("docs/reference.md"))
        .expect("docs/reference.md exists");
    text.lines()
        .filter_map(|line| line.strip_prefix("## §"))
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// Every `§N` / `§N.M` in `text`, as (N, the citation as written).
fn citations(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('§') {
        rest = &rest[i + '§'.len_utf8()..];
        let cited = rest.trim_start_matches([' ', '\u{a0}']);
        let major: String = cited.chars().take_while(char::is_ascii_digit).collect();
        if major.is_empty() {
            continue; // a lone `§` (e.g. "§§" or prose) names no section
        }
        let after = &cited[major.len()..];
        let minor: String = after
            .strip_prefix('.')
            .map(|m| m.chars().take_while(char::is_ascii_digit).collect())
            .unwrap_or_default();
        let written = if minor.is_empty() {
            format!("§{major}")
        } else {
            format!("§{major}.{minor}")
        };
        if let Ok(n) = major.parse() {
            out.push((n, written));
        }
    }
    out
}

#[test]
fn every_cited_section_exists_in_the_reference() {
    let sections = reference_sections();
    let expected: BTreeSet<u32> = (1..=26).collect();
    assert_eq!(
        sections, expected,
        "docs/reference.md has the headings ## §1 … ## §26"
    );
    let mut missing = Vec::new();
    let mut cited = 0usize;
    for (path, text) in tracked_text() {
        for (n, line) in text.lines().enumerate() {
            for (major, written) in citations(line) {
                cited += 1;
                if !sections.contains(&major) {
                    missing.push(format!("{path}:{}: {written} in {:?}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        cited > 100,
        "the tree cites the reference ({cited} citations)"
    );
    assert!(
        missing.is_empty(),
        "{} citation(s) of sections that docs/reference.md does not have:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn citations_are_read_as_written() {
    assert_eq!(
        citations("see §3 #5c, §4.7 and § 16; §§ alone; §x"),
        vec![
            (3, "§3".to_owned()),
            (4, "§4.7".to_owned()),
            (16, "§16".to_owned())
        ]
    );
}

#[test]
fn the_house_files_exist() {
    let files: BTreeSet<String> = tracked().into_iter().collect();
    let wanted = [
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "docs/reference.md",
    ];
    let absent: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|f| !files.contains(*f) || !root().join(f).is_file())
        .collect();
    assert!(
        absent.is_empty(),
        "tracked files missing: {}",
        absent.join(", ")
    );
}
