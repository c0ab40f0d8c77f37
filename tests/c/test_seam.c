/*
 * Tests of the C ABI's 0.2 surface (docs/reference.md sections 16-18), in C11: deadlines
 * ("timeoutMs", UQ_ASK_TIMED_OUT, uq_extend), "key", plan review (uq_review_plan), the journal
 * (uq_context_set_journal, uq_journal_errors), the error JSON of asks that fail at once
 * (uq_ask_with_error and friends), the version macros, and the order of section 4.7 for a C
 * provider: its withdraw callback has run before the asker's callback fires.
 *
 * Built and run by scripts/test-c like test_abi.c (shared, static, ASan+UBSan, valgrind).
 * Deadlines here are short and only outcomes and order are checked, never durations.
 */
#include "support.h"

#define MSG_TIMED_OUT(ms) "the user did not answer ask_user_question within " #ms " ms"
#define MSG_BAD_TIMEOUT   "timeoutMs must be an integer from 1 to 2147483647"
#define MSG_BAD_MS        "ms must be an integer from 1 to 2147483647"

/* CONFIRM with extra request fields spliced in before the closing brace. */
#define CONFIRM_WITH(fields)                                  \
  "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed?\"," \
  "\"options\":[{\"label\":\"Yes (Recommended)\"},{\"label\":\"No\"}]}]," fields "}"

/* A completion that also notes how many withdrawals its recorder had seen when it fired. */
typedef struct {
  completion done;
  recorder *rec;
  int withdraws_before;
} ordered;

static void on_done_ordered(void *user_data, uq_code code, const char *json) {
  ordered *o = user_data;
  o->withdraws_before = rec_get(o->rec, &o->rec->withdraws);
  on_done(&o->done, code, json);
}

/* Whether `s` is RFC 3339 UTC with milliseconds: 2026-11-30T17:02:03.456Z. */
static int is_rfc3339_millis(const char *s) {
  static const char *const shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (s == NULL || strlen(s) != strlen(shape))
    return 0;
  for (size_t i = 0; shape[i]; i++) {
    if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
      return 0;
  }
  return 1;
}

/* The string value of "key":"…" in `json`, copied into `out` (empty when absent). */
static void json_string_field(const char *json, const char *key, char *out, size_t size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  out[0] = 0;
  const char *at = json ? strstr(json, pattern) : NULL;
  if (!at)
    return;
  at += strlen(pattern);
  size_t n = 0;
  while (at[n] && at[n] != '"' && n + 1 < size)
    n++;
  memcpy(out, at, n);
  out[n] = 0;
}

static void test_version_macros(void) {
  char version[64];
  snprintf(version, sizeof version, "%d.%d.%d", UQ_VERSION_MAJOR, UQ_VERSION_MINOR,
           UQ_VERSION_PATCH);
  CHECK_STR(uq_version(), version);
  CHECK_STR(uq_code_name(UQ_ASK_TIMED_OUT), "ASK_TIMED_OUT");
  CHECK(UQ_ASK_TIMED_OUT == 17);
#ifdef UQ_HAS_TERMINAL
  uint64_t reg;
  CHECK_CODE(uq_register_terminal_provider(NULL, &reg), UQ_INVALID_ARGUMENT);
#endif
}

