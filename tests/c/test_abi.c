/*
 * Tests of the C ABI (include/user_questions.h), in C11. Built by scripts/test-c against the
 * shared and the static library, run plain, under ASan+UBSan and under valgrind.
 *
 * Each test prints its name; a failed CHECK prints file:line and the condition, and the
 * program exits 1 after running every test.
 */
#include "support.h"

/* ------------------------------------------------------------------------------------- */
/* Tests                                                                                  */
/* ------------------------------------------------------------------------------------- */

static void test_version_names_and_definition(void) {
  CHECK(uq_version() != NULL && strlen(uq_version()) > 0);
  CHECK(uq_version() == uq_version());
  static const char *const names[] = {"OK",
                                      "ASK_ABORTED",
                                      "EMPTY_QUESTIONS",
                                      "CALLER_NOT_LIVE",
                                      "DELEGATED_CALLER",
                                      "BAD_INTENT",
                                      "NO_PROVIDER",
                                      "DUPLICATE_PROVIDER",
                                      "ASK_CANCELLED",
                                      "INVALID_REQUEST",
                                      "BAD_ANSWER",
                                      "PROVIDER_FAILED",
                                      "NOT_PENDING",
                                      "ALREADY_RESOLVED",
                                      "AGENT_EXISTS",
                                      "INVALID_ARGUMENT",
                                      "INTERNAL",
                                      "ASK_TIMED_OUT"};
  for (int i = 0; i <= 17; i++)
    CHECK_STR(uq_code_name((uq_code)i), names[i]);
  CHECK(UQ_OK == 0 && UQ_ASK_ABORTED == 1 && UQ_BAD_ANSWER == 10 && UQ_INTERNAL == 16);
  CHECK(UQ_ASK_TIMED_OUT == 17);
  CHECK(uq_code_name((uq_code)18) == NULL);
  /* The header's version macros are the library's version. */
  char version[64];
  snprintf(version, sizeof version, "%d.%d.%d", UQ_VERSION_MAJOR, UQ_VERSION_MINOR,
           UQ_VERSION_PATCH);
  CHECK_STR(uq_version(), version);
  const char *def = uq_tool_definition();
  CHECK(def == uq_tool_definition());
  CHECK(strncmp(def, "{\"name\":\"ask_user_question\",\"description\":\"Ask the user a concise",
                62) == 0);
  CHECK_CONTAINS(def, "\"multi_select\":{\"type\":\"boolean\"");
  CHECK_CONTAINS(def, "\"required\":[\"questions\"]");
}

