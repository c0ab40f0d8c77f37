//! What the documentation promises about the web provider, checked against the code: a
//! token given by the user follows one rule (docs/reference.md §19), and the reference and
//! both bindings' READMEs state it.

use std::path::Path;

use user_questions::ErrorCode;
use user_questions_person::http::TOKEN_RULE;
use user_questions_web::WebProvider;

/// A file of the repository, its line breaks and Markdown code marks folded away.
fn prose(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.replace('`', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_token_rule_is_stated_where_a_token_can_be_given() {
    // The rule the code enforces, in the words its error uses.
    let rule = TOKEN_RULE
        .strip_prefix("token must be ")
        .expect("the message starts with the subject");
    assert_eq!(rule, "1 to 256 characters from A-Z a-z 0-9 - . _ ~");
    let e = WebProvider::builder()
        .token("c3RhbmRhcmQrYmFzZTY0Lw==")
        .bind()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(e.message(), TOKEN_RULE);

    let reference = prose("docs/reference.md");
    let section = &reference[reference
        .find("## §19 ")
        .expect("docs/reference.md has §19")..];
    let section = &section[..section.find("## §20 ").unwrap_or(section.len())];
    assert!(
        section.contains(rule),
        "docs/reference.md §19 states the rule"
    );
    assert!(
        section.contains(TOKEN_RULE),
        "docs/reference.md §19 gives the error's message"
    );
    for readme in ["bindings-python/README.md", "bindings-node/README.md"] {
        let text = prose(readme);
        assert!(text.contains(rule), "{readme} states the rule");
        assert!(
            text.contains("INVALID_ARGUMENT"),
            "{readme} names the error"
        );
    }
}