static void test_errors_of_asks_that_fail_at_once(void) {
  uq_context *ctx = uq_context_new();
  completion done;
  completion_init(&done);
  char *error = (char *)"not written";

  CHECK_CODE(uq_ask_with_error(ctx, CONFIRM, NULL, NULL, on_done, &done, &error), UQ_NO_PROVIDER);
  CHECK_STR(error, "{\"code\":\"NO_PROVIDER\",\"message\":\"no user-questions provider is "
                   "registered\"}");
  uq_string_free(error);
  CHECK_CODE(uq_ask_with_error(NULL, CONFIRM, NULL, NULL, on_done, &done, &error),
             UQ_INVALID_ARGUMENT);
  CHECK_STR(error, "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"ctx is NULL\"}");
  uq_string_free(error);
  CHECK_CODE(uq_ask_with_error(ctx, CONFIRM, NULL, NULL, NULL, &done, &error), UQ_INVALID_ARGUMENT);
  CHECK_STR(error, "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"callback is NULL\"}");
  uq_string_free(error);
  CHECK_CODE(uq_ask_with_error(ctx, INVALID_UTF8, NULL, NULL, on_done, &done, &error),
             UQ_INVALID_ARGUMENT);
  CHECK_STR(error,
            "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"request_json is not valid UTF-8\"}");
  uq_string_free(error);
  CHECK_CODE(uq_ask_with_error(ctx, "{\"questions\":[]}", NULL, NULL, on_done, &done, &error),
             UQ_EMPTY_QUESTIONS);
  CHECK_STR(error, "{\"code\":\"EMPTY_QUESTIONS\",\"message\":\"ask_user_question requires at "
                   "least one question\"}");
  uq_string_free(error);

  /* Malformed deadlines and keys, before everything else (even before NO_PROVIDER). */
  static const char *const bad_timeouts[] = {
      CONFIRM_WITH("\"timeoutMs\":0"), CONFIRM_WITH("\"timeoutMs\":-5"),
      CONFIRM_WITH("\"timeoutMs\":2147483648"), CONFIRM_WITH("\"timeoutMs\":1.5"),
      CONFIRM_WITH("\"timeoutMs\":\"100\"")};
  for (size_t i = 0; i < sizeof bad_timeouts / sizeof bad_timeouts[0]; i++) {
    CHECK_CODE(uq_ask_with_error(ctx, bad_timeouts[i], NULL, NULL, on_done, &done, &error),
               UQ_INVALID_REQUEST);
    CHECK_STR(error, "{\"code\":\"INVALID_REQUEST\",\"message\":\"" MSG_BAD_TIMEOUT "\"}");
    uq_string_free(error);
  }
  CHECK_CODE(
      uq_ask_with_error(ctx, CONFIRM_WITH("\"key\":\"\""), NULL, NULL, on_done, &done, &error),
      UQ_INVALID_REQUEST);
  CHECK_STR(error, "{\"code\":\"INVALID_REQUEST\",\"message\":\"key must be a non-empty string "
                   "of at most 256 characters\"}");
  uq_string_free(error);

  /* UQ_OK writes NULL; a NULL out_error_json is allowed. */
  uint64_t reg;
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &reg), UQ_OK);
  CHECK_CODE(uq_ask_with_error(ctx, CONFIRM, NULL, NULL, on_done, &done, &error), UQ_OK);
  CHECK(error == NULL);
  CHECK(completion_calls(&done) == 1);
  CHECK_CODE(uq_ask_with_error(ctx, "[", NULL, NULL, on_done, &done, NULL), UQ_INVALID_REQUEST);
  CHECK(completion_calls(&done) == 1);

  /* The tool fails at once only for bad C arguments. */
  error = (char *)"not written";
  CHECK_CODE(uq_tool_execute_with_error(NULL, "{}", NULL, NULL, on_done, &done, &error),
             UQ_INVALID_ARGUMENT);
  CHECK_STR(error, "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"ctx is NULL\"}");
  uq_string_free(error);
  CHECK_CODE(uq_tool_execute_with_error(ctx, NULL, NULL, NULL, on_done, &done, &error),
             UQ_INVALID_ARGUMENT);
  CHECK_STR(error, "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"args_json is NULL\"}");
  uq_string_free(error);
  CHECK_CODE(uq_tool_execute_with_error(ctx, "not json", NULL, NULL, on_done, &done, &error),
             UQ_OK);
  CHECK(error == NULL);
  CHECK(completion_calls(&done) == 2);
  CHECK_CODE(done.code, UQ_INVALID_REQUEST);

  uq_context_free(ctx);
  completion_destroy(&done);
}

