/*
 * A C host of user-questions: a provider that answers on a worker thread, and an asker on
 * the main thread.
 *
 * The provider's `ask` callback only queues the ticket (it runs on the asking thread, inside
 * uq_ask_wait); a worker thread plays the human: it reads the question and answers it by
 * ticket with uq_answer. Build (after scripts/install-c PREFIX):
 *
 *   cc -std=c11 ask.c $(pkg-config --cflags --libs user_questions) -lpthread -o ask
 */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user_questions.h"

typedef struct {
  uq_context *ctx;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t ticket; /* 0: nothing waiting */
  char *request;
  int stop;
  int released;
} host;

/* Runs on the asking thread: hand the question to the worker. */
static void on_ask(void *user_data, uint64_t ticket, const char *request_json) {
  host *h = user_data;
  pthread_mutex_lock(&h->mu);
  h->ticket = ticket;
  h->request = strdup(request_json);
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

static void on_withdraw(void *user_data, uint64_t ticket) {
  (void)user_data;
  printf("question %llu was withdrawn\n", (unsigned long long)ticket);
}

static void on_release(void *user_data) {
  ((host *)user_data)->released = 1;
}

/* The "human": answers each question with the first option's label. */
static void *worker(void *arg) {
  host *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (h->ticket == 0 && !h->stop)
      pthread_cond_wait(&h->cv, &h->mu);
    if (h->stop)
      break;
    uint64_t ticket = h->ticket;
    char *request = h->request;
    h->ticket = 0;
    h->request = NULL;
    pthread_mutex_unlock(&h->mu);

    printf("worker sees question %llu: %s\n", (unsigned long long)ticket, request);
    /* A real UI would parse the JSON and render it; this one picks "Yes". */
    char *reason = NULL;
    uq_code code = uq_answer(h->ctx, ticket,
                             "{\"answers\":[{\"id\":\"go\",\"selected\":[\"Yes\"]}]}", &reason);
    if (code != UQ_OK)
      fprintf(stderr, "uq_answer: %s: %s\n", uq_code_name(code), reason);
    uq_string_free(reason);
    free(request);

    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

int main(void) {
  host h = {.ctx = uq_context_new()};
  pthread_mutex_init(&h.mu, NULL);
  pthread_cond_init(&h.cv, NULL);

  uq_provider provider = {on_ask, on_withdraw, on_release};
  uint64_t registration = 0;
  uq_code code = uq_register_provider(h.ctx, &provider, &h, &registration);
  if (code != UQ_OK)
    return (int)code;
  pthread_t thread;
  pthread_create(&thread, NULL, worker, &h);

  /* The asker: a live root agent asks and blocks until the worker answers. */
  uq_agent *agent = uq_agent_new("main-agent", 0);
  uq_agents_enter(h.ctx, agent, NULL);
  char *json = NULL;
  code = uq_ask_wait(h.ctx,
                     "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed with the migration?\","
                     "\"options\":[{\"label\":\"Yes\"},{\"label\":\"No\"}]}]}",
                     agent, NULL, &json);
  printf("%s %s\n", uq_code_name(code), json);
  int ok =
      code == UQ_OK && strcmp(json, "{\"answers\":[{\"id\":\"go\",\"selected\":[\"Yes\"]}]}") == 0;
  uq_string_free(json);

  pthread_mutex_lock(&h.mu);
  h.stop = 1;
  pthread_cond_signal(&h.cv);
  pthread_mutex_unlock(&h.mu);
  pthread_join(thread, NULL);

  uq_agents_exit(h.ctx, agent);
  uq_agent_free(agent);
  uq_context_free(h.ctx); /* unregisters the provider: release fires */
  ok = ok && h.released;
  pthread_mutex_destroy(&h.mu);
  pthread_cond_destroy(&h.cv);
  return ok ? 0 : 1;
}
