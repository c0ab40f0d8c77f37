/*
 * Deadlines, more time, a plan review and a journal from C (docs/reference.md sections
 * 16-18). Nobody answers here: the first ask runs out of time; the UI asks for more time for
 * the second one and then answers it; a plan is put up for review.
 *
 * A deadline never answers for the person: a timed-out ask settles UQ_ASK_TIMED_OUT. Build
 * (after scripts/install-c PREFIX):
 *
 *   cc -std=c11 deadline.c $(pkg-config --cflags --libs user_questions) -lpthread -o deadline
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "user_questions.h"

/* A provider that only remembers the last ticket (a UI would render the question). */
static uint64_t last_ticket;

static void on_ask(void *user_data, uint64_t ticket, const char *request_json) {
  (void)user_data;
  last_ticket = ticket;
  printf("asked %llu: %s\n", (unsigned long long)ticket, request_json);
}

static void on_withdraw(void *user_data, uint64_t ticket) {
  (void)user_data;
  printf("withdrawn %llu\n", (unsigned long long)ticket);
}

static void on_review(void *user_data, uq_code code, const char *json) {
  (void)user_data;
  printf("review: %s %s\n", uq_code_name(code), json);
}

int main(void) {
  uq_context *ctx = uq_context_new();
  char journal[] = "/tmp/uq-example-journal-XXXXXX";
  int fd = mkstemp(journal);
  if (fd >= 0) {
    close(fd);
    uq_context_set_journal(ctx, journal);
  }
  uq_provider provider = {on_ask, on_withdraw, NULL};
  uint64_t reg;
  if (uq_register_provider(ctx, &provider, NULL, &reg) != UQ_OK)
    return 1;

  /* 1. Nobody answers within 50 ms: UQ_ASK_TIMED_OUT (the provider's withdraw ran first). */
  static const char *const request =
      "{\"questions\":[{\"id\":\"deploy\",\"question\":\"Deploy now?\",\"options\":"
      "[{\"label\":\"Yes\"},{\"label\":\"No\"}]}],\"timeoutMs\":50,\"key\":\"deploy-1\"}";
  char *json = NULL;
  uq_code code = uq_ask_wait(ctx, request, NULL, NULL, &json);
  printf("%s %s\n", uq_code_name(code), json);
  uq_string_free(json);
  if (code != UQ_ASK_TIMED_OUT)
    return 1;

  /* 2. A review with a deadline; the UI asks for more time, then approves. */
  static const char *const plan =
      "{\"plan\":\"1. Run the migration\\n2. Deploy\",\"timeoutMs\":60000}";
  char *error = NULL;
  if (uq_review_plan_with_error(ctx, plan, NULL, NULL, on_review, NULL, &error) != UQ_OK) {
    fprintf(stderr, "uq_review_plan: %s\n", error);
    uq_string_free(error);
    return 1;
  }
  char *expires_at = NULL;
  if (uq_extend(ctx, last_ticket, 120000, &expires_at) != UQ_OK)
    return 1;
  printf("more time: now expires at %s\n", expires_at);
  uq_string_free(expires_at);
  code = uq_answer(ctx, last_ticket, "{\"answers\":[{\"id\":\"plan\",\"selected\":[\"Approve\"]}]}",
                   NULL);
  if (code != UQ_OK)
    return 1;

  printf("journal %s: %llu write errors\n", journal, (unsigned long long)uq_journal_errors(ctx));
  uq_context_free(ctx);
  unlink(journal);
  printf("deadline example done\n");
  return 0;
}
