//! The access file (docs/reference.md §23): who may see and answer questions (`[[person]]`), and which
//! hosts may post them (`[[asker]]`), each known by the SHA-256 of a token — the tokens
//! themselves are never stored.
//!
//! ```toml
//! [[person]]
//! id = "alice"                    # 1–64 characters from a-z 0-9 . _ -
//! name = "Alice Martin"           # default: the id
//! token_sha256 = "9f86d081…"      # lowercase hex SHA-256 of the person's token
//! groups = ["ops"]                # optional
//!
//! [[asker]]
//! id = "ci"
//! token_sha256 = "…"
//! to = ["ops", "alice"]           # optional: whom its questions may be addressed to
//! ```
//!
//! [`AccessFile`] is one parsed and checked file; [`AccessControl`] holds the file in force and
//! swaps it on [`AccessControl::reload`] (on SIGHUP: [`reload_on_sighup`]), so that a token
//! taken out of the file is refused from the next request and the event streams opened with it
//! can end ([`AccessControl::changes`], [`AccessControl::still_valid`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::watch;

/// What a person id, an asker id or a group name must be (the end of the message when one is
/// not).
pub const NAME_RULE: &str = "1 to 64 characters from a-z 0-9 . _ -";

/// What a person's display name must be (the end of the message when it is not).
pub const DISPLAY_NAME_RULE: &str = "1 to 200 characters without control characters";

/// The reason given for a `token_sha256` that is not a SHA-256 in lowercase hex.
const HASH_RULE: &str = "token_sha256 must be 64 lowercase hex characters";

/// The longest display name, in characters.
const MAX_DISPLAY_NAME: usize = 200;

/// The SHA-256 digest of a token, as the access file knows it.
pub type TokenDigest = [u8; 32];

// ---- what the file names --------------------------------------------------------------------

/// Someone who may see and answer questions (a `[[person]]` of the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// The person's id: [`NAME_RULE`], unique among the file's names.
    pub id: String,
    /// The name shown on the page and recorded with each answer; the id when the file gives
    /// none.
    pub name: String,
    /// The groups the person is in (questions addressed to a group reach its members).
    pub groups: Vec<String>,
}

/// A host that posts questions (an `[[asker]]` of the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asker {
    /// The asker's id: [`NAME_RULE`], unique among the file's names.
    pub id: String,
    /// Whom its questions may be addressed to (person ids and group names of the file);
    /// `None`: anyone.
    pub to: Option<Vec<String>>,
}

/// Whom a token belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    /// A person, who may see and answer questions.
    Person(Arc<Person>),
    /// An asker, which may post questions.
    Asker(Arc<Asker>),
}

impl Who {
    /// The person's or asker's id.
    pub fn id(&self) -> &str {
        match self {
            Who::Person(person) => &person.id,
            Who::Asker(asker) => &asker.id,
        }
    }

    /// Whether `self` and `other` are the same entry of the file: both persons or both askers,
    /// with the same id (a changed display name, groups or `to` are still the same entry).
    pub fn same_entry(&self, other: &Who) -> bool {
        match (self, other) {
            (Who::Person(a), Who::Person(b)) => a.id == b.id,
            (Who::Asker(a), Who::Asker(b)) => a.id == b.id,
            _ => false,
        }
    }
}

// ---- tokens ---------------------------------------------------------------------------------

/// The SHA-256 of `token`, as the access file's `token_sha256` writes it: 64 lowercase hex
/// characters.
pub fn hash_token(token: &str) -> String {
    hex(&token_digest(token))
}

/// The SHA-256 digest of `token`.
pub fn token_digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// A new random token for an access file: 32 random bytes, base64url without padding (43
/// characters). The error's text says why none could be drawn.
pub fn new_token() -> Result<String, String> {
    crate::http::random_token()
}

/// `bytes` in lowercase hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    text
}

/// The digest written as `text`, when it is exactly 64 lowercase hex characters.
fn digest_of_hex(text: &str) -> Option<TokenDigest> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(digest)
}

/// Whether `name` follows [`NAME_RULE`].
pub fn name_fits(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
}

/// Whether `name` follows [`DISPLAY_NAME_RULE`].
fn display_name_fits(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_DISPLAY_NAME
        && !name.chars().any(char::is_control)
}

/// Whether a question addressed `to` (person ids and group names; `None`: everyone) reaches
/// `person`: `to` names the person's id or one of the person's groups.
pub fn addressed_to(person: &Person, to: Option<&[String]>) -> bool {
    match to {
        None => true,
        Some(to) => to
            .iter()
            .any(|name| *name == person.id || person.groups.contains(name)),
    }
}

// ---- the file as written --------------------------------------------------------------------

/// The file as TOML gives it, before the checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    person: Vec<RawPerson>,
    #[serde(default)]
    asker: Vec<RawAsker>,
}

/// A `[[person]]` as written. `id` and `token_sha256` are optional here so that their absence
/// is reported naming the entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPerson {
    id: Option<String>,
    name: Option<String>,
    token_sha256: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
}

