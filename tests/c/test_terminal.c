/*
 * uq_register_terminal_provider without a TTY: line prompts on stderr, answered from stdin.
 * scripts/test-c runs it with stdin = "2\nq\n" (then end of input) and stderr captured:
 *   ask 1 -> option 2; ask 2 -> `q` cancels; ask 3 -> end of input cancels.
 */
#define _DEFAULT_SOURCE
#include "user_questions.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stdout, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static const char *const PICK =
    "{\"questions\":[{\"id\":\"pkg\",\"header\":\"Tooling\",\"question\":\"Which package "
    "manager?\","
    "\"options\":[{\"label\":\"pnpm (Recommended)\"},{\"label\":\"npm\"}]}]}";

int main(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg = 0, other = 0;
  CHECK(uq_register_terminal_provider(NULL, &reg) == UQ_INVALID_ARGUMENT);
  CHECK(uq_register_terminal_provider(ctx, NULL) == UQ_INVALID_ARGUMENT);
  CHECK(uq_register_terminal_provider(ctx, &reg) == UQ_OK);
  CHECK(reg > 0);
  CHECK(uq_register_terminal_provider(ctx, &other) == UQ_DUPLICATE_PROVIDER);
  CHECK(uq_register_auto_responder(ctx, "first", false, &other) == UQ_DUPLICATE_PROVIDER);

  char *json = NULL;
  CHECK(uq_ask_wait(ctx, PICK, NULL, NULL, &json) == UQ_OK);
  CHECK(json && strcmp(json, "{\"answers\":[{\"id\":\"pkg\",\"selected\":[\"npm\"]}]}") == 0);
  printf("answer: %s\n", json);
  uq_string_free(json);

  CHECK(uq_ask_wait(ctx, PICK, NULL, NULL, &json) == UQ_ASK_CANCELLED);
  printf("after q: %s\n", json);
  uq_string_free(json);

  CHECK(uq_ask_wait(ctx, PICK, NULL, NULL, &json) == UQ_ASK_CANCELLED);
  printf("at end of input: %s\n", json);
  uq_string_free(json);

  CHECK(uq_unregister_provider(ctx, reg) == UQ_OK);
  CHECK(uq_ask_wait(ctx, PICK, NULL, NULL, &json) == UQ_NO_PROVIDER);
  uq_string_free(json);
  uq_context_free(ctx);
  if (failures)
    return 1;
  printf("terminal provider tests passed\n");
  return 0;
}