static void test_null_arguments_and_free_null(void) {
  uq_context *ctx = uq_context_new();
  uq_agent *agent = uq_agent_new("root", 0);
  completion done;
  completion_init(&done);
  uint64_t reg = 0;
  char *out = NULL;

  uq_string_free(NULL);
  uq_context_free(NULL);
  uq_agent_free(NULL);
  uq_abort_free(NULL);
  uq_abort_trigger(NULL);
  CHECK(!uq_abort_is_triggered(NULL));
  CHECK(uq_agent_new(NULL, 0) == NULL);
  CHECK(uq_agent_id(NULL) == NULL);

  CHECK_CODE(uq_agents_enter(NULL, agent, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_agents_enter(ctx, NULL, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_agents_exit(NULL, agent), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_agents_exit(ctx, NULL), UQ_INVALID_ARGUMENT);

  CHECK_CODE(uq_ask(NULL, CONFIRM, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_ask(ctx, NULL, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, NULL, &done), UQ_INVALID_ARGUMENT);
  CHECK(completion_calls(&done) == 0);

  CHECK_CODE(uq_ask_wait(NULL, CONFIRM, NULL, NULL, &out), UQ_INVALID_ARGUMENT);
  CHECK_CONTAINS(out, "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"ctx is NULL\"}");
  uq_string_free(out);
  out = NULL;
  CHECK_CODE(uq_ask_wait(ctx, NULL, NULL, NULL, &out), UQ_INVALID_ARGUMENT);
  CHECK_CONTAINS(out, "request_json is NULL");
  uq_string_free(out);
  CHECK_CODE(uq_ask_wait(ctx, CONFIRM, NULL, NULL, NULL), UQ_INVALID_ARGUMENT);

  uq_provider no_ask = {NULL, rec_withdraw, rec_release};
  CHECK_CODE(uq_register_provider(NULL, &RECORDER, NULL, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_provider(ctx, NULL, NULL, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_provider(ctx, &no_ask, NULL, &reg), UQ_INVALID_ARGUMENT);
  recorder rec;
  recorder_init(&rec, ctx);
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, NULL), UQ_INVALID_ARGUMENT);
  CHECK(rec.releases == 0); /* a failed registration never calls release */
  CHECK(reg == 0);          /* outputs are written only on success */
  CHECK_CODE(uq_unregister_provider(NULL, 1), UQ_INVALID_ARGUMENT);

  char *reason = (char *)"untouched";
  CHECK_CODE(uq_answer(NULL, 1, CONFIRM_YES, &reason), UQ_INVALID_ARGUMENT);
  CHECK_STR(reason, "ctx is NULL");
  uq_string_free(reason);
  CHECK_CODE(uq_answer(ctx, 1, NULL, &reason), UQ_INVALID_ARGUMENT);
  CHECK_STR(reason, "answer_json is NULL");
  uq_string_free(reason);
  CHECK_CODE(uq_answer(ctx, 1, NULL, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_cancel(NULL, 1), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_fail(NULL, 1, "boom"), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_fail(ctx, 1, NULL), UQ_INVALID_ARGUMENT);
  out = NULL;
  CHECK_CODE(uq_pending(NULL, &out), UQ_INVALID_ARGUMENT);
  CHECK(out == NULL);
  CHECK_CODE(uq_pending(ctx, NULL), UQ_INVALID_ARGUMENT);

  CHECK_CODE(uq_register_auto_responder(NULL, "first", false, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_auto_responder(ctx, NULL, false, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, NULL), UQ_INVALID_ARGUMENT);

  CHECK_CODE(uq_tool_execute(NULL, "{}", NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_tool_execute(ctx, NULL, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_tool_execute(ctx, "{}", NULL, NULL, NULL, &done), UQ_INVALID_ARGUMENT);
  CHECK(completion_calls(&done) == 0);

  /* Nothing was registered by any of the failed calls. */
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_NO_PROVIDER);

  uq_agent_free(agent);
  uq_context_free(ctx);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

static void test_invalid_utf8_arguments(void) {
  uq_context *ctx = uq_context_new();
  completion done;
  completion_init(&done);
  uint64_t reg = 0;
  char *out = NULL;
  CHECK(uq_agent_new("\xc3\x28", 0) == NULL);
  CHECK_CODE(uq_ask(ctx, INVALID_UTF8, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_ask_wait(ctx, INVALID_UTF8, NULL, NULL, &out), UQ_INVALID_ARGUMENT);
  CHECK_STR(out, "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"request_json is not valid UTF-8\"}");
  uq_string_free(out);
  CHECK_CODE(uq_register_auto_responder(ctx, "fir\xffst", false, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_tool_execute(ctx, INVALID_UTF8, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);

  recorder rec;
  recorder_init(&rec, ctx);
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_OK);
  char *reason = NULL;
  CHECK_CODE(uq_answer(ctx, rec.last_ticket,
                       "{\"answers\":[{\"id\":\"go\",\"selected\":[\"\xff\"]}]}", &reason),
             UQ_INVALID_ARGUMENT);
  CHECK_STR(reason, "answer_json is not valid UTF-8");
  uq_string_free(reason);
  CHECK_CODE(uq_fail(ctx, rec.last_ticket, "bo\xffom"), UQ_INVALID_ARGUMENT);
  CHECK(completion_calls(&done) == 0); /* still pending */
  CHECK_CODE(uq_fail(ctx, rec.last_ticket, "boom"), UQ_OK);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_PROVIDER_FAILED);
  CHECK_STR(done.json, "{\"code\":\"PROVIDER_FAILED\",\"message\":\"boom\"}");
  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

static void test_foreign_and_freed_handles(void) {
  uq_context *ctx = uq_context_new();
  uq_agent *agent = uq_agent_new("root", 0);
  uq_abort *abort = uq_abort_new();
  completion done;
  completion_init(&done);
  uint64_t reg = 0;
  int not_a_handle = 42;

  /* Foreign: a handle of another kind, or not from the library at all. */
  CHECK_CODE(uq_ask((uq_context *)agent, CONFIRM, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_ask(ctx, CONFIRM, (uq_agent *)abort, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, (uq_abort *)ctx, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_agents_enter((uq_context *)&not_a_handle, agent, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_agents_enter(ctx, (uq_agent *)&not_a_handle, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_agents_enter(ctx, agent, (uq_agent *)&not_a_handle), UQ_INVALID_ARGUMENT);
  CHECK(uq_agent_id((uq_agent *)ctx) == NULL);
  CHECK(!uq_abort_is_triggered((uq_abort *)agent));
  uq_abort_trigger((uq_abort *)agent); /* ignored */
  uq_agent_free((uq_agent *)ctx);      /* ignored: not an agent */
  uq_context_free((uq_context *)&not_a_handle);
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &reg), UQ_OK); /* ctx still live */
  CHECK_CODE(uq_register_auto_responder(ctx, "skip", false, &reg), UQ_DUPLICATE_PROVIDER);
  /* Arguments are checked before the registration: an unknown policy is INVALID_ARGUMENT. */
  CHECK_CODE(uq_register_auto_responder(ctx, "fastest", false, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK_CODE(uq_register_auto_responder(ctx, "fastest", false, &reg), UQ_INVALID_ARGUMENT);

  /* Freed: every later use is rejected, a second free ignored. */
  uq_abort_free(abort);
  CHECK(!uq_abort_is_triggered(abort));
  uq_abort_trigger(abort);
  uq_abort_free(abort);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, abort, on_done, &done), UQ_INVALID_ARGUMENT);
  uq_agent_free(agent);
  CHECK(uq_agent_id(agent) == NULL);
  CHECK_CODE(uq_agents_enter(ctx, agent, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_ask(ctx, CONFIRM, agent, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  uq_agent_free(agent);
  uq_context_free(ctx);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_cancel(ctx, 1), UQ_INVALID_ARGUMENT);
  uq_context_free(ctx);
  CHECK(completion_calls(&done) == 0);
  completion_destroy(&done);
}

/* Asks CONFIRM with uq_ask_wait; returns the code and stores the JSON in *json. */
static uq_code ask_wait(uq_context *ctx, const char *request, const uq_agent *agent,
                        const uq_abort *abort, char **json) {
  *json = NULL;
  return uq_ask_wait(ctx, request, agent, abort, json);
}

static void test_agents_who_may_ask(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg;
  CHECK_CODE(uq_register_auto_responder(ctx, "recommended", false, &reg), UQ_OK);
  uq_agent *root = uq_agent_new("root", 0);
  uq_agent *child = uq_agent_new("child", 1);
  uq_agent *forged = uq_agent_new("root", 0); /* same id, another instance */
  uq_agent *resumed = uq_agent_new("resumed", 7);
  uq_agent *empty = uq_agent_new("", 0);
  CHECK(empty != NULL);
  CHECK_STR(uq_agent_id(root), "root");
  CHECK_STR(uq_agent_id(forged), "root");
  CHECK(uq_agent_id(root) != uq_agent_id(forged));
  char *json;

  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_OK);
  CHECK_CODE(uq_agents_enter(ctx, child, root), UQ_OK);
  CHECK_CODE(uq_agents_enter(ctx, resumed, NULL), UQ_OK);
  CHECK_CODE(uq_agents_enter(ctx, forged, NULL), UQ_AGENT_EXISTS);
  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_AGENT_EXISTS);

  CHECK_CODE(ask_wait(ctx, CONFIRM, root, NULL, &json), UQ_OK);
  CHECK_STR(json, CONFIRM_YES);
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, CONFIRM, resumed, NULL, &json), UQ_OK); /* depth is informational */
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, CONFIRM, child, NULL, &json), UQ_DELEGATED_CALLER);
  CHECK_STR(json,
            "{\"code\":\"DELEGATED_CALLER\",\"message\":\"human interaction is unavailable while "
            "the calling agent is owned by another live agent; include the unresolved question "
            "or decision in the child agent's final result\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, CONFIRM, forged, NULL, &json), UQ_CALLER_NOT_LIVE);
  CHECK_STR(json,
            "{\"code\":\"CALLER_NOT_LIVE\",\"message\":\"human interaction requires the exact "
            "live calling agent when an agent is supplied\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, CONFIRM, empty, NULL, &json), UQ_CALLER_NOT_LIVE);
  uq_string_free(json);

  /* Exiting the impostor leaves the live root alone; exit is idempotent. */
  CHECK_CODE(uq_agents_exit(ctx, forged), UQ_OK);
  CHECK_CODE(ask_wait(ctx, CONFIRM, root, NULL, &json), UQ_OK);
  uq_string_free(json);
  CHECK_CODE(uq_agents_exit(ctx, root), UQ_OK);
  CHECK_CODE(uq_agents_exit(ctx, root), UQ_OK);
  /* Stale (exited) agent. */
  CHECK_CODE(ask_wait(ctx, CONFIRM, root, NULL, &json), UQ_CALLER_NOT_LIVE);
  uq_string_free(json);
  /* A child stays a child when its owner exits. */
  CHECK_CODE(ask_wait(ctx, CONFIRM, child, NULL, &json), UQ_DELEGATED_CALLER);
  uq_string_free(json);
  /* The id is free again: another instance may enter, and ask. */
  CHECK_CODE(uq_agents_enter(ctx, forged, NULL), UQ_OK);
  CHECK_CODE(ask_wait(ctx, CONFIRM, forged, NULL, &json), UQ_OK);
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, CONFIRM, root, NULL, &json), UQ_CALLER_NOT_LIVE);
  uq_string_free(json);

  /* An agent is per context: live in one, not in another. */
  uq_context *other = uq_context_new();
  CHECK_CODE(uq_register_auto_responder(other, "first", false, &reg), UQ_OK);
  CHECK_CODE(ask_wait(other, CONFIRM, forged, NULL, &json), UQ_CALLER_NOT_LIVE);
  uq_string_free(json);
  uq_context_free(other);

  /* Freeing a handle does not exit the agent; the id stays taken in the context. */
  uq_agent_free(forged);
  uq_agent *again = uq_agent_new("root", 0);
  CHECK_CODE(uq_agents_enter(ctx, again, NULL), UQ_AGENT_EXISTS);
  uq_agent_free(again);

  uq_agent_free(root);
  uq_agent_free(child);
  uq_agent_free(resumed);
  uq_agent_free(empty);
  uq_context_free(ctx);
}

static void test_ask_checks_in_order(void) {
  uq_context *ctx = uq_context_new();
  uq_abort *abort = uq_abort_new();
  uq_abort_trigger(abort);
  CHECK(uq_abort_is_triggered(abort));
  uq_agent *stranger = uq_agent_new("stranger", 0);
  completion done;
  completion_init(&done);
  char *json;
  static const char *const empty = "{\"questions\":[]}";
  static const char *const dup =
      "{\"questions\":[{\"id\":\"a\",\"question\":\"A?\"},{\"id\":\"a\",\"question\":\"B?\"}]}";
  static const char *const bad_intent =
      "{\"questions\":[{\"id\":\"plan\",\"question\":\"Approve?\",\"detail\":\"the plan\","
      "\"options\":[{\"label\":\"Approve\"}],\"intent\":{\"kind\":\"plan-review\",\"approve\":"
      "\"Ship\"}}]}";

  /* Malformed input first, then the aborted signal, then emptiness, the caller, intents, ... */
  CHECK_CODE(ask_wait(ctx, "not json", stranger, abort, &json), UQ_INVALID_REQUEST);
  CHECK_CONTAINS(json, "\"message\":\"request is not valid JSON");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, "{\"questions\":[{\"question\":\"Q?\"}]}", NULL, NULL, &json),
             UQ_INVALID_REQUEST);
  CHECK_STR(json,
            "{\"code\":\"INVALID_REQUEST\",\"message\":\"questions[0].id must be a string\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, empty, stranger, abort, &json), UQ_ASK_ABORTED);
  CHECK_STR(json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_ABORTED "\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, empty, stranger, NULL, &json), UQ_EMPTY_QUESTIONS);
  CHECK_STR(json, "{\"code\":\"EMPTY_QUESTIONS\",\"message\":\"ask_user_question requires at least "
                  "one question\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, bad_intent, stranger, NULL, &json), UQ_CALLER_NOT_LIVE);
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, bad_intent, NULL, NULL, &json), UQ_BAD_INTENT);
  CHECK_STR(json,
            "{\"code\":\"BAD_INTENT\",\"message\":\"question plan declares intent plan-review "
            "whose approve label \\\"Ship\\\" names none of its options\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, dup, NULL, NULL, &json), UQ_INVALID_REQUEST);
  CHECK_STR(json, "{\"code\":\"INVALID_REQUEST\",\"message\":\"question id \\\"a\\\" appears more "
                  "than once\"}");
  uq_string_free(json);
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_NO_PROVIDER);
  CHECK_STR(json,
            "{\"code\":\"NO_PROVIDER\",\"message\":\"no user-questions provider is registered\"}");
  uq_string_free(json);

  /* The same through uq_ask: the code is returned and the callback never fires. */
  CHECK_CODE(uq_ask(ctx, "not json", NULL, NULL, on_done, &done), UQ_INVALID_REQUEST);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, abort, on_done, &done), UQ_ASK_ABORTED);
  CHECK_CODE(uq_ask(ctx, empty, NULL, NULL, on_done, &done), UQ_EMPTY_QUESTIONS);
  CHECK_CODE(uq_ask(ctx, CONFIRM, stranger, NULL, on_done, &done), UQ_CALLER_NOT_LIVE);
  CHECK_CODE(uq_ask(ctx, bad_intent, NULL, NULL, on_done, &done), UQ_BAD_INTENT);
  CHECK_CODE(uq_ask(ctx, dup, NULL, NULL, on_done, &done), UQ_INVALID_REQUEST);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_NO_PROVIDER);

  /* The provider is not reached when a check fails. */
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, abort, on_done, &done), UQ_ASK_ABORTED);
  CHECK_CODE(uq_ask(ctx, dup, NULL, NULL, on_done, &done), UQ_INVALID_REQUEST);
  CHECK(rec.asks == 0);
  CHECK(completion_calls(&done) == 0);

  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  uq_abort_free(abort);
  uq_agent_free(stranger);
  completion_destroy(&done);
}

static void test_auto_responder_and_registration(void) {
  uq_context *ctx = uq_context_new();
  uint64_t first, second;
  char *json;
  completion done;
  completion_init(&done);
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &first), UQ_OK);
  CHECK(first > 0);
  /* Answers before uq_ask returns, on this thread. */
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 1);
  CHECK(pthread_equal(done.thread, pthread_self()));
  CHECK_CODE(done.code, UQ_OK);
  CHECK_STR(done.json, CONFIRM_YES);

  recorder rec;
  recorder_init(&rec, ctx);
  CHECK_CODE(uq_register_auto_responder(ctx, "skip", false, &second), UQ_DUPLICATE_PROVIDER);
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &second), UQ_DUPLICATE_PROVIDER);
  CHECK(rec.releases == 0); /* not registered: release is not called */

  CHECK_CODE(uq_unregister_provider(ctx, first), UQ_OK);
  CHECK_CODE(uq_unregister_provider(ctx, first), UQ_OK); /* idempotent */
  CHECK_CODE(uq_unregister_provider(ctx, 0), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_unregister_provider(ctx, first + 100), UQ_INVALID_ARGUMENT);
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_NO_PROVIDER);
  uq_string_free(json);

  CHECK_CODE(uq_register_auto_responder(ctx, "skip", false, &second), UQ_OK);
  CHECK(second > first);
  CHECK_CODE(uq_unregister_provider(ctx, first), UQ_OK); /* stale: leaves the later one */
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_OK);
  CHECK_STR(json, "{\"answers\":[{\"id\":\"go\",\"selected\":[]}]}");
  uq_string_free(json);
  CHECK_CODE(uq_unregister_provider(ctx, second), UQ_OK);

  static const char *const plan =
      "{\"questions\":[{\"id\":\"plan\",\"question\":\"Approve the plan?\",\"detail\":\"# Plan\","
      "\"options\":[{\"label\":\"Approve (Recommended)\"},{\"label\":\"Revise\"}],"
      "\"intent\":{\"kind\":\"plan-review\",\"approve\":\"Approve (Recommended)\"}}]}";
  CHECK_CODE(uq_register_auto_responder(ctx, "recommended", false, &second), UQ_OK);
  CHECK_CODE(ask_wait(ctx, plan, NULL, NULL, &json), UQ_OK);
  CHECK_STR(json, "{\"answers\":[{\"id\":\"plan\",\"selected\":[\"Revise\"]}]}");
  uq_string_free(json);
  CHECK_CODE(uq_unregister_provider(ctx, second), UQ_OK);
  CHECK_CODE(uq_register_auto_responder(ctx, "recommended", true, &second), UQ_OK);
  CHECK_CODE(ask_wait(ctx, plan, NULL, NULL, &json), UQ_OK);
  CHECK_STR(json, "{\"answers\":[{\"id\":\"plan\",\"selected\":[\"Approve (Recommended)\"]}]}");
  uq_string_free(json);

  /* Registration ids are per context. */
  uq_context *other = uq_context_new();
  CHECK_CODE(uq_unregister_provider(other, second), UQ_INVALID_ARGUMENT);
  uq_context_free(other);

  uq_context_free(ctx);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