/// An `[[asker]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAsker {
    id: Option<String>,
    token_sha256: Option<String>,
    to: Option<Vec<String>>,
}

/// How a reason names an entry: `person "alice"` once its id is known good, `person 2`
/// (1-based, in the file's order) or `person 2 (id "Bob")` before.
fn entry(kind: &str, number: usize, id: Option<&str>) -> String {
    match id {
        Some(id) if name_fits(id) => format!("{kind} \"{id}\""),
        Some(id) => format!("{kind} {number} (id {id:?})"),
        None => format!("{kind} {number}"),
    }
}

/// The id of entry `number` of `kind`, checked: present and following [`NAME_RULE`].
fn checked_id(kind: &str, number: usize, id: Option<&str>) -> Result<String, String> {
    let named = entry(kind, number, id);
    match id {
        None => Err(format!("{named}: id is missing")),
        Some(id) if !name_fits(id) => Err(format!("{named}: id must be {NAME_RULE}")),
        Some(id) => Ok(id.to_owned()),
    }
}

/// The digest of an entry's `token_sha256`, checked: present and 64 lowercase hex characters.
fn checked_digest(named: &str, hash: Option<&str>) -> Result<TokenDigest, String> {
    let hash = hash.ok_or_else(|| format!("{named}: token_sha256 is missing"))?;
    digest_of_hex(hash).ok_or_else(|| format!("{named}: {HASH_RULE}"))
}