static void test_deadline_settles_timed_out(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  uq_agent *root = uq_agent_new("root", 0);
  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_OK);

  /* uq_ask: the deadline settles it on the library's deadline thread, after withdraw. */
  ordered o = {.rec = &rec};
  completion_init(&o.done);
  CHECK_CODE(uq_ask(ctx, CONFIRM_WITH("\"timeoutMs\":30,\"key\":\"call-7\""), root, NULL,
                    on_done_ordered, &o),
             UQ_OK);
  uint64_t ticket = rec.last_ticket;
  /* The provider is told the deadline and the key. */
  CHECK_CONTAINS(rec.last_request, "\"agentId\":\"root\",\"expiresAt\":\"");
  CHECK_CONTAINS(rec.last_request, "\",\"key\":\"call-7\"}");
  char expires[64];
  json_string_field(rec.last_request, "expiresAt", expires, sizeof expires);
  CHECK(is_rfc3339_millis(expires));
  CHECK(completion_wait(&o.done) == 1);
  CHECK_CODE(o.done.code, UQ_ASK_TIMED_OUT);
  CHECK_STR(o.done.json, "{\"code\":\"ASK_TIMED_OUT\",\"message\":\"" MSG_TIMED_OUT(30) "\"}");
  CHECK(o.withdraws_before == 1);
  CHECK(rec.last_withdrawn == ticket);
  /* It never produces an answer; a late answer is refused. */
  CHECK_CODE(uq_answer(ctx, ticket, CONFIRM_YES, NULL), UQ_ALREADY_RESOLVED);
  CHECK(completion_calls(&o.done) == 1);

  /* uq_ask_wait with a deadline. */
  char *json = NULL;
  CHECK_CODE(uq_ask_wait(ctx, CONFIRM_WITH("\"timeoutMs\":1"), NULL, NULL, &json),
             UQ_ASK_TIMED_OUT);
  CHECK_STR(json, "{\"code\":\"ASK_TIMED_OUT\",\"message\":\"" MSG_TIMED_OUT(1) "\"}");
  uq_string_free(json);
  CHECK(rec_get(&rec, &rec.withdraws) == 2);

  /* An answer before the deadline wins; the deadline then does nothing. */
  rec.answer_inline = CONFIRM_NO;
  CHECK_CODE(uq_ask_wait(ctx, CONFIRM_WITH("\"timeoutMs\":2147483647"), NULL, NULL, &json), UQ_OK);
  CHECK_STR(json, CONFIRM_NO);
  uq_string_free(json);
  rec.answer_inline = NULL;

  uq_context_free(ctx);
  uq_agent_free(root);
  recorder_destroy(&rec);
  completion_destroy(&o.done);
}