static void test_provider_answers_inside_ask(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  rec.answer_inline = CONFIRM_NO;
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  uq_agent *root = uq_agent_new("root", 3);
  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_OK);
  completion done;
  completion_init(&done);
  CHECK_CODE(uq_ask(ctx, CONFIRM, root, NULL, on_done, &done), UQ_OK);
  CHECK_CODE(rec.inline_code, UQ_OK);
  CHECK(completion_calls(&done) == 1); /* before uq_ask returned */
  CHECK_CODE(done.code, UQ_OK);
  CHECK_STR(done.json, CONFIRM_NO);
  CHECK(rec.last_ticket == 1);
  CHECK_STR(rec.last_request,
            "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed?\",\"options\":[{\"label\":"
            "\"Yes (Recommended)\"},{\"label\":\"No\"}]}],\"agentId\":\"root\"}");
  /* Without an agent there is no agentId; tickets increase. */
  char *json;
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_OK);
  CHECK_STR(json, CONFIRM_NO);
  uq_string_free(json);
  CHECK(rec.last_ticket == 2);
  CHECK(strstr(rec.last_request, "agentId") == NULL);
  /* Cancelling from inside ask. */
  rec.answer_inline = NULL;
  rec.cancel_inline = 1;
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_ASK_CANCELLED);
  CHECK_STR(json,
            "{\"code\":\"ASK_CANCELLED\",\"message\":\"the user cancelled ask_user_question\"}");
  uq_string_free(json);
  CHECK(rec.withdraws == 0);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK(rec.releases == 1);
  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  uq_agent_free(root);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