/// `message` (toml's, for a syntax error or a value of the wrong shape) with the line and
/// column where it applies, on one line.
fn toml_reason(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', " ");
    let Some(span) = error.span() else {
        return message;
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit_once('\n')
        .map_or(before, |(_, last)| last)
        .chars()
        .count()
        + 1;
    format!("line {line}, column {column}: {message}")
}

// ---- the checked file -----------------------------------------------------------------------

/// One use of a name in the file, for the message when a name is used twice.
#[derive(Clone)]
enum NameUse {
    /// The id of person `number` (1-based).
    Person { number: usize, id: String },
    /// The id of asker `number` (1-based).
    Asker { number: usize, id: String },
    /// A group of the person with this id.
    Group { person: String },
}

impl NameUse {
    /// How a reason names this use: `person "ops"`, `asker "ci"`, `a group of person "alice"`.
    fn describe(&self) -> String {
        match self {
            NameUse::Person { id, .. } => format!("person \"{id}\""),
            NameUse::Asker { id, .. } => format!("asker \"{id}\""),
            NameUse::Group { person } => format!("a group of person \"{person}\""),
        }
    }

    /// The reason when `self` comes first and `later` uses the same name: two entries of the
    /// same kind with the same id are told apart by their numbers (`person 1 and person 3`).
    fn twice(&self, later: &NameUse, name: &str) -> String {
        let pair = match (self, later) {
            (NameUse::Person { number: a, .. }, NameUse::Person { number: b, .. }) => {
                format!("person {a} and person {b}")
            }
            (NameUse::Asker { number: a, .. }, NameUse::Asker { number: b, .. }) => {
                format!("asker {a} and asker {b}")
            }
            _ => format!("{} and {}", self.describe(), later.describe()),
        };
        format!("the name \"{name}\" is used twice ({pair})")
    }
}

/// An access file, parsed and checked: its persons and askers, and whom each token hash
/// belongs to.
#[derive(Debug)]
pub struct AccessFile {
    persons: Vec<Arc<Person>>,
    askers: Vec<Arc<Asker>>,
    person_ids: HashMap<String, Arc<Person>>,
    asker_ids: HashMap<String, Arc<Asker>>,
    groups: HashSet<String>,
    tokens: HashMap<TokenDigest, Who>,
}

impl AccessFile {
    /// Reads and checks the access file at `path`. The error is `cannot read the access file
    /// PATH: <reason>`, the reason naming the entry at fault.
    pub fn load(path: &Path) -> Result<AccessFile, String> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| cannot_read(&shown, &e))?;
        AccessFile::parse(&text, &shown)
    }

    /// Checks the text of an access file; `path_for_messages` names it in the error, which is
    /// `cannot read the access file PATH: <reason>`.
    pub fn parse(text: &str, path_for_messages: &str) -> Result<AccessFile, String> {
        AccessFile::check(text).map_err(|reason| cannot_read(path_for_messages, &reason))
    }

    /// [`AccessFile::parse`]; the error is the reason alone.
    fn check(text: &str) -> Result<AccessFile, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| toml_reason(text, &e))?;
        if raw.person.is_empty() && raw.asker.is_empty() {
            return Err("it names no person and no asker".to_owned());
        }
        let mut persons = Vec::with_capacity(raw.person.len());
        let mut person_digests = Vec::with_capacity(raw.person.len());
        for (index, raw) in raw.person.into_iter().enumerate() {
            let (person, digest) = checked_person(index + 1, raw)?;
            persons.push(Arc::new(person));
            person_digests.push(digest);
        }
        let mut askers = Vec::with_capacity(raw.asker.len());
        let mut asker_digests = Vec::with_capacity(raw.asker.len());
        for (index, raw) in raw.asker.into_iter().enumerate() {
            let (asker, digest) = checked_asker(index + 1, raw)?;
            askers.push(Arc::new(asker));
            asker_digests.push(digest);
        }
        check_names(&persons, &askers)?;
        let mut file = AccessFile {
            person_ids: persons.iter().map(|p| (p.id.clone(), p.clone())).collect(),
            asker_ids: askers.iter().map(|a| (a.id.clone(), a.clone())).collect(),
            groups: persons.iter().flat_map(|p| p.groups.clone()).collect(),
            tokens: HashMap::new(),
            persons,
            askers,
        };
        let holders = (file.persons.iter().map(|p| Who::Person(p.clone())))
            .chain(file.askers.iter().map(|a| Who::Asker(a.clone())));
        let digests = person_digests.into_iter().chain(asker_digests);
        for (digest, who) in digests.zip(holders) {
            if let Some(first) = file.tokens.get(&digest) {
                return Err(format!(
                    "the same token_sha256 is given twice ({} and {})",
                    describe(first),
                    describe(&who)
                ));
            }
            file.tokens.insert(digest, who);
        }
        file.check_recipients()?;
        Ok(file)
    }

    /// Every asker's `to` names a person or a group of the file.
    fn check_recipients(&self) -> Result<(), String> {
        for asker in &self.askers {
            let Some(to) = &asker.to else { continue };
            let named = format!("asker \"{}\"", asker.id);
            if to.is_empty() {
                return Err(format!(
                    "{named}: to names nobody (leave it out to let the asker address everyone)"
                ));
            }
            if let Some(unknown) = to.iter().find(|name| !self.is_name(name)) {
                return Err(format!(
                    "{named}: to names {unknown:?}, which is no person and no group of the file"
                ));
            }
        }
        Ok(())
    }

    /// Whom `token` belongs to, if anyone: looked up by its SHA-256 (the cost does not grow
    /// with the number of entries), then confirmed by a constant-time comparison.
    pub fn who(&self, token: &str) -> Option<Who> {
        self.who_by_digest(&token_digest(token))
    }

    /// Whom the token with this SHA-256 `digest` belongs to, if anyone.
    pub fn who_by_digest(&self, digest: &TokenDigest) -> Option<Who> {
        let (stored, who) = self.tokens.get_key_value(digest)?;
        bool::from(stored.ct_eq(digest)).then(|| who.clone())
    }

    /// The person with this id.
    pub fn person(&self, id: &str) -> Option<Arc<Person>> {
        self.person_ids.get(id).cloned()
    }

    /// The asker with this id.
    pub fn asker(&self, id: &str) -> Option<Arc<Asker>> {
        self.asker_ids.get(id).cloned()
    }

    /// Whether `name` is a person's id or a group's name (what a question may be addressed
    /// to).
    pub fn is_name(&self, name: &str) -> bool {
        self.person_ids.contains_key(name) || self.groups.contains(name)
    }

    /// Every person a question addressed `to` reaches: whose id, or one of whose groups, `to`
    /// names. In the file's order.
    pub fn people_for(&self, to: &[String]) -> Vec<Arc<Person>> {
        self.persons
            .iter()
            .filter(|p| addressed_to(p, Some(to)))
            .cloned()
            .collect()
    }

    /// The persons, in the file's order.
    pub fn persons(&self) -> impl Iterator<Item = &Arc<Person>> {
        self.persons.iter()
    }

    /// The askers, in the file's order.
    pub fn askers(&self) -> impl Iterator<Item = &Arc<Asker>> {
        self.askers.iter()
    }
}

/// `cannot read the access file PATH: <reason>`.
fn cannot_read(path: &str, reason: &dyn std::fmt::Display) -> String {
    format!("cannot read the access file {path}: {reason}")
}

/// How a reason names the holder of a token: `person "alice"`, `asker "ci"`.
fn describe(who: &Who) -> String {
    match who {
        Who::Person(person) => format!("person \"{}\"", person.id),
        Who::Asker(asker) => format!("asker \"{}\"", asker.id),
    }
}

/// Person `number` (1-based), checked on its own, with the digest of its token.
fn checked_person(number: usize, raw: RawPerson) -> Result<(Person, TokenDigest), String> {
    let id = checked_id("person", number, raw.id.as_deref())?;
    let named = entry("person", number, Some(&id));
    let name = match raw.name {
        None => id.clone(),
        Some(name) if display_name_fits(&name) => name,
        Some(_) => return Err(format!("{named}: name must be {DISPLAY_NAME_RULE}")),
    };
    let digest = checked_digest(&named, raw.token_sha256.as_deref())?;
    for (index, group) in raw.groups.iter().enumerate() {
        if !name_fits(group) {
            return Err(format!("{named}: the group {group:?} must be {NAME_RULE}"));
        }
        if raw.groups[..index].contains(group) {
            return Err(format!("{named}: the group \"{group}\" is listed twice"));
        }
    }
    let groups = raw.groups;
    Ok((Person { id, name, groups }, digest))
}

