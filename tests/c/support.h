/*
 * What the C tests share (tests/c/test_*.c): checks that count failures, a completion that
 * records a callback's settlement, and a C provider that records what it is told.
 */
#ifndef UQ_TEST_SUPPORT_H
#define UQ_TEST_SUPPORT_H

#define _DEFAULT_SOURCE
#include "user_questions.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNUSED __attribute__((unused))

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_CODE(expr, want)                                                           \
  do {                                                                                   \
    uq_code got_ = (expr);                                                               \
    if (got_ != (want)) {                                                                \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #expr, \
              uq_code_name(got_), uq_code_name(want));                                   \
      failures++;                                                                        \
    }                                                                                    \
  } while (0)

#define CHECK_STR(got, want)                                                                      \
  do {                                                                                            \
    const char *g_ = (got), *w_ = (want);                                                         \
    if (g_ == NULL || strcmp(g_, w_) != 0) {                                                      \
      fprintf(stderr, "%s:%d: got %s\n    expected %s\n", __FILE__, __LINE__, g_ ? g_ : "(null)", \
              w_);                                                                                \
      failures++;                                                                                 \
    }                                                                                             \
  } while (0)

#define CHECK_CONTAINS(got, part)                                                 \
  do {                                                                            \
    const char *g_ = (got), *p_ = (part);                                         \
    if (g_ == NULL || strstr(g_, p_) == NULL) {                                   \
      fprintf(stderr, "%s:%d: %s\n    does not contain %s\n", __FILE__, __LINE__, \
              g_ ? g_ : "(null)", p_);                                            \
      failures++;                                                                 \
    }                                                                             \
  } while (0)

/* How many rounds the race tests run (smaller under valgrind: UQ_TEST_ROUNDS). */
static UNUSED int rounds(int normal) {
  const char *env = getenv("UQ_TEST_ROUNDS");
  return env ? atoi(env) : normal;
}

static UNUSED const char *const CONFIRM =
    "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed?\","
    "\"options\":[{\"label\":\"Yes (Recommended)\"},{\"label\":\"No\"}]}]}";
static UNUSED const char *const CONFIRM_YES =
    "{\"answers\":[{\"id\":\"go\",\"selected\":[\"Yes (Recommended)\"]}]}";
static UNUSED const char *const CONFIRM_NO =
    "{\"answers\":[{\"id\":\"go\",\"selected\":[\"No\"]}]}";
static UNUSED const char *const INVALID_UTF8 = "{\"questions\":\xff\xfe}";

#define MSG_ABORTED  "ask_user_question was aborted before the user answered"
#define MSG_DISPOSED "the user-questions provider was disposed before the user answered"

/* ------------------------------------------------------------------------------------- */
/* Completions                                                                            */
/* ------------------------------------------------------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  uq_code code;
  char *json;
  pthread_t thread;
} completion;

static UNUSED void completion_init(completion *c) {
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  c->calls = 0;
  c->code = UQ_INTERNAL;
  c->json = NULL;
}

static UNUSED void completion_destroy(completion *c) {
  free(c->json);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
}

static UNUSED void on_done(void *user_data, uq_code code, const char *json) {
  completion *c = user_data;
  pthread_mutex_lock(&c->mu);
  c->calls++;
  c->code = code;
  free(c->json);
  c->json = strdup(json);
  c->thread = pthread_self();
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* Waits up to 10 s for the callback; returns its call count. */
static UNUSED int completion_wait(completion *c) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  pthread_mutex_lock(&c->mu);
  while (c->calls == 0) {
    if (pthread_cond_timedwait(&c->cv, &c->mu, &deadline) != 0)
      break;
  }
  int calls = c->calls;
  pthread_mutex_unlock(&c->mu);
  return calls;
}

static UNUSED int completion_calls(completion *c) {
  pthread_mutex_lock(&c->mu);
  int calls = c->calls;
  pthread_mutex_unlock(&c->mu);
  return calls;
}

/* ------------------------------------------------------------------------------------- */
/* A C provider that records what it is told                                              */
/* ------------------------------------------------------------------------------------- */

typedef struct {
  uq_context *ctx;
  pthread_mutex_t mu;
  int asks;
  int withdraws;
  int releases;
  uint64_t last_ticket;
  uint64_t last_withdrawn;
  char *last_request;
  const char *answer_inline; /* when set, `ask` answers with it from inside the callback */
  int cancel_inline;         /* when set, `ask` cancels from inside the callback */
  uq_code inline_code;
} recorder;

static UNUSED void recorder_init(recorder *r, uq_context *ctx) {
  memset(r, 0, sizeof *r);
  r->ctx = ctx;
  pthread_mutex_init(&r->mu, NULL);
}

static UNUSED void recorder_destroy(recorder *r) {
  free(r->last_request);
  pthread_mutex_destroy(&r->mu);
}

static UNUSED void rec_ask(void *user_data, uint64_t ticket, const char *request_json) {
  recorder *r = user_data;
  pthread_mutex_lock(&r->mu);
  r->asks++;
  r->last_ticket = ticket;
  free(r->last_request);
  r->last_request = strdup(request_json);
  const char *answer = r->answer_inline;
  int cancel = r->cancel_inline;
  pthread_mutex_unlock(&r->mu);
  /* Re-entering the library from inside the provider's callback. */
  if (answer)
    r->inline_code = uq_answer(r->ctx, ticket, answer, NULL);
  if (cancel)
    r->inline_code = uq_cancel(r->ctx, ticket);
}

static UNUSED void rec_withdraw(void *user_data, uint64_t ticket) {
  recorder *r = user_data;
  pthread_mutex_lock(&r->mu);
  r->withdraws++;
  r->last_withdrawn = ticket;
  pthread_mutex_unlock(&r->mu);
}

static UNUSED void rec_release(void *user_data) {
  recorder *r = user_data;
  pthread_mutex_lock(&r->mu);
  r->releases++;
  pthread_mutex_unlock(&r->mu);
}

static UNUSED const uq_provider RECORDER = {rec_ask, rec_withdraw, rec_release};

static UNUSED int rec_get(recorder *r, const int *field) {
  pthread_mutex_lock(&r->mu);
  int v = *field;
  pthread_mutex_unlock(&r->mu);
  return v;
}

#endif