static void test_inbox_settlement_codes(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  char *pending = NULL;
  CHECK_CODE(uq_pending(ctx, &pending), UQ_OK);
  CHECK_STR(pending, "[]");
  uq_string_free(pending);

  completion a, b, c;
  completion_init(&a);
  completion_init(&b);
  completion_init(&c);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &a), UQ_OK);
  uint64_t ta = rec.last_ticket;
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &b), UQ_OK);
  uint64_t tb = rec.last_ticket;
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &c), UQ_OK);
  uint64_t tc = rec.last_ticket;
  CHECK(ta == 1 && tb == 2 && tc == 3);
  CHECK(completion_calls(&a) == 0);

  CHECK_CODE(uq_pending(ctx, &pending), UQ_OK);
  CHECK_CONTAINS(pending, "[{\"ticket\":1,\"questions\":[{\"id\":\"go\"");
  CHECK_CONTAINS(pending, "{\"ticket\":3,");
  uq_string_free(pending);

  /* BAD_ANSWER with the reason; the question stays pending. */
  char *reason = NULL;
  CHECK_CODE(
      uq_answer(ctx, ta, "{\"answers\":[{\"id\":\"go\",\"selected\":[\"Maybe\"]}]}", &reason),
      UQ_BAD_ANSWER);
  CHECK(reason != NULL && strlen(reason) > 0);
  CHECK_CONTAINS(reason, "Maybe");
  uq_string_free(reason);
  CHECK_CODE(uq_answer(ctx, ta, "{\"answers\":\"nope\"}", &reason), UQ_BAD_ANSWER);
  CHECK_STR(reason, "answers must be an array");
  uq_string_free(reason);
  CHECK_CODE(uq_answer(ctx, ta, "{\"answers\":[]}", NULL), UQ_BAD_ANSWER);
  CHECK(completion_calls(&a) == 0);
  /* The first valid answer wins. */
  reason = (char *)"untouched";
  CHECK_CODE(uq_answer(ctx, ta, CONFIRM_YES, &reason), UQ_OK);
  CHECK(reason == NULL);
  CHECK(completion_calls(&a) == 1);
  CHECK_STR(a.json, CONFIRM_YES);
  CHECK_CODE(uq_answer(ctx, ta, CONFIRM_NO, &reason), UQ_ALREADY_RESOLVED);
  CHECK_STR(reason, "question 1 is already resolved");
  uq_string_free(reason);
  CHECK_CODE(uq_cancel(ctx, ta), UQ_ALREADY_RESOLVED);
  CHECK_CODE(uq_fail(ctx, ta, "late"), UQ_ALREADY_RESOLVED);
  CHECK_CODE(uq_answer(ctx, 99, CONFIRM_YES, &reason), UQ_NOT_PENDING);
  CHECK_STR(reason, "question 99 is not pending");
  uq_string_free(reason);
  CHECK_CODE(uq_cancel(ctx, 99), UQ_NOT_PENDING);
  CHECK_CODE(uq_fail(ctx, 0, "x"), UQ_NOT_PENDING);

  CHECK_CODE(uq_cancel(ctx, tb), UQ_OK);
  CHECK(completion_calls(&b) == 1);
  CHECK_CODE(b.code, UQ_ASK_CANCELLED);
  CHECK_STR(b.json,
            "{\"code\":\"ASK_CANCELLED\",\"message\":\"the user cancelled ask_user_question\"}");
  CHECK_CODE(uq_fail(ctx, tc, "the terminal went away"), UQ_OK);
  CHECK_CODE(c.code, UQ_PROVIDER_FAILED);
  CHECK_STR(c.json, "{\"code\":\"PROVIDER_FAILED\",\"message\":\"the terminal went away\"}");
  CHECK(completion_calls(&a) == 1 && completion_calls(&b) == 1 && completion_calls(&c) == 1);
  CHECK(rec.withdraws == 0);
  CHECK_CODE(uq_pending(ctx, &pending), UQ_OK);
  CHECK_STR(pending, "[]");
  uq_string_free(pending);

  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  completion_destroy(&a);
  completion_destroy(&b);
  completion_destroy(&c);
}

/* A worker that answers every pending question (via uq_pending) after a short delay. */
typedef struct {
  uq_context *ctx;
  recorder *rec;
  int answered;
  int stop;
  pthread_mutex_t mu;
} answerer;