/// Asker `number` (1-based), checked on its own (its `to` is checked against the whole file
/// later), with the digest of its token.
fn checked_asker(number: usize, raw: RawAsker) -> Result<(Asker, TokenDigest), String> {
    let id = checked_id("asker", number, raw.id.as_deref())?;
    let named = entry("asker", number, Some(&id));
    let digest = checked_digest(&named, raw.token_sha256.as_deref())?;
    Ok((Asker { id, to: raw.to }, digest))
}

/// Person ids, asker ids and group names are one namespace: an id is used once, and a group
/// name is no id (many persons may share a group).
fn check_names(persons: &[Arc<Person>], askers: &[Arc<Asker>]) -> Result<(), String> {
    let mut uses: HashMap<&str, NameUse> = HashMap::new();
    let ids = (persons.iter().enumerate())
        .map(|(i, p)| {
            (
                p.id.as_str(),
                NameUse::Person {
                    number: i + 1,
                    id: p.id.clone(),
                },
            )
        })
        .chain((askers.iter().enumerate()).map(|(i, a)| {
            (
                a.id.as_str(),
                NameUse::Asker {
                    number: i + 1,
                    id: a.id.clone(),
                },
            )
        }));
    for (name, used) in ids {
        if let Some(first) = uses.get(name) {
            return Err(first.twice(&used, name));
        }
        uses.insert(name, used);
    }
    for person in persons {
        for group in &person.groups {
            if let Some(first) = uses.get(group.as_str()) {
                let used = NameUse::Group {
                    person: person.id.clone(),
                };
                return Err(first.twice(&used, group));
            }
        }
    }
    Ok(())
}

// ---- the file in force ----------------------------------------------------------------------

/// The access file in force, re-read on [`AccessControl::reload`]: a request checks its token
/// against [`AccessControl::current`]; a long-lived stream watches
/// [`AccessControl::changes`] and ends when [`AccessControl::still_valid`] says its token is
/// gone.
#[derive(Debug)]
pub struct AccessControl {
    path: PathBuf,
    file: RwLock<Arc<AccessFile>>,
    /// The generation: 0 for the first file, bumped by each successful reload.
    generation: watch::Sender<u64>,
    /// Held through a reload, so that concurrent reloads swap and count in the same order.
    reloading: Mutex<()>,
}

impl AccessControl {
    /// The access of `file`, read from `path` (which [`AccessControl::reload`] re-reads).
    pub fn new(file: AccessFile, path: PathBuf) -> AccessControl {
        AccessControl {
            path,
            file: RwLock::new(Arc::new(file)),
            generation: watch::Sender::new(0),
            reloading: Mutex::new(()),
        }
    }

    /// Reads the file at `path` and holds it: the error is [`AccessFile::load`]'s.
    pub fn load(path: PathBuf) -> Result<AccessControl, String> {
        let file = AccessFile::load(&path)?;
        Ok(AccessControl::new(file, path))
    }