static void test_extend(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  char *expires_at = (char *)"not written";

  /* Bad arguments. */
  CHECK_CODE(uq_extend(NULL, 1, 1000, &expires_at), UQ_INVALID_ARGUMENT);
  CHECK(expires_at == NULL);
  CHECK_CODE(uq_extend(ctx, 1, 1000, &expires_at), UQ_NOT_PENDING);
  CHECK(expires_at == NULL);

  /* No deadline: UQ_OK, nothing changes, NULL. */
  completion plain;
  completion_init(&plain);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &plain), UQ_OK);
  uint64_t without = rec.last_ticket;
  expires_at = (char *)"not written";
  CHECK_CODE(uq_extend(ctx, without, 1000, &expires_at), UQ_OK);
  CHECK(expires_at == NULL);
  char *pending = NULL;
  CHECK_CODE(uq_pending(ctx, &pending), UQ_OK);
  CHECK(strstr(pending, "expiresAt") == NULL);
  CHECK_CONTAINS(pending, "\"askedAt\":\"");
  uq_string_free(pending);

  /* With a deadline: out of range is UQ_INVALID_ARGUMENT; else the new expiresAt. */
  ordered o = {.rec = &rec};
  completion_init(&o.done);
  CHECK_CODE(uq_ask(ctx, CONFIRM_WITH("\"timeoutMs\":2147483647,\"key\":\"k\""), NULL, NULL,
                    on_done_ordered, &o),
             UQ_OK);
  uint64_t ticket = rec.last_ticket;
  static const int64_t bad[] = {0, -1, 2147483648LL, INT64_MIN, INT64_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    expires_at = (char *)"not written";
    CHECK_CODE(uq_extend(ctx, ticket, bad[i], &expires_at), UQ_INVALID_ARGUMENT);
    CHECK(expires_at == NULL);
  }
  CHECK_CODE(uq_extend(ctx, ticket, 2147483647, NULL), UQ_OK);
  CHECK_CODE(uq_extend(ctx, ticket, 1, &expires_at), UQ_OK);
  CHECK(is_rfc3339_millis(expires_at));
  /* uq_pending lists askedAt, expiresAt (the same) and key, in that order. */
  CHECK_CODE(uq_pending(ctx, &pending), UQ_OK);
  char listed[64], asked[64];
  json_string_field(strstr(pending, "\"ticket\":2"), "expiresAt", listed, sizeof listed);
  json_string_field(strstr(pending, "\"ticket\":2"), "askedAt", asked, sizeof asked);
  CHECK_STR(listed, expires_at ? expires_at : "");
  CHECK(is_rfc3339_millis(asked));
  CHECK_CONTAINS(pending, "\"askedAt\":\"");
  CHECK_CONTAINS(pending, "\",\"key\":\"k\"}");
  uq_string_free(pending);
  uq_string_free(expires_at);

  /* A short deadline, extended: it still times out, with the request's own timeoutMs. */
  ordered short_one = {.rec = &rec};
  completion_init(&short_one.done);
  CHECK_CODE(uq_ask(ctx, CONFIRM_WITH("\"timeoutMs\":20"), NULL, NULL, on_done_ordered, &short_one),
             UQ_OK);
  uint64_t extended = rec.last_ticket;
  uq_code code = uq_extend(ctx, extended, 40, &expires_at);
  /* The deadline may already have fired on a slow machine (valgrind): then it is settled. */
  CHECK(code == UQ_OK || code == UQ_ALREADY_RESOLVED);
  if (code == UQ_OK)
    CHECK(is_rfc3339_millis(expires_at));
  uq_string_free(expires_at);
  CHECK(completion_wait(&short_one.done) == 1);
  CHECK_CODE(short_one.done.code, UQ_ASK_TIMED_OUT);
  CHECK_STR(short_one.done.json,
            "{\"code\":\"ASK_TIMED_OUT\",\"message\":\"" MSG_TIMED_OUT(20) "\"}");
  CHECK_CODE(uq_extend(ctx, extended, 1000, &expires_at), UQ_ALREADY_RESOLVED);
  CHECK(expires_at == NULL);

  /* Settled tickets. */
  CHECK_CODE(uq_cancel(ctx, ticket), UQ_OK);
  CHECK_CODE(uq_extend(ctx, ticket, 1000, &expires_at), UQ_ALREADY_RESOLVED);
  CHECK(expires_at == NULL);
  CHECK_CODE(o.done.code, UQ_ASK_CANCELLED);

  uq_context_free(ctx);
  CHECK(completion_calls(&plain) == 1);
  recorder_destroy(&rec);
  completion_destroy(&plain);
  completion_destroy(&o.done);
  completion_destroy(&short_one.done);
}

/* Reviews one plan with `rec` answering `answer` from inside ask; returns the review JSON. */
static uq_code review(uq_context *ctx, recorder *rec, const char *answer, const char *request,
                      char **out_json) {
  completion done;
  completion_init(&done);
  rec->answer_inline = answer;
  uq_code code = uq_review_plan(ctx, request, NULL, NULL, on_done, &done);
  rec->answer_inline = NULL;
  *out_json = NULL;
  if (code == UQ_OK) {
    CHECK(completion_wait(&done) == 1);
    code = done.code;
    *out_json = done.json;
    done.json = NULL;
  }
  completion_destroy(&done);
  return code;
}

