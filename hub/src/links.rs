//! One-tap answer links (docs/reference.md §23): a link names a ticket, an option's label, a
//! person and an expiry, signed with HMAC-SHA256 under a secret the store keeps (so a link
//! survives a restart and works on every hub of a shared store). The link is the credential:
//! whoever holds it may answer that one question with that one option, as that person, once.
//!
//! A capability is `<ticket>~<expires ms>~<person>~<label, base64url>~<mac, base64url>`: `~`
//! is in no person id (a-z 0-9 . _ -) and in no base64url text, and needs no escaping in a
//! URL path.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What a valid capability names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Capability {
    pub ticket: u64,
    /// Milliseconds since the Unix epoch after which the link is expired.
    pub expires_at: i64,
    pub person: String,
    pub label: String,
}

/// The name of the link secret in the store.
pub(crate) const SECRET_NAME: &str = "links";
/// How long a link of an ask without a deadline is good for: 24 hours.
pub(crate) const DEFAULT_LIFETIME_MS: i64 = 24 * 3600 * 1000;

/// Signs and checks capabilities with one secret.
pub(crate) struct Signer {
    secret: Vec<u8>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer { .. }")
    }
}

impl Signer {
    pub fn new(secret: Vec<u8>) -> Signer {
        Signer { secret }
    }