static uint64_t first_pending_ticket(uq_context *ctx) {
  char *pending = NULL;
  uint64_t ticket = 0;
  if (uq_pending(ctx, &pending) == UQ_OK) {
    const char *at = strstr(pending, "\"ticket\":");
    if (at)
      ticket = strtoull(at + 9, NULL, 10);
  }
  uq_string_free(pending);
  return ticket;
}

static void *answer_one_later(void *arg) {
  answerer *w = arg;
  for (int i = 0; i < 5000; i++) {
    uint64_t ticket = first_pending_ticket(w->ctx);
    if (ticket) {
      usleep(2000);
      if (uq_answer(w->ctx, ticket, CONFIRM_NO, NULL) == UQ_OK) {
        w->answered++;
        return NULL;
      }
    }
    usleep(1000);
  }
  return NULL;
}

static void test_answer_from_another_thread(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);

  /* uq_ask_wait blocks until a worker thread answers. */
  answerer w = {.ctx = ctx, .rec = &rec};
  pthread_t worker;
  pthread_create(&worker, NULL, answer_one_later, &w);
  char *json = NULL;
  CHECK_CODE(uq_ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_OK);
  CHECK_STR(json, CONFIRM_NO);
  uq_string_free(json);
  pthread_join(worker, NULL);
  CHECK(w.answered == 1);

  /* uq_ask: the callback fires on the worker thread, inside its uq_answer. */
  completion done;
  completion_init(&done);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 0);
  w.answered = 0;
  pthread_create(&worker, NULL, answer_one_later, &w);
  pthread_join(worker, NULL);
  CHECK(w.answered == 1);
  CHECK(completion_calls(&done) == 1); /* already fired when uq_answer returned */
  CHECK(pthread_equal(done.thread, worker));
  CHECK_CODE(done.code, UQ_OK);
  CHECK_STR(done.json, CONFIRM_NO);

  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

typedef struct {
  uq_context *ctx;
  const uq_abort *abort;
  uq_code code;
  char *json;
} waiter;

static void *wait_for_answer(void *arg) {
  waiter *w = arg;
  w->code = uq_ask_wait(w->ctx, CONFIRM, NULL, w->abort, &w->json);
  return NULL;
}

static void wait_until_pending(uq_context *ctx) {
  for (int i = 0; i < 10000 && first_pending_ticket(ctx) == 0; i++)
    usleep(500);
}

static void test_abort_while_waiting(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);

  /* uq_ask: triggering settles the ask at once, on the triggering thread. */
  uq_abort *abort = uq_abort_new();
  completion done;
  completion_init(&done);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, abort, on_done, &done), UQ_OK);
  uint64_t ticket = rec.last_ticket;
  CHECK(completion_calls(&done) == 0);
  uq_abort_trigger(abort);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_ASK_ABORTED);
  CHECK_STR(done.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_ABORTED "\"}");
  CHECK(rec.withdraws == 1 && rec.last_withdrawn == ticket);
  /* The late answer is refused; the callback does not fire again. */
  CHECK_CODE(uq_answer(ctx, ticket, CONFIRM_YES, NULL), UQ_ALREADY_RESOLVED);
  uq_abort_trigger(abort);
  CHECK(completion_calls(&done) == 1);
  /* A triggered abort fails later asks at once. */
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, abort, on_done, &done), UQ_ASK_ABORTED);
  uq_abort_free(abort);

  /* uq_ask_wait on another thread, aborted from this one. */
  abort = uq_abort_new();
  waiter w = {.ctx = ctx, .abort = abort};
  pthread_t t;
  pthread_create(&t, NULL, wait_for_answer, &w);
  wait_until_pending(ctx);
  uq_abort_trigger(abort);
  pthread_join(t, NULL);
  CHECK_CODE(w.code, UQ_ASK_ABORTED);
  CHECK_STR(w.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_ABORTED "\"}");
  uq_string_free(w.json);
  CHECK(rec.withdraws == 2);
  uq_abort_free(abort);

  /* Freeing an abort does not trigger it: the ask keeps waiting. */
  abort = uq_abort_new();
  completion kept;
  completion_init(&kept);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, abort, on_done, &kept), UQ_OK);
  uq_abort_free(abort);
  CHECK(completion_calls(&kept) == 0);
  CHECK_CODE(uq_answer(ctx, rec.last_ticket, CONFIRM_YES, NULL), UQ_OK);
  CHECK(completion_calls(&kept) == 1);
  CHECK_CODE(kept.code, UQ_OK);

  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  completion_destroy(&done);
  completion_destroy(&kept);
}

static void test_unregister_with_asks_waiting(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  completion a, b;
  completion_init(&a);
  completion_init(&b);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &a), UQ_OK);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &b), UQ_OK);
  /* uq_ask_wait on another thread waits too. */
  waiter w = {.ctx = ctx};
  pthread_t t;
  pthread_create(&t, NULL, wait_for_answer, &w);
  for (int i = 0; i < 10000 && rec_get(&rec, &rec.asks) < 3; i++)
    usleep(500);
  CHECK(rec_get(&rec, &rec.asks) == 3);
  CHECK(rec.releases == 0);

  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  pthread_join(t, NULL);
  CHECK(completion_calls(&a) == 1 && completion_calls(&b) == 1);
  CHECK_CODE(a.code, UQ_ASK_ABORTED);
  CHECK_STR(a.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  CHECK_STR(b.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  CHECK_CODE(w.code, UQ_ASK_ABORTED);
  CHECK_STR(w.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  uq_string_free(w.json);
  CHECK(rec.withdraws == 3);
  CHECK(rec_get(&rec, &rec.releases) == 1);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK_CODE(uq_answer(ctx, 1, CONFIRM_YES, NULL), UQ_ALREADY_RESOLVED);
  char *json;
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_NO_PROVIDER);
  uq_string_free(json);

  /* A new registration on the same context gets new tickets. */
  recorder rec2;
  recorder_init(&rec2, ctx);
  uint64_t reg2;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec2, &reg2), UQ_OK);
  CHECK(reg2 != reg);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &a), UQ_OK);
  CHECK(rec2.last_ticket == 4);
  CHECK(rec.releases == 1);
  uq_context_free(ctx);
  CHECK(completion_calls(&a) == 2);
  CHECK_STR(a.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  CHECK(rec2.withdraws == 1 && rec2.releases == 1);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  recorder_destroy(&rec2);
  completion_destroy(&a);
  completion_destroy(&b);
}