static void test_review_plan(void) {
  uq_context *ctx = uq_context_new();
  recorder rec;
  recorder_init(&rec, ctx);
  uint64_t reg;
  CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
  static const char *const plan = "{\"plan\":\"1. migrate\\n2. deploy\"}";
  char *json;

  CHECK_CODE(review(ctx, &rec, "{\"answers\":[{\"id\":\"plan\",\"selected\":[\"Approve\"]}]}", plan,
                    &json),
             UQ_OK);
  CHECK_STR(json, "{\"decision\":\"approved\"}");
  free(json);
  /* The one question of section 17. */
  CHECK_STR(rec.last_request,
            "{\"questions\":[{\"id\":\"plan\",\"question\":\"Approve this plan?\",\"detail\":"
            "\"1. migrate\\n2. deploy\",\"header\":\"Plan\",\"options\":[{\"label\":\"Approve\","
            "\"description\":\"Start carrying out the plan.\"},{\"label\":\"Revise\","
            "\"description\":\"Keep planning, with my feedback.\"},{\"label\":\"Reject\","
            "\"description\":\"Drop this plan.\"}],\"intent\":{\"kind\":\"plan-review\","
            "\"approve\":\"Approve\"}}]}");
  CHECK_CODE(
      review(ctx, &rec, "{\"answers\":[{\"id\":\"plan\",\"selected\":[\"Revise\"]}]}", plan, &json),
      UQ_OK);
  CHECK_STR(json, "{\"decision\":\"revise\"}");
  free(json);
  CHECK_CODE(review(ctx, &rec,
                    "{\"answers\":[{\"id\":\"plan\",\"selected\":[],\"custom\":\"smaller "
                    "steps\"}]}",
                    plan, &json),
             UQ_OK);
  CHECK_STR(json, "{\"decision\":\"revise\",\"feedback\":\"smaller steps\"}");
  free(json);
  CHECK_CODE(
      review(ctx, &rec, "{\"answers\":[{\"id\":\"plan\",\"selected\":[\"Reject\"]}]}", plan, &json),
      UQ_OK);
  CHECK_STR(json, "{\"decision\":\"rejected\"}");
  free(json);
  CHECK_CODE(review(ctx, &rec, "{\"answers\":[{\"id\":\"plan\",\"selected\":[]}]}", plan, &json),
             UQ_OK);
  CHECK_STR(json, "{\"decision\":\"dismissed\"}");
  free(json);
  /* A question of one's own, and a deadline; errors pass through as for uq_ask. */
  CHECK_CODE(review(ctx, &rec, NULL,
                    "{\"plan\":\"ship it\",\"question\":\"Ship?\",\"timeoutMs\":10}", &json),
             UQ_ASK_TIMED_OUT);
  CHECK_STR(json, "{\"code\":\"ASK_TIMED_OUT\",\"message\":\"" MSG_TIMED_OUT(10) "\"}");
  free(json);
  CHECK_CONTAINS(rec.last_request, "\"question\":\"Ship?\",\"detail\":\"ship it\"");
  CHECK_CONTAINS(rec.last_request, "\"expiresAt\":\"");
  rec.cancel_inline = 1;
  CHECK_CODE(review(ctx, &rec, NULL, plan, &json), UQ_ASK_CANCELLED);
  rec.cancel_inline = 0;
  free(json);

  /* Fails at once: an empty plan, a plan that is not a string, bad arguments. */
  completion done;
  completion_init(&done);
  char *error = NULL;
  CHECK_CODE(
      uq_review_plan_with_error(ctx, "{\"plan\":\"  \\n\"}", NULL, NULL, on_done, &done, &error),
      UQ_INVALID_REQUEST);
  CHECK_STR(error, "{\"code\":\"INVALID_REQUEST\",\"message\":\"review_plan requires a plan\"}");
  uq_string_free(error);
  CHECK_CODE(uq_review_plan_with_error(ctx, "{\"plan\":7}", NULL, NULL, on_done, &done, &error),
             UQ_INVALID_REQUEST);
  CHECK_STR(error, "{\"code\":\"INVALID_REQUEST\",\"message\":\"plan must be a string\"}");
  uq_string_free(error);
  CHECK_CODE(uq_review_plan(ctx, NULL, NULL, NULL, on_done, &done), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_review_plan(ctx, plan, NULL, NULL, NULL, &done), UQ_INVALID_ARGUMENT);
  CHECK(completion_calls(&done) == 0);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK_CODE(uq_review_plan(ctx, plan, NULL, NULL, on_done, &done), UQ_NO_PROVIDER);

  /* The auto-responder never approves unless told it may. */
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &reg), UQ_OK);
  CHECK_CODE(uq_review_plan(ctx, plan, NULL, NULL, on_done, &done), UQ_OK);
  CHECK_STR(done.json, "{\"decision\":\"revise\"}");
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK_CODE(uq_register_auto_responder(ctx, "first", true, &reg), UQ_OK);
  CHECK_CODE(uq_review_plan(ctx, plan, NULL, NULL, on_done, &done), UQ_OK);
  CHECK_STR(done.json, "{\"decision\":\"approved\"}");

  uq_context_free(ctx);
  recorder_destroy(&rec);
  completion_destroy(&done);
}