    /// The path the file is read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file in force.
    pub fn current(&self) -> Arc<AccessFile> {
        self.file
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whom `token` belongs to in the file in force.
    pub fn who(&self, token: &str) -> Option<Who> {
        self.current().who(token)
    }

    /// Re-reads the file: once it is read and checked it is in force (and the generation is
    /// bumped); otherwise the file in force stays, and the error is [`AccessFile::load`]'s.
    pub fn reload(&self) -> Result<(), String> {
        let _reloading = self
            .reloading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let file = Arc::new(AccessFile::load(&self.path)?);
        *self.file.write().unwrap_or_else(PoisonError::into_inner) = file;
        // After the swap: whoever sees the new generation sees the new file.
        self.generation.send_modify(|generation| *generation += 1);
        Ok(())
    }

    /// How many times the file was reloaded.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// A receiver of the generation, which changes after each successful reload.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Whether the token with this `digest` still belongs to the same entry as `who` (the
    /// person or asker it belonged to when a stream was opened with it).
    pub fn still_valid(&self, digest: &TokenDigest, who: &Who) -> bool {
        self.current()
            .who_by_digest(digest)
            .is_some_and(|now| now.same_entry(who))
    }

    /// Reloads and says how it went, as [`reload_on_sighup`] prints it: `user-questions:
    /// reloaded the access file PATH`, or `user-questions: cannot reload the access file PATH:
    /// <reason>; the access in force is unchanged`.
    pub fn reload_and_report(&self) -> String {
        let path = self.path.display();
        match self.reload() {
            Ok(()) => format!("user-questions: reloaded the access file {path}"),
            Err(message) => {
                let prefix = cannot_read(&path.to_string(), &"");
                let reason = message.strip_prefix(&prefix).unwrap_or(&message);
                format!(
                    "user-questions: cannot reload the access file {path}: {reason}; the access \
                     in force is unchanged"
                )
            }
        }
    }
}

/// Reloads `control` on each SIGHUP, printing on stderr what [`AccessControl::reload_and_report`]
/// says. The handler is installed when this returns (a SIGHUP from then on no longer ends the
/// process); the task it spawns runs as long as the runtime does.
///
/// # Panics
///
/// Outside a tokio runtime, or in one built without its I/O driver (`enable_io`).
#[cfg(unix)]
pub fn reload_on_sighup(
    control: Arc<AccessControl>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups =
        signal(SignalKind::hangup()).map_err(|e| format!("cannot watch for SIGHUP: {e}"))?;
    Ok(tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let control = control.clone();
            // Reading the file blocks: off the runtime's threads.
            let report = tokio::task::spawn_blocking(move || control.reload_and_report()).await;
            if let Ok(report) = report {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "{report}");
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/etc/uq/access.toml";

    fn refused(text: &str) -> String {
        AccessFile::parse(text, PATH).expect_err("refused")
    }

    fn reason(text: &str) -> String {
        let message = refused(text);
        let prefix = format!("cannot read the access file {PATH}: ");
        message
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{message:?} starts with {prefix:?}"))
            .to_owned()
    }

    fn h(token: &str) -> String {
        hash_token(token)
    }

    fn good_text() -> String {
        format!(
            r#"
[[person]]
id = "alice"
name = "Alice Martin"
token_sha256 = "{}"
groups = ["ops", "dev"]

[[person]]
id = "bob"
token_sha256 = "{}"
groups = ["ops"]

[[person]]
id = "carol.x_1-2"
token_sha256 = "{}"

[[asker]]
id = "ci"
token_sha256 = "{}"
to = ["ops", "carol.x_1-2"]

[[asker]]
id = "laptop"
token_sha256 = "{}"
"#,
            h("alice-token"),
            h("bob-token"),
            h("carol-token"),
            h("ci-token"),
            h("laptop-token")
        )
    }

    fn good() -> AccessFile {
        AccessFile::parse(&good_text(), PATH).unwrap()
    }

    fn person(id: &str, extra: &str) -> String {
        format!(
            "[[person]]\nid = \"{id}\"\ntoken_sha256 = \"{}\"\n{extra}\n",
            h(&format!("{id}-token"))
        )
    }

    fn asker(id: &str, extra: &str) -> String {
        format!(
            "[[asker]]\nid = \"{id}\"\ntoken_sha256 = \"{}\"\n{extra}\n",
            h(&format!("{id}-asker-token"))
        )
    }

    #[test]
    fn hash_token_is_lowercase_hex_sha256() {
        assert_eq!(
            hash_token("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
        assert_eq!(
            digest_of_hex(&hash_token("test")),
            Some(token_digest("test"))
        );
    }

    #[test]
    fn new_tokens_are_43_base64url_characters_and_differ() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 43);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a, b);
    }

    #[test]
    fn a_good_file_is_read_with_its_defaults() {
        let file = good();
        let alice = file.person("alice").unwrap();
        assert_eq!(alice.name, "Alice Martin");
        assert_eq!(alice.groups, ["ops", "dev"]);
        let bob = file.person("bob").unwrap();
        assert_eq!(bob.name, "bob", "the name defaults to the id");
        let carol = file.person("carol.x_1-2").unwrap();
        assert!(carol.groups.is_empty());
        assert_eq!(
            file.persons().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ["alice", "bob", "carol.x_1-2"]
        );
        assert_eq!(
            file.asker("ci").unwrap().to.as_deref(),
            Some(&["ops".to_owned(), "carol.x_1-2".to_owned()][..])
        );
        assert_eq!(file.asker("laptop").unwrap().to, None);
        assert_eq!(file.askers().count(), 2);
        assert!(file.person("ci").is_none());
        assert!(file.asker("alice").is_none());
    }

    #[test]
    fn is_name_knows_persons_and_groups_not_askers() {
        let file = good();
        assert!(file.is_name("alice"));
        assert!(file.is_name("ops"));
        assert!(file.is_name("dev"));
        assert!(!file.is_name("ci"));
        assert!(!file.is_name("nobody"));
    }

    #[test]
    fn who_finds_persons_and_askers_by_token() {
        let file = good();
        match file.who("alice-token") {
            Some(Who::Person(p)) => assert_eq!(p.id, "alice"),
            other => panic!("{other:?}"),
        }
        match file.who("ci-token") {
            Some(Who::Asker(a)) => assert_eq!(a.id, "ci"),
            other => panic!("{other:?}"),
        }
        assert_eq!(file.who("laptop-token").unwrap().id(), "laptop");
        assert_eq!(file.who("unknown"), None);
        assert_eq!(file.who(""), None);
        assert_eq!(file.who("alice-token "), None);
        // The hash itself is no token.
        assert_eq!(file.who(&hash_token("alice-token")), None);
        assert_eq!(
            file.who_by_digest(&token_digest("bob-token")).unwrap().id(),
            "bob"
        );
    }

    #[test]
    fn people_for_takes_ids_and_groups() {
        let file = good();
        let ids = |to: &[&str]| {
            let to: Vec<String> = to.iter().map(|s| (*s).to_owned()).collect();
            file.people_for(&to)
                .iter()
                .map(|p| p.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&["ops"]), ["alice", "bob"]);
        assert_eq!(ids(&["dev"]), ["alice"]);
        assert_eq!(ids(&["carol.x_1-2", "dev"]), ["alice", "carol.x_1-2"]);
        assert_eq!(ids(&["ops", "alice"]), ["alice", "bob"], "each person once");
        assert!(ids(&[]).is_empty());
        assert!(ids(&["nobody", "ci"]).is_empty());
    }

    #[test]
    fn addressed_to_none_is_everyone() {
        let file = good();
        let bob = file.person("bob").unwrap();
        assert!(addressed_to(&bob, None));
        assert!(addressed_to(&bob, Some(&["ops".to_owned()])));
        assert!(addressed_to(&bob, Some(&["bob".to_owned()])));
        assert!(!addressed_to(&bob, Some(&["dev".to_owned()])));
        assert!(!addressed_to(&bob, Some(&[])));
    }

    #[test]
    fn a_file_with_only_askers_or_only_persons_is_good() {
        assert!(AccessFile::parse(&person("alice", ""), PATH).is_ok());
        assert!(AccessFile::parse(&asker("ci", ""), PATH).is_ok());
    }

    #[test]
    fn an_unreadable_file_is_refused_naming_it() {
        let dir = std::env::temp_dir().join(format!("uq-access-missing-{}", std::process::id()));
        let path = dir.join("access.toml");
        let message = AccessFile::load(&path).unwrap_err();
        assert!(
            message.starts_with(&format!("cannot read the access file {}: ", path.display())),
            "{message}"
        );
        assert!(message.contains("No such file"), "{message}");
    }

    #[test]
    fn an_empty_file_is_refused() {
        assert_eq!(reason(""), "it names no person and no asker");
        assert_eq!(reason("# nobody\n"), "it names no person and no asker");
    }

    #[test]
    fn a_toml_syntax_error_is_refused_with_its_place() {
        let text = format!("{}\nid = \"x\n", person("alice", ""));
        assert_eq!(
            reason(&text),
            "line 6, column 8: invalid basic string, expected `\"`"
        );
    }

    #[test]
    fn unknown_keys_and_tables_are_refused() {
        let text = format!(
            "[[person]]\nid = \"alice\"\ntoken_sha265 = \"{}\"\n",
            h("alice-token")
        );
        assert_eq!(
            reason(&text),
            "line 3, column 1: unknown field `token_sha265`, expected one of `id`, `name`, \
             `token_sha256`, `groups`"
        );
        let text = format!("{}[[people]]\nid = \"bob\"\n", person("alice", ""));
        assert_eq!(
            reason(&text),
            "line 5, column 3: unknown field `people`, expected `person` or `asker`"
        );
        let text = asker("ci", "groups = [\"ops\"]");
        assert_eq!(
            reason(&text),
            "line 4, column 1: unknown field `groups`, expected one of `id`, `token_sha256`, `to`"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused() {
        let text = "[[person]]\nid = 5\n";
        assert_eq!(
            reason(text),
            "line 2, column 6: invalid type: integer `5`, expected a string"
        );
    }

    #[test]
    fn a_missing_id_or_hash_is_refused() {
        let text = format!("{}[[person]]\nname = \"Bob\"\n", person("alice", ""));
        assert_eq!(reason(&text), "person 2: id is missing");
        assert_eq!(
            reason("[[person]]\nid = \"alice\"\n"),
            "person \"alice\": token_sha256 is missing"
        );
        assert_eq!(
            reason(&format!("[[asker]]\ntoken_sha256 = \"{}\"\n", h("x"))),
            "asker 1: id is missing"
        );
        assert_eq!(
            reason("[[asker]]\nid = \"ci\"\n"),
            "asker \"ci\": token_sha256 is missing"
        );
    }

    #[test]
    fn ids_that_break_the_rule_are_refused() {
        let text = format!("{}{}", person("alice", ""), person("Bob", ""));
        assert_eq!(
            reason(&text),
            "person 2 (id \"Bob\"): id must be 1 to 64 characters from a-z 0-9 . _ -"
        );
        assert_eq!(
            reason(&person("", "")),
            "person 1 (id \"\"): id must be 1 to 64 characters from a-z 0-9 . _ -"
        );
        assert_eq!(
            reason(&person(&"a".repeat(65), "")),
            format!(
                "person 1 (id \"{}\"): id must be 1 to 64 characters from a-z 0-9 . _ -",
                "a".repeat(65)
            )
        );
        assert!(AccessFile::parse(&person(&"a".repeat(64), ""), PATH).is_ok());
        assert_eq!(
            reason(&asker("c i", "")),
            "asker 1 (id \"c i\"): id must be 1 to 64 characters from a-z 0-9 . _ -"
        );
        // An id that cannot be shown as is is quoted with escapes.
        assert_eq!(
            reason("[[asker]]\nid = \"a\\nb\"\n"),
            "asker 1 (id \"a\\nb\"): id must be 1 to 64 characters from a-z 0-9 . _ -"
        );
    }

    #[test]
    fn groups_that_break_the_rule_or_repeat_are_refused() {
        assert_eq!(
            reason(&person("alice", "groups = [\"ops\", \"Ops\"]")),
            "person \"alice\": the group \"Ops\" must be 1 to 64 characters from a-z 0-9 . _ -"
        );
        assert_eq!(
            reason(&person("alice", "groups = [\"\"]")),
            "person \"alice\": the group \"\" must be 1 to 64 characters from a-z 0-9 . _ -"
        );
        assert_eq!(
            reason(&person("alice", "groups = [\"ops\", \"ops\"]")),
            "person \"alice\": the group \"ops\" is listed twice"
        );
    }

    #[test]
    fn bad_display_names_are_refused() {
        let expected =
            "person \"alice\": name must be 1 to 200 characters without control characters";
        assert_eq!(reason(&person("alice", "name = \"\"")), expected);
        assert_eq!(reason(&person("alice", "name = \"A\\tB\"")), expected);
        let long = "é".repeat(201);
        assert_eq!(
            reason(&person("alice", &format!("name = \"{long}\""))),
            expected
        );
        let fits = "é".repeat(200);
        let file = AccessFile::parse(&person("alice", &format!("name = \"{fits}\"")), PATH);
        assert_eq!(file.unwrap().person("alice").unwrap().name, fits);
    }

    #[test]
    fn bad_hashes_are_refused() {
        let expected = "person \"alice\": token_sha256 must be 64 lowercase hex characters";
        let text = |hash: &str| format!("[[person]]\nid = \"alice\"\ntoken_sha256 = \"{hash}\"\n");
        assert_eq!(reason(&text(&h("x").to_uppercase())), expected);
        assert_eq!(reason(&text(&h("x")[..63])), expected);
        assert_eq!(reason(&text(&format!("{}0", h("x")))), expected);
        assert_eq!(reason(&text(&format!("{}g", &h("x")[..63]))), expected);
        assert_eq!(reason(&text("")), expected);
        assert_eq!(
            reason("[[asker]]\nid = \"ci\"\ntoken_sha256 = \"abc\"\n"),
            "asker \"ci\": token_sha256 must be 64 lowercase hex characters"
        );
    }

    #[test]
    fn a_name_used_twice_is_refused() {
        let text = format!(
            "{}{}{}",
            person("bob", ""),
            person("alice", ""),
            person("bob", "")
        );
        // Each entry with its own token, so that the names are what is at fault.
        let text = text.replacen(&h("bob-token"), &h("bob-2"), 1);
        assert_eq!(
            reason(&text),
            "the name \"bob\" is used twice (person 1 and person 3)"
        );
        let text = format!(
            "{}{}",
            asker("ci", ""),
            asker("ci", "").replace(&h("ci-asker-token"), &h("x"))
        );
        assert_eq!(
            reason(&text),
            "the name \"ci\" is used twice (asker 1 and asker 2)"
        );
        let text = format!("{}{}", asker("ci", ""), person("ci", ""));
        assert_eq!(
            reason(&text),
            "the name \"ci\" is used twice (person \"ci\" and asker \"ci\")"
        );
        let text = format!(
            "{}{}",
            person("alice", "groups = [\"ops\"]"),
            person("ops", "")
        );
        assert_eq!(
            reason(&text),
            "the name \"ops\" is used twice (person \"ops\" and a group of person \"alice\")"
        );
        let text = format!(
            "{}{}",
            person("alice", "groups = [\"ci\"]"),
            asker("ci", "")
        );
        assert_eq!(
            reason(&text),
            "the name \"ci\" is used twice (asker \"ci\" and a group of person \"alice\")"
        );
        // A group of one's own id.
        assert_eq!(
            reason(&person("alice", "groups = [\"alice\"]")),
            "the name \"alice\" is used twice (person \"alice\" and a group of person \"alice\")"
        );
    }

    #[test]
    fn a_token_hash_used_twice_is_refused() {
        let text = format!("{}{}", person("alice", ""), person("bob", ""))
            .replace(&h("bob-token"), &h("alice-token"));
        assert_eq!(
            reason(&text),
            "the same token_sha256 is given twice (person \"alice\" and person \"bob\")"
        );
        let text = format!("{}{}", asker("ci", ""), person("alice", ""))
            .replace(&h("ci-asker-token"), &h("alice-token"));
        assert_eq!(
            reason(&text),
            "the same token_sha256 is given twice (person \"alice\" and asker \"ci\")"
        );
    }

    #[test]
    fn an_asker_may_address_only_names_of_the_file() {
        let text = format!(
            "{}{}",
            person("alice", "groups = [\"ops\"]"),
            asker("ci", "to = [\"ops\", \"nobody\"]")
        );
        assert_eq!(
            reason(&text),
            "asker \"ci\": to names \"nobody\", which is no person and no group of the file"
        );
        let text = format!(
            "{}{}{}",
            person("alice", ""),
            asker("ci", "to = [\"laptop\"]"),
            asker("laptop", "")
        );
        assert_eq!(
            reason(&text),
            "asker \"ci\": to names \"laptop\", which is no person and no group of the file"
        );
        let text = format!("{}{}", person("alice", ""), asker("ci", "to = []"));
        assert_eq!(
            reason(&text),
            "asker \"ci\": to names nobody (leave it out to let the asker address everyone)"
        );
        let text = format!(
            "{}{}",
            person("alice", "groups = [\"ops\"]"),
            asker("ci", "to = [\"ops\", \"alice\"]")
        );
        assert!(AccessFile::parse(&text, PATH).is_ok());
    }

    /// A file under a directory of its own that the test removes.
    struct TempFile {
        dir: PathBuf,
        path: PathBuf,
    }

    impl TempFile {
        fn new(name: &str, text: &str) -> TempFile {
            let dir = std::env::temp_dir().join(format!(
                "uq-access-{name}-{}-{}",
                std::process::id(),
                new_token().unwrap()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("access.toml");
            let file = TempFile { dir, path };
            file.write(text);
            file
        }

        fn write(&self, text: &str) {
            // Written aside and renamed, so that a reader never sees half of it.
            let aside = self.dir.join("access.toml.new");
            std::fs::write(&aside, text).unwrap();
            std::fs::rename(&aside, &self.path).unwrap();
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn reload_swaps_a_good_file_and_keeps_the_old_one_on_error() {
        let temp = TempFile::new("reload", &person("alice", ""));
        let control = AccessControl::load(temp.path.clone()).unwrap();
        let mut changes = control.changes();
        assert_eq!(control.generation(), 0);
        let alice = control.who("alice-token").unwrap();
        let digest = token_digest("alice-token");
        assert!(control.still_valid(&digest, &alice));

        temp.write(&person("bob", ""));
        control.reload().unwrap();
        assert_eq!(control.generation(), 1);
        assert!(changes.has_changed().unwrap());
        assert_eq!(*changes.borrow_and_update(), 1);
        assert_eq!(control.who("alice-token"), None);
        assert!(!control.still_valid(&digest, &alice));
        assert_eq!(control.who("bob-token").unwrap().id(), "bob");

        temp.write("[[person]]\nid = \"Bob\"\n");
        let message = control.reload().unwrap_err();
        assert_eq!(
            message,
            format!(
                "cannot read the access file {}: person 1 (id \"Bob\"): id must be {NAME_RULE}",
                temp.path.display()
            )
        );
        assert_eq!(control.generation(), 1);
        assert!(!changes.has_changed().unwrap());
        assert_eq!(control.who("bob-token").unwrap().id(), "bob");

        std::fs::remove_file(&temp.path).unwrap();
        let message = control.reload().unwrap_err();
        assert!(message.contains("No such file"), "{message}");
        assert_eq!(control.who("bob-token").unwrap().id(), "bob");
    }

    #[test]
    fn still_valid_follows_the_entry_not_its_details() {
        let temp = TempFile::new("valid", &person("alice", "name = \"Alice\""));
        let control = AccessControl::load(temp.path.clone()).unwrap();
        let alice = control.who("alice-token").unwrap();
        let digest = token_digest("alice-token");
        // Renamed, in a new group: the same person.
        temp.write(&person("alice", "name = \"Alice M.\"\ngroups = [\"ops\"]"));
        control.reload().unwrap();
        assert!(control.still_valid(&digest, &alice));
        // The token now given to an asker of the same id: another entry.
        temp.write(&asker("alice", "").replace(&h("alice-asker-token"), &h("alice-token")));
        control.reload().unwrap();
        assert!(!control.still_valid(&digest, &alice));
    }

    #[test]
    fn the_reload_report_says_what_happened() {
        let temp = TempFile::new("report", &person("alice", ""));
        let control = AccessControl::load(temp.path.clone()).unwrap();
        let path = temp.path.display();
        assert_eq!(
            control.reload_and_report(),
            format!("user-questions: reloaded the access file {path}")
        );
        temp.write("[[person]]\n");
        assert_eq!(
            control.reload_and_report(),
            format!(
                "user-questions: cannot reload the access file {path}: person 1: id is \
                 missing; the access in force is unchanged"
            )
        );
        assert_eq!(control.generation(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn sighup_reloads_the_file() {
        let temp = TempFile::new("sighup", &person("alice", ""));
        let control = Arc::new(AccessControl::load(temp.path.clone()).unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut changes = control.changes();
            reload_on_sighup(control.clone()).unwrap();
            temp.write(&person("bob", ""));
            let status = std::process::Command::new("kill")
                .args(["-HUP", &std::process::id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            tokio::time::timeout(std::time::Duration::from_secs(10), changes.changed())
                .await
                .expect("reloaded within 10 s")
                .unwrap();
        });
        assert_eq!(control.generation(), 1);
        assert_eq!(control.who("alice-token"), None);
        assert_eq!(control.who("bob-token").unwrap().id(), "bob");
    }
}
