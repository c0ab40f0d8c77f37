//! The committed header must be what the pinned cbindgen generates now.

use std::path::PathBuf;

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/user_questions.h"));

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../include/user_questions.h")
}

#[test]
fn committed_header_is_up_to_date() {
    let path = committed_path();
    if std::env::var_os("UQ_BLESS_HEADER").is_some() {
        std::fs::write(&path, GENERATED).expect("write include/user_questions.h");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == GENERATED,
        "include/user_questions.h differs from what cbindgen generates from ffi/src; \
         regenerate it with `UQ_BLESS_HEADER=1 cargo test -p user-questions-ffi --test header` \
         and commit it"
    );
}

/// The terminal provider is declared only under `UQ_HAS_TERMINAL`, which the header defines
/// (scripts/install-c drops the define for a library built without the `terminal` feature).
#[test]
fn terminal_provider_is_declared_under_uq_has_terminal() {
    let flat: String = GENERATED.split_whitespace().collect::<Vec<_>>().join(" ");
    let declaration =
        "uq_code uq_register_terminal_provider(uq_context *ctx, uint64_t *out_registration);";
    let at = flat
        .find(declaration)
        .expect("the header declares the terminal provider");
    let guard = flat[..at]
        .rfind("#if defined(UQ_HAS_TERMINAL)")
        .expect("a guard before it");
    assert!(
        !flat[guard..at].contains("#endif"),
        "the guard is still open"
    );
    assert!(
        flat[at..]
            .trim_start_matches(declaration)
            .trim_start()
            .starts_with("#endif")
    );
    assert_eq!(flat.matches("#define UQ_HAS_TERMINAL 1").count(), 1);
}

#[test]
fn header_declares_every_function_of_spec_13() {
    let functions = [
        "const char *uq_version(void);",
        "const char *uq_code_name(uq_code code);",
        "void uq_string_free(char *s);",
        "uq_context *uq_context_new(void);",
        "void uq_context_free(uq_context *ctx);",
        "uq_agent *uq_agent_new(const char *id, uint32_t delegation_depth);",
        "const char *uq_agent_id(const uq_agent *agent);",
        "void uq_agent_free(uq_agent *agent);",
        "uq_code uq_agents_enter(uq_context *ctx, const uq_agent *agent, const uq_agent *owner);",
        "uq_code uq_agents_exit(uq_context *ctx, const uq_agent *agent);",
        "uq_abort *uq_abort_new(void);",
        "void uq_abort_trigger(uq_abort *abort);",
        "bool uq_abort_is_triggered(const uq_abort *abort);",
        "void uq_abort_free(uq_abort *abort);",
        "typedef void (*uq_ask_callback)(void *user_data, uq_code code, const char *json);",
        "uq_code uq_unregister_provider(uq_context *ctx, uint64_t registration);",
        "uq_code uq_answer(uq_context *ctx, uint64_t ticket, const char *answer_json, char **out_reason);",
        "uq_code uq_cancel(uq_context *ctx, uint64_t ticket);",
        "uq_code uq_fail(uq_context *ctx, uint64_t ticket, const char *message);",
        "uq_code uq_pending(uq_context *ctx, char **out_json);",
        "const char *uq_tool_definition(void);",
    ];
    let flat: String = GENERATED.split_whitespace().collect::<Vec<_>>().join(" ");
    for f in functions {
        assert!(flat.contains(f), "header lacks `{f}`");
    }
    for f in [
        "uq_code uq_ask(uq_context *ctx, const char *request_json, const uq_agent *agent, const uq_abort *abort, uq_ask_callback callback, void *user_data);",
        "uq_code uq_ask_wait(uq_context *ctx, const char *request_json, const uq_agent *agent, const uq_abort *abort, char **out_json);",
        "uq_code uq_register_provider(uq_context *ctx, const uq_provider *provider, void *user_data, uint64_t *out_registration);",
        "uq_code uq_register_auto_responder(uq_context *ctx, const char *policy, bool approve_intents, uint64_t *out_registration);",
        "uq_code uq_tool_execute(uq_context *ctx, const char *args_json, const uq_agent *agent, const uq_abort *abort, uq_ask_callback callback, void *user_data);",
        "typedef struct uq_context uq_context;",
        "typedef struct uq_agent uq_agent;",
        "typedef struct uq_abort uq_abort;",
        "UQ_OK = 0,",
        "UQ_INTERNAL = 16,",
        "UQ_ASK_TIMED_OUT = 17",
        "#ifdef __cplusplus extern \"C\" {",
        "uq_code uq_ask_with_error(uq_context *ctx, const char *request_json, const uq_agent *agent, const uq_abort *abort, uq_ask_callback callback, void *user_data, char **out_error_json);",
        "uq_code uq_tool_execute_with_error(uq_context *ctx, const char *args_json, const uq_agent *agent, const uq_abort *abort, uq_ask_callback callback, void *user_data, char **out_error_json);",
        "uq_code uq_extend(uq_context *ctx, uint64_t ticket, int64_t ms, char **out_expires_at);",
        "uq_code uq_review_plan(uq_context *ctx, const char *request_json, const uq_agent *agent, const uq_abort *abort, uq_ask_callback callback, void *user_data);",
        "uq_code uq_review_plan_with_error(uq_context *ctx, const char *request_json, const uq_agent *agent, const uq_abort *abort, uq_ask_callback callback, void *user_data, char **out_error_json);",
        "uq_code uq_context_set_journal(uq_context *ctx, const char *path);",
        "uint64_t uq_journal_errors(const uq_context *ctx);",
        "#define UQ_HAS_TERMINAL 1",
    ] {
        assert!(flat.contains(f), "header lacks `{f}`");
    }
}

/// The web and remote providers are declared only under `UQ_HAS_WEB` / `UQ_HAS_REMOTE`, which
/// the header defines (scripts/install-c drops them for a library built without the feature).
#[test]
fn web_and_remote_providers_are_declared_under_their_defines() {
    let flat: String = GENERATED.split_whitespace().collect::<Vec<_>>().join(" ");
    for (define, declaration) in [
        (
            "UQ_HAS_WEB",
            "uq_code uq_register_web_provider(uq_context *ctx, const char *listen, uint64_t *out_registration, char **out_url);",
        ),
        (
            "UQ_HAS_WEB",
            "uq_code uq_register_web_provider_with_access(uq_context *ctx, const char *listen, const char *access_path, uint64_t *out_registration, char **out_url, char **out_error_json);",
        ),
        (
            "UQ_HAS_REMOTE",
            "uq_code uq_register_remote_provider(uq_context *ctx, const char *url, const char *token, uint64_t *out_registration);",
        ),
    ] {
        let at = flat
            .find(declaration)
            .unwrap_or_else(|| panic!("the header declares `{declaration}`"));
        let guard = flat[..at]
            .rfind(&format!("#if defined({define})"))
            .unwrap_or_else(|| panic!("a {define} guard before it"));
        assert!(
            !flat[guard..at].contains("#endif"),
            "the guard is still open"
        );
        assert!(
            flat[at..]
                .trim_start_matches(declaration)
                .trim_start()
                .starts_with("#endif")
        );
        assert_eq!(flat.matches(&format!("#define {define} 1")).count(), 1);
    }
}