/* The whole text of `path` (malloc'd), or NULL. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t size = 0, cap = 4096;
  char *text = malloc(cap);
  size_t n;
  while ((n = fread(text + size, 1, cap - size - 1, f)) > 0) {
    size += n;
    if (cap - size < 2)
      text = realloc(text, cap *= 2);
  }
  fclose(f);
  text[size] = 0;
  return text;
}

static int count_lines(const char *text) {
  int n = 0;
  for (const char *p = text; p && *p; p++)
    n += *p == '\n';
  return n;
}

static void test_journal(void) {
  char path[] = "/tmp/uq-journal-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  uq_context *ctx = uq_context_new();
  CHECK_CODE(uq_context_set_journal(NULL, path), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_context_set_journal(ctx, NULL), UQ_INVALID_ARGUMENT);
  CHECK(uq_journal_errors(NULL) == 0);
  CHECK_CODE(uq_context_set_journal(ctx, path), UQ_OK);
  /* A path that is not UTF-8 is refused like any string argument (§13); the journal stays
   * the one set above (the lines below are counted in it). */
  CHECK_CODE(uq_context_set_journal(ctx, "/tmp/uq-journal-\xff.jsonl"), UQ_INVALID_ARGUMENT);
  uq_agent *root = uq_agent_new("root", 0);
  CHECK_CODE(uq_agents_enter(ctx, root, NULL), UQ_OK);
  uint64_t reg;
  CHECK_CODE(uq_register_auto_responder(ctx, "recommended", false, &reg), UQ_OK);
  completion done;
  completion_init(&done);
  CHECK_CODE(
      uq_ask(ctx, CONFIRM_WITH("\"timeoutMs\":60000,\"key\":\"k1\""), root, NULL, on_done, &done),
      UQ_OK);
  /* Malformed input is journaled as refused. */
  CHECK_CODE(uq_ask(ctx, "{\"questions\":", NULL, NULL, on_done, &done), UQ_INVALID_REQUEST);
  CHECK_CODE(uq_ask(ctx, "{\"questions\":[]}", root, NULL, on_done, &done), UQ_EMPTY_QUESTIONS);
  char *text = read_file(path);
  CHECK(count_lines(text) == 4);
  CHECK_CONTAINS(text, "\"event\":\"asked\",\"ask\":1,\"agentId\":\"root\",\"key\":\"k1\","
                       "\"questions\":[{\"id\":\"go\"");
  CHECK_CONTAINS(text, "}]}],\"timeoutMs\":60000}\n");
  CHECK_CONTAINS(text, "\"event\":\"settled\",\"ask\":1,\"outcome\":\"answered\",\"ms\":");
  CHECK_CONTAINS(text, ",\"answer\":{\"answers\":[{\"id\":\"go\",\"selected\":[\"Yes "
                       "(Recommended)\"]}]}}\n");
  CHECK_CONTAINS(text, "\"event\":\"refused\",\"ask\":2,\"code\":\"INVALID_REQUEST\",\"message\":");
  CHECK_CONTAINS(text, "\"event\":\"refused\",\"ask\":3,\"agentId\":\"root\",\"code\":\"EMPTY_"
                       "QUESTIONS\",\"message\":\"ask_user_question requires at least one "
                       "question\"}\n");
  CHECK(strncmp(text ? text : "", "{\"at\":\"", 7) == 0);
  free(text);
  CHECK(uq_journal_errors(ctx) == 0);

  /* A journal that cannot be written: asks still settle, and the errors are counted. */
  CHECK_CODE(uq_context_set_journal(ctx, "/nonexistent-uq-dir/journal.jsonl"), UQ_OK);
  CHECK_CODE(uq_ask(ctx, CONFIRM, root, NULL, on_done, &done), UQ_OK);
  CHECK(completion_calls(&done) == 2);
  CHECK_CODE(done.code, UQ_OK);
  CHECK(uq_journal_errors(ctx) > 0);
  uint64_t errors = uq_journal_errors(ctx);
  char *json;
  CHECK_CODE(uq_ask_wait(ctx, CONFIRM, NULL, NULL, &json), UQ_OK);
  uq_string_free(json);
  CHECK(uq_journal_errors(ctx) > errors);
  /* The first journal got nothing more. */
  text = read_file(path);
  CHECK(count_lines(text) == 4);
  free(text);

  uq_context_free(ctx);
  uq_agent_free(root);
  unlink(path);
  completion_destroy(&done);
}