static void test_context_free_with_asks_waiting(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  uq_agent *root = uq_agent_new("root", 0);
  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_OK);
  uq_abort *abort = uq_abort_new();
  completion a, b;
  completion_init(&a);
  completion_init(&b);
  CHECK_CODE(uq_ask(ctx, CONFIRM, root, abort, on_done, &a), UQ_OK);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &b), UQ_OK);
  uq_context_free(ctx);
  CHECK(completion_calls(&a) == 1 && completion_calls(&b) == 1);
  CHECK_STR(a.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  CHECK_STR(b.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  CHECK(rec.withdraws == 2);
  CHECK(rec.releases == 1);
  /* The abort and the agent outlive the context; triggering now does nothing more. */
  uq_abort_trigger(abort);
  CHECK(completion_calls(&a) == 1);
  CHECK_STR(uq_agent_id(root), "root");
  uq_abort_free(abort);
  uq_agent_free(root);
  recorder_destroy(&rec);
  completion_destroy(&a);
  completion_destroy(&b);
}

/* Re-entrancy: a completion that asks again, a provider that inspects and unregisters. */
typedef struct {
  uq_context *ctx;
  int depth;
  int calls;
  uq_code last;
} chain;

static void ask_again(void *user_data, uq_code code, const char *json) {
  chain *c = user_data;
  (void)json;
  c->calls++;
  c->last = code;
  if (c->depth-- > 0) {
    uq_code again = uq_ask(c->ctx, CONFIRM, NULL, NULL, ask_again, c);
    if (again != UQ_OK)
      c->last = again;
  }
}

typedef struct {
  uq_context *ctx;
  uint64_t registration;
  int releases;
  int withdraws;
  uq_code pending_code;
} self_unregistering;

static void unregister_inside_ask(void *user_data, uint64_t ticket, const char *request_json) {
  self_unregistering *s = user_data;
  (void)ticket;
  (void)request_json;
  char *pending = NULL;
  s->pending_code = uq_pending(s->ctx, &pending);
  uq_string_free(pending);
  uq_unregister_provider(s->ctx, s->registration);
}

static void count_withdraw(void *user_data, uint64_t ticket) {
  (void)ticket;
  ((self_unregistering *)user_data)->withdraws++;
}

static void count_release(void *user_data) {
  ((self_unregistering *)user_data)->releases++;
}

static void free_context_in_completion(void *user_data, uq_code code, const char *json) {
  (void)code;
  (void)json;
  uq_context_free((uq_context *)user_data);
}

static void test_callbacks_reenter_the_library(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg;
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &reg), UQ_OK);
  chain c = {.ctx = ctx, .depth = 50};
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, ask_again, &c), UQ_OK);
  CHECK(c.calls == 51);
  CHECK_CODE(c.last, UQ_OK);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);

  /* A provider that unregisters itself from inside ask: the ask settles as disposed. */
  self_unregistering s = {.ctx = ctx};
  uq_provider p = {unregister_inside_ask, count_withdraw, count_release};
  CHECK_CODE(uq_register_provider(ctx, &p, &s, &s.registration), UQ_OK);
  char *json;
  CHECK_CODE(ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_ASK_ABORTED);
  CHECK_STR(json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  uq_string_free(json);
  CHECK_CODE(s.pending_code, UQ_OK);
  CHECK(s.withdraws == 1);
  CHECK(s.releases == 1);

  /* A completion may free the context it came from. */
  uq_context *doomed = uq_context_new();
  CHECK_CODE(uq_register_auto_responder(doomed, "first", false, &reg), UQ_OK);
  CHECK_CODE(uq_ask(doomed, CONFIRM, NULL, NULL, free_context_in_completion, doomed), UQ_OK);
  CHECK_CODE(uq_ask(doomed, CONFIRM, NULL, NULL, free_context_in_completion, doomed),
             UQ_INVALID_ARGUMENT);
  uq_context_free(ctx);
}

/* Re-entrancy while an ask is being delivered or settled: a provider that frees its context
 * or triggers the ask's abort from inside `ask`, one that answers from inside `withdraw`, and
 * a `release` that registers the next provider. */
typedef struct {
  uq_context *ctx;
  uq_abort *abort;
  int asks;
  int withdraws;
  int releases;
  uq_code answer_in_withdraw;
  uq_code register_in_release;
  uint64_t next_registration;
} reentrant;

static void count_release_r(void *user_data) {
  ((reentrant *)user_data)->releases++;
}

static void free_context_inside_ask(void *user_data, uint64_t ticket, const char *request_json) {
  reentrant *r = user_data;
  (void)ticket;
  (void)request_json;
  r->asks++;
  uq_context_free(r->ctx);
}

static void trigger_abort_inside_ask(void *user_data, uint64_t ticket, const char *request_json) {
  reentrant *r = user_data;
  (void)ticket;
  (void)request_json;
  r->asks++;
  uq_abort_trigger(r->abort);
}

static void ignore_ask(void *user_data, uint64_t ticket, const char *request_json) {
  (void)ticket;
  (void)request_json;
  ((reentrant *)user_data)->asks++;
}

static void answer_inside_withdraw(void *user_data, uint64_t ticket) {
  reentrant *r = user_data;
  r->withdraws++;
  r->answer_in_withdraw = uq_answer(r->ctx, ticket, CONFIRM_YES, NULL);
}

static void count_reentrant_withdraw(void *user_data, uint64_t ticket) {
  (void)ticket;
  ((reentrant *)user_data)->withdraws++;
}

static void register_inside_release(void *user_data) {
  reentrant *r = user_data;
  r->releases++;
  r->register_in_release =
      uq_register_auto_responder(r->ctx, "first", false, &r->next_registration);
}