    /// A new random secret (32 bytes), for a store that has none yet.
    pub fn fresh_secret() -> Result<Vec<u8>, String> {
        let mut bytes = vec![0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a link secret: {e}"))?;
        Ok(bytes)
    }

    fn mac(&self, ticket: u64, expires_at: i64, person: &str, label: &str) -> Hmac<Sha256> {
        // A key of any length is accepted by HMAC.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        // Lengths first, so that no two different tuples sign the same bytes.
        let message = format!(
            "uq-link-v1\n{ticket}\n{expires_at}\n{}:{person}\n{}:{label}",
            person.len(),
            label.len()
        );
        mac.update(message.as_bytes());
        mac
    }

    /// The capability for `ticket`, `label`, `person`, good until `expires_at`.
    pub fn sign(&self, capability: &Capability) -> String {
        let tag = self
            .mac(
                capability.ticket,
                capability.expires_at,
                &capability.person,
                &capability.label,
            )
            .finalize()
            .into_bytes();
        format!(
            "{}~{}~{}~{}~{}",
            capability.ticket,
            capability.expires_at,
            capability.person,
            URL_SAFE_NO_PAD.encode(capability.label.as_bytes()),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// What `text` names, when it is a capability this secret signed, unaltered; `None` for
    /// anything else (a link altered in any way).
    pub fn check(&self, text: &str) -> Option<Capability> {
        let mut parts = text.split('~');
        let (Some(ticket), Some(expires), Some(person), Some(label), Some(tag), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(ticket)
            || !(digits(expires) || expires.starts_with('-') && digits(&expires[1..]))
        {
            return None;
        }
        let capability = Capability {
            ticket: ticket.parse().ok()?,
            expires_at: expires.parse().ok()?,
            person: person.to_owned(),
            label: String::from_utf8(URL_SAFE_NO_PAD.decode(label).ok()?).ok()?,
        };
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        self.mac(
            capability.ticket,
            capability.expires_at,
            &capability.person,
            &capability.label,
        )
        .verify_slice(&tag)
        .ok()?;
        // The one spelling this capability has: a ticket with a leading zero, or base64 with
        // other trailing bits, decodes to the same values but is not the link given out.
        (self.sign(&capability) == text).then_some(capability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capability() -> Capability {
        Capability {
            ticket: 42,
            expires_at: 1_800_000_000_000,
            person: "alice.m_1-x".into(),
            label: "Yes, ship it ✓ ~/ok".into(),
        }
    }

    #[test]
    fn a_signed_capability_checks_and_names_what_it_signed() {
        let signer = Signer::new(b"secret".to_vec());
        let text = signer.sign(&capability());
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"~-_.".contains(&b)),
            "{text}"
        );
        assert_eq!(signer.check(&text), Some(capability()));
    }

    #[test]
    fn any_alteration_and_another_secret_are_refused() {
        let signer = Signer::new(b"secret".to_vec());
        let text = signer.sign(&capability());
        assert_eq!(Signer::new(b"other".to_vec()).check(&text), None);
        // Every single character changed to every other character of the alphabet.
        let alphabet: Vec<char> =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
                .chars()
                .collect();
        let chars: Vec<char> = text.chars().collect();
        for i in 0..chars.len() {
            for &c in &alphabet {
                if c == chars[i] {
                    continue;
                }
                let mut altered = chars.clone();
                altered[i] = c;
                let altered: String = altered.into_iter().collect();
                assert_eq!(signer.check(&altered), None, "{altered}");
            }
        }
        for altered in [
            format!("0{text}"),
            format!("{text}~"),
            text[..text.len() - 1].to_owned(),
            String::new(),
            "~~~~".to_owned(),
        ] {
            assert_eq!(signer.check(&altered), None, "{altered}");
        }
    }
}

/// The pages a link answers with: plain HTML, every text escaped, no script and no style (the
/// security headers of §19 forbid inline ones), readable on a phone.
pub(crate) mod page {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::{IntoResponse, Response};

    /// `text` as HTML text.
    pub fn escape(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#39;"),
                c => out.push(c),
            }
        }
        out
    }

    /// A page with `status`, a title and a body of already escaped HTML.
    pub fn respond(status: StatusCode, title: &str, body: &str) -> Response {
        let html = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title></head>\n<body><main>\n<h1>{title}</h1>\n{body}\n</main></body></html>\n",
            title = escape(title)
        );
        (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            )],
            html,
        )
            .into_response()
    }

    /// 404: a link altered in any way (or one whose person or ask is gone).
    pub fn not_valid() -> Response {
        respond(
            StatusCode::NOT_FOUND,
            "This link is not valid",
            "<p>Open the question from its notification again, or answer it on the hub's page.</p>",
        )
    }

    /// 410: past the link's expiry.
    pub fn expired() -> Response {
        respond(
            StatusCode::GONE,
            "This link has expired",
            "<p>The question's time to answer has passed.</p>",
        )
    }

    /// 409: the ask is already settled — how, and by whom when known.
    pub fn settled(how: &str, by: Option<&str>) -> Response {
        let text = match by {
            Some(name) => format!("This question was already {how} by {}.", escape(name)),
            None => format!("This question was already {how}."),
        };
        respond(
            StatusCode::CONFLICT,
            "Already settled",
            &format!("<p>{text}</p>"),
        )
    }

    /// 200 for a GET: the question, the option, one button. Changes nothing.
    /// The form posts to `capability` relative to the page's own URL (`/a/<capability>`), so
    /// it works under any path prefix a reverse proxy adds.
    pub fn confirm(
        question: &str,
        detail: Option<&str>,
        label: &str,
        name: &str,
        capability: &str,
    ) -> Response {
        let detail = detail
            .map(|d| format!("<p>{}</p>\n", escape(d)))
            .unwrap_or_default();
        let body = format!(
            "<p>{}</p>\n{detail}<p>Your answer: <strong>{label}</strong></p>\n\
             <p>You answer as {name}.</p>\n\
             <form method=\"post\" action=\"{action}\"><button type=\"submit\">Answer \u{201c}{label}\u{201d}</button></form>",
            escape(question),
            action = escape(capability),
            label = escape(label),
            name = escape(name),
        );
        respond(StatusCode::OK, "Answer this question?", &body)
    }

    /// 200 for the POST that answered.
    pub fn answered(label: &str, name: &str) -> Response {
        let body = format!(
            "<p>Your answer \u{201c}{}\u{201d} was recorded as {}.</p>",
            escape(label),
            escape(name)
        );
        respond(StatusCode::OK, "Answered", &body)
    }
}