/* Section 4.7 for a C provider: withdraw has run before the asker's callback, for every cause. */
static void test_withdraw_before_the_askers_callback(void) {
  for (int cause = 0; cause < 4; cause++) {
    uq_context *ctx = uq_context_new();
    recorder rec;
    recorder_init(&rec, ctx);
    uint64_t reg;
    CHECK_CODE(uq_register_provider(ctx, &RECORDER, &rec, &reg), UQ_OK);
    uq_abort *abort = uq_abort_new();
    ordered o = {.rec = &rec};
    completion_init(&o.done);
    const char *request = cause == 3 ? CONFIRM_WITH("\"timeoutMs\":5") : CONFIRM;
    CHECK_CODE(uq_ask(ctx, request, NULL, abort, on_done_ordered, &o), UQ_OK);
    switch (cause) {
    case 0:
      uq_abort_trigger(abort);
      break;
    case 1:
      CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
      break;
    case 2:
      uq_context_free(ctx);
      break;
    default:
      break; /* the deadline */
    }
    CHECK(completion_wait(&o.done) == 1);
    CHECK(o.withdraws_before == 1);
    CHECK_CODE(o.done.code, cause == 3 ? UQ_ASK_TIMED_OUT : UQ_ASK_ABORTED);
    if (cause != 2)
      uq_context_free(ctx);
    CHECK(rec.releases == 1);
    uq_abort_free(abort);
    recorder_destroy(&rec);
    completion_destroy(&o.done);
  }
}

int main(void) {
  struct {
    const char *name;
    void (*run)(void);
  } tests[] = {
      {"version macros; ASK_TIMED_OUT", test_version_macros},
      {"errors of asks that fail at once", test_errors_of_asks_that_fail_at_once},
      {"a deadline settles ASK_TIMED_OUT", test_deadline_settles_timed_out},
      {"uq_extend", test_extend},
      {"uq_review_plan", test_review_plan},
      {"the journal", test_journal},
      {"withdraw before the asker's callback", test_withdraw_before_the_askers_callback},
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
  printf("all C ABI 0.2 tests passed\n");
  return 0;
}