static void test_callbacks_reenter_while_settling(void) {
  completion done;
  uint64_t reg = 0;

  /* The context freed from inside the provider's `ask`: the ask settles as disposed, once,
   * after `withdraw`; `release` runs once; the context is gone. */
  reentrant r = {.ctx = uq_context_new(), .answer_in_withdraw = UQ_INTERNAL};
  uq_provider frees = {free_context_inside_ask, count_reentrant_withdraw, count_release_r};
  completion_init(&done);
  CHECK_CODE(uq_register_provider(r.ctx, &frees, &r, &reg), UQ_OK);
  CHECK_CODE(uq_ask(r.ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_OK);
  CHECK(r.asks == 1 && r.withdraws == 1 && r.releases == 1);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_ASK_ABORTED);
  CHECK_STR(done.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_DISPOSED "\"}");
  CHECK_CODE(uq_ask(r.ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK(completion_calls(&done) == 1);
  completion_destroy(&done);

  /* The ask's own abort triggered from inside `ask`: it settles ASK_ABORTED before uq_ask
   * returns, once, and leaves nothing pending. */
  r = (reentrant){.ctx = uq_context_new(), .abort = uq_abort_new()};
  uq_provider aborts = {trigger_abort_inside_ask, count_reentrant_withdraw, NULL};
  completion_init(&done);
  CHECK_CODE(uq_register_provider(r.ctx, &aborts, &r, &reg), UQ_OK);
  CHECK_CODE(uq_ask(r.ctx, CONFIRM, NULL, r.abort, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_ASK_ABORTED);
  CHECK_STR(done.json, "{\"code\":\"ASK_ABORTED\",\"message\":\"" MSG_ABORTED "\"}");
  CHECK(r.asks == 1 && r.withdraws == 1);
  char *pending = NULL;
  CHECK_CODE(uq_pending(r.ctx, &pending), UQ_OK);
  CHECK_STR(pending, "[]");
  uq_string_free(pending);
  uq_abort_free(r.abort);
  uq_context_free(r.ctx);
  completion_destroy(&done);

  /* Answering from inside `withdraw` is too late: ALREADY_RESOLVED, and the asker gets the
   * withdrawal, once. */
  r = (reentrant){
      .ctx = uq_context_new(), .abort = uq_abort_new(), .answer_in_withdraw = UQ_INTERNAL};
  uq_provider answers_late = {ignore_ask, answer_inside_withdraw, NULL};
  completion_init(&done);
  CHECK_CODE(uq_register_provider(r.ctx, &answers_late, &r, &reg), UQ_OK);
  CHECK_CODE(uq_ask(r.ctx, CONFIRM, NULL, r.abort, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 0);
  uq_abort_trigger(r.abort);
  CHECK(r.withdraws == 1);
  CHECK_CODE(r.answer_in_withdraw, UQ_ALREADY_RESOLVED);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_ASK_ABORTED);
  uq_abort_free(r.abort);
  uq_context_free(r.ctx);
  completion_destroy(&done);

  /* `release` may register the next provider while its registration is being removed; while
   * its context is being freed that is INVALID_ARGUMENT (the context is already gone). */
  r = (reentrant){.ctx = uq_context_new(), .register_in_release = UQ_INTERNAL};
  uq_provider hands_over = {ignore_ask, NULL, register_inside_release};
  CHECK_CODE(uq_register_provider(r.ctx, &hands_over, &r, &reg), UQ_OK);
  CHECK_CODE(uq_unregister_provider(r.ctx, reg), UQ_OK);
  CHECK(r.releases == 1);
  CHECK_CODE(r.register_in_release, UQ_OK);
  CHECK(r.next_registration == reg + 1);
  char *json = NULL;
  CHECK_CODE(ask_wait(r.ctx, CONFIRM, NULL, NULL, &json), UQ_OK); /* the auto-responder */
  CHECK_STR(json, CONFIRM_YES);
  uq_string_free(json);
  CHECK_CODE(uq_unregister_provider(r.ctx, r.next_registration), UQ_OK);
  CHECK_CODE(uq_register_provider(r.ctx, &hands_over, &r, &reg), UQ_OK);
  r.register_in_release = UQ_INTERNAL;
  uq_context_free(r.ctx);
  CHECK(r.releases == 2);
  CHECK_CODE(r.register_in_release, UQ_INVALID_ARGUMENT);
}

static void test_tool(void) {
  uq_context *ctx = uq_context_new();
  completion done;
  completion_init(&done);
  static const char *const args =
      "{\"questions\":[{\"id\":\"pkg\",\"question\":\"Which package manager?\",\"options\":"
      "[{\"label\":\"pnpm (Recommended)\"},{\"label\":\"npm\"}],\"multi_select\":false}]}";
  CHECK_CODE(uq_tool_execute(ctx, args, NULL, NULL, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_NO_PROVIDER);
  CHECK_STR(
      done.json,
      "{\"isError\":true,\"error\":{\"name\":\"UserQuestionError\",\"code\":\"NO_PROVIDER\","
      "\"message\":\"no user-questions provider is registered\"},\"content\":[{\"type\":\"text\","
      "\"text\":\"Error: no user-questions provider is registered\"}]}");

  uint64_t reg;
  CHECK_CODE(uq_register_auto_responder(ctx, "recommended", false, &reg), UQ_OK);
  CHECK_CODE(uq_tool_execute(ctx, args, NULL, NULL, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 2);
  CHECK_CODE(done.code, UQ_OK);
  CHECK_STR(done.json,
            "{\"isError\":false,\"value\":{\"answers\":[{\"id\":\"pkg\",\"selected\":[\"pnpm "
            "(Recommended)\"]}]},"
            "\"content\":[{\"type\":\"text\",\"text\":\"{\\\"answers\\\":[{\\\"id\\\":\\\"pkg\\\","
            "\\\"selected\\\":[\\\"pnpm (Recommended)\\\"]}]}\"}]}");

  CHECK_CODE(uq_tool_execute(ctx, "{\"questions\":\"none\"}", NULL, NULL, on_done, &done), UQ_OK);
  CHECK_CODE(done.code, UQ_INVALID_REQUEST);
  CHECK_CONTAINS(
      done.json,
      "\"isError\":true,\"error\":{\"name\":\"UserQuestionError\",\"code\":\"INVALID_REQUEST\"");
  CHECK_CODE(uq_tool_execute(ctx, "not json", NULL, NULL, on_done, &done), UQ_OK);
  CHECK_CODE(done.code, UQ_INVALID_REQUEST);

  uq_agent *root = uq_agent_new("root", 0);
  uq_agent *child = uq_agent_new("child", 1);
  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_OK);
  CHECK_CODE(uq_agents_enter(ctx, child, root), UQ_OK);
  CHECK_CODE(uq_tool_execute(ctx, args, child, NULL, on_done, &done), UQ_OK);
  CHECK_CODE(done.code, UQ_DELEGATED_CALLER);
  CHECK_CODE(uq_tool_execute(ctx, args, root, NULL, on_done, &done), UQ_OK);
  CHECK_CODE(done.code, UQ_OK);

  /* An abort withdraws a tool call waiting on a C provider. */
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  recorder rec;
  recorder_init(&rec, ctx);
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  uq_abort *abort = uq_abort_new();
  int before = completion_calls(&done);
  CHECK_CODE(uq_tool_execute(ctx, args, root, abort, on_done, &done), UQ_OK);
  CHECK_CONTAINS(rec.last_request, "\"agentId\":\"root\"");
  CHECK(completion_calls(&done) == before);
  uq_abort_trigger(abort);
  CHECK(completion_calls(&done) == before + 1);
  CHECK_CODE(done.code, UQ_ASK_ABORTED);
  CHECK_CONTAINS(done.json,
                 "\"content\":[{\"type\":\"text\",\"text\":\"Error: " MSG_ABORTED "\"}]");

  uq_abort_free(abort);
  uq_agent_free(root);
  uq_agent_free(child);
  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

/* Races: many askers, an answering thread and an aborting thread; every ask settles once. */
typedef struct {
  uq_context *ctx;
  int asks;
  int ok;
  int aborted;
  int other;
} asker;

static void *ask_many(void *arg) {
  asker *a = arg;
  for (int i = 0; i < a->asks; i++) {
    uq_abort *abort = uq_abort_new();
    completion done;
    completion_init(&done);
    uq_code code = uq_ask(a->ctx, CONFIRM, NULL, abort, on_done, &done);
    if (code == UQ_OK) {
      if (i % 3 == 0)
        uq_abort_trigger(abort); /* races with the answering thread */
      if (completion_wait(&done) != 1)
        a->other++;
      usleep(100);
      if (completion_calls(&done) != 1)
        a->other++; /* exactly once */
      if (done.code == UQ_OK)
        a->ok++;
      else if (done.code == UQ_ASK_ABORTED)
        a->aborted++;
      else
        a->other++;
    } else {
      a->other++;
    }
    uq_abort_free(abort);
    completion_destroy(&done);
  }
  return NULL;
}

static void *answer_everything(void *arg) {
  answerer *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    int stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    if (stop)
      return NULL;
    uint64_t ticket = first_pending_ticket(w->ctx);
    if (ticket) {
      uq_code code = uq_answer(w->ctx, ticket, CONFIRM_YES, NULL);
      if (code == UQ_OK)
        w->answered++;
    } else {
      usleep(50);
    }
  }
}

static void test_races_settle_exactly_once(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  answerer w = {.ctx = ctx, .rec = &rec};
  pthread_mutex_init(&w.mu, NULL);
  pthread_t answering;
  pthread_create(&answering, NULL, answer_everything, &w);
  enum { THREADS = 4 };
  asker askers[THREADS];
  pthread_t threads[THREADS];
  int per_thread = rounds(60);
  for (int i = 0; i < THREADS; i++) {
    askers[i] = (asker){.ctx = ctx, .asks = per_thread};
    pthread_create(&threads[i], NULL, ask_many, &askers[i]);
  }
  int ok = 0, aborted = 0, other = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    ok += askers[i].ok;
    aborted += askers[i].aborted;
    other += askers[i].other;
  }
  pthread_mutex_lock(&w.mu);
  w.stop = 1;
  pthread_mutex_unlock(&w.mu);
  pthread_join(answering, NULL);
  CHECK(other == 0);
  CHECK(ok + aborted == THREADS * per_thread);
  CHECK(ok == w.answered);
  CHECK(aborted == rec_get(&rec, &rec.withdraws));
  CHECK(aborted >= 1);
  uq_context_free(ctx);
  CHECK(rec.releases == 1);
  pthread_mutex_destroy(&w.mu);
  recorder_destroy(&rec);
}

/* Unregister racing with an answer: release still fires exactly once, after the last callback. */
typedef struct {
  uq_context *ctx;
  int delay_us;
  uq_code code;
} late_answer;

static void *answer_ticket_1(void *arg) {
  late_answer *l = arg;
  usleep(l->delay_us);
  l->code = uq_answer(l->ctx, 1, CONFIRM_YES, NULL);
  return NULL;
}

static void test_unregister_races_with_answers(void) {
  int n = rounds(40);
  for (int round = 0; round < n; round++) {
    uq_context *ctx = uq_context_new();
    recorder rec;
    recorder_init(&rec, ctx);
    uint64_t reg;
    CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
    completion done;
    completion_init(&done);
    CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &done), UQ_OK);
    late_answer l = {.ctx = ctx, .delay_us = (round % 4) * 300};
    pthread_t t;
    pthread_create(&t, NULL, answer_ticket_1, &l);
    usleep((round % 3) * 300);
    CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
    pthread_join(t, NULL);
    CHECK(completion_calls(&done) == 1);
    CHECK(l.code == UQ_OK || l.code == UQ_ALREADY_RESOLVED);
    CHECK((done.code == UQ_OK) == (l.code == UQ_OK));
    CHECK(done.code == UQ_OK || done.code == UQ_ASK_ABORTED);
    CHECK((done.code == UQ_ASK_ABORTED) == (rec_get(&rec, &rec.withdraws) == 1));
    CHECK(rec_get(&rec, &rec.releases) == 1);
    uq_context_free(ctx);
    CHECK(rec.releases == 1);
    recorder_destroy(&rec);
    completion_destroy(&done);
  }
}

/* A ticket belongs to its context: another context never settles it. */
static void test_tickets_of_another_context(void) {
  uq_context *a = uq_context_new();
  uq_context *b = uq_context_new();
  recorder rec_a, rec_b;
  recorder_init(&rec_a, a);
  recorder_init(&rec_b, b);
  uint64_t reg = 0;
  CHECK_CODE(uq_register_provider(a, &RECORDER, &rec_a, &reg), UQ_OK);
  CHECK_CODE(uq_register_provider(b, &RECORDER, &rec_b, &reg), UQ_OK);
  completion done;
  completion_init(&done);
  CHECK_CODE(uq_ask(a, CONFIRM, NULL, NULL, on_done, &done), UQ_OK);
  uint64_t ticket = rec_a.last_ticket;
  char *reason = NULL;
  CHECK_CODE(uq_answer(b, ticket, "{\"answers\":[{\"id\":\"go\",\"selected\":[]}]}", &reason),
             UQ_NOT_PENDING);
  CHECK_STR(reason, "question 1 is not pending");
  uq_string_free(reason);
  CHECK_CODE(uq_cancel(b, ticket), UQ_NOT_PENDING);
  CHECK_CODE(uq_fail(b, ticket, "not yours"), UQ_NOT_PENDING);
  char *pending = NULL;
  CHECK_CODE(uq_pending(b, &pending), UQ_OK);
  CHECK_STR(pending, "[]");
  uq_string_free(pending);
  CHECK(completion_calls(&done) == 0);
  /* The owner still settles it. */
  CHECK_CODE(uq_answer(a, ticket, "{\"answers\":[{\"id\":\"go\",\"selected\":[]}]}", NULL), UQ_OK);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(done.code, UQ_OK);
  uq_context_free(b);
  uq_context_free(a);
  recorder_destroy(&rec_a);
  recorder_destroy(&rec_b);
  completion_destroy(&done);
}

int main(void) {
  struct {
    const char *name;
    void (*run)(void);
  } tests[] = {
      {"version, code names, tool definition", test_version_names_and_definition},
      {"NULL arguments; _free(NULL)", test_null_arguments_and_free_null},
      {"invalid UTF-8 arguments", test_invalid_utf8_arguments},
      {"foreign and freed handles", test_foreign_and_freed_handles},
      {"tickets of another context", test_tickets_of_another_context},
      {"agents: root, child, forged, stale", test_agents_who_may_ask},
      {"ask checks in order", test_ask_checks_in_order},
      {"auto-responder and registrations", test_auto_responder_and_registration},
      {"provider answers inside ask", test_provider_answers_inside_ask},
      {"inbox settlement codes", test_inbox_settlement_codes},
      {"answer from another pthread", test_answer_from_another_thread},
      {"abort while waiting", test_abort_while_waiting},
      {"unregister with asks waiting", test_unregister_with_asks_waiting},
      {"context free with asks waiting", test_context_free_with_asks_waiting},
      {"callbacks re-enter the library", test_callbacks_reenter_the_library},
      {"callbacks re-enter while an ask settles", test_callbacks_reenter_while_settling},
      {"tool", test_tool},
      {"races settle exactly once", test_races_settle_exactly_once},
      {"unregister races with answers", test_unregister_races_with_answers},
  };
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    int before = failures;
    tests[i].run();
    printf("%s %s\n", failures == before ? "ok  " : "FAIL", tests[i].name);
  }
  if (failures) {
    printf("%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C ABI tests passed\n");
  return 0;
}
