/* The original design's ask() in C; see reference.h. */
#define _GNU_SOURCE
#include "reference.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void ref_registry_init(ref_registry *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->lock, NULL);
  r->cap = 16;
  r->slots = calloc(r->cap, sizeof *r->slots);
}

void ref_registry_destroy(ref_registry *r) {
  free(r->slots);
  free(r->roots);
  pthread_mutex_destroy(&r->lock);
}

static size_t find_slot(const ref_agent **slots, size_t cap, const char *id) {
  size_t i = hash(id) & (cap - 1);
  while (slots[i] != NULL && strcmp(slots[i]->id, id) != 0) i = (i + 1) & (cap - 1);
  return i;
}

static void grow(ref_registry *r) {
  size_t cap = r->cap * 2;
  const ref_agent **slots = calloc(cap, sizeof *slots);
  for (size_t i = 0; i < r->cap; i++)
    if (r->slots[i] != NULL) slots[find_slot(slots, cap, r->slots[i]->id)] = r->slots[i];
  free(r->slots);
  r->slots = slots;
  r->cap = cap;
}

int ref_registry_enter(ref_registry *r, const ref_agent *agent, const ref_agent *owner) {
  pthread_mutex_lock(&r->lock);
  if ((r->len + 1) * 2 > r->cap) grow(r);
  size_t i = find_slot(r->slots, r->cap, agent->id);
  if (r->slots[i] != NULL) {
    pthread_mutex_unlock(&r->lock);
    return 1;
  }
  r->slots[i] = agent;
  r->len++;
  if (owner == NULL) {
    if (r->n_roots == r->roots_cap) {
      r->roots_cap = r->roots_cap ? r->roots_cap * 2 : 8;
      r->roots = realloc(r->roots, r->roots_cap * sizeof *r->roots);
    }
    r->roots[r->n_roots++] = agent;
  }
  pthread_mutex_unlock(&r->lock);
  return 0;
}

const ref_agent *ref_registry_get(ref_registry *r, const char *id) {
  pthread_mutex_lock(&r->lock);
  const ref_agent *a = r->slots[find_slot(r->slots, r->cap, id)];
  pthread_mutex_unlock(&r->lock);
  return a;
}

const ref_agent **ref_registry_roots(ref_registry *r, size_t *n) {
  pthread_mutex_lock(&r->lock);
  const ref_agent **copy = malloc((r->n_roots ? r->n_roots : 1) * sizeof *copy);
  memcpy(copy, r->roots, r->n_roots * sizeof *copy);
  *n = r->n_roots;
  pthread_mutex_unlock(&r->lock);
  return copy;
}

void ref_service_init(ref_service *s, ref_registry *agents) {
  s->agents = agents;
  s->provider = NULL;
  pthread_mutex_init(&s->lock, NULL);
}

void ref_service_destroy(ref_service *s) { pthread_mutex_destroy(&s->lock); }

int ref_register_provider(ref_service *s, const ref_provider *provider) {
  pthread_mutex_lock(&s->lock);
  int taken = s->provider != NULL;
  if (!taken) s->provider = provider;
  pthread_mutex_unlock(&s->lock);
  return taken;
}

void ref_unregister_provider(ref_service *s) {
  pthread_mutex_lock(&s->lock);
  s->provider = NULL;
  pthread_mutex_unlock(&s->lock);
}

static int fail(ref_error *error, const char *code, const char *message) {
  error->code = code;
  error->message = message;
  error->owned = false;
  return -1;
}

static int fail_owned(ref_error *error, const char *code, char *message) {
  error->code = code;
  error->message = message;
  error->owned = true;
  return -1;
}

void ref_error_free(ref_error *error) {
  if (error->owned) free((char *)error->message);
  error->message = NULL;
  error->owned = false;
}

int ref_ask(ref_service *s, const ref_request *request, ref_callback callback, void *user_data,
            ref_error *error) {
  if (request->signal != NULL && *request->signal)
    return fail(error, "ASK_ABORTED", "ask_user_question was aborted before the user answered");
  if (request->n_questions == 0)
    return fail(error, "EMPTY_QUESTIONS", "ask_user_question requires at least one question");
  const ref_agent *agent = request->agent;
  if (agent != NULL) {
    if (ref_registry_get(s->agents, agent->id) != agent)
      return fail(error, "CALLER_NOT_LIVE",
                  "human interaction requires the exact live calling agent when an agent is "
                  "supplied");
    size_t n;
    const ref_agent **roots = ref_registry_roots(s->agents, &n);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) found = roots[i] == agent;
    free(roots);
    if (!found)
      return fail(error, "DELEGATED_CALLER",
                  "human interaction is unavailable while the calling agent is owned by another "
                  "live agent; include the unresolved question or decision in the child agent's "
                  "final result");
  }
  for (size_t q = 0; q < request->n_questions; q++) {
    const ref_item *question = &request->questions[q];
    const ref_intent *intent = question->intent;
    if (intent == NULL) continue;
    bool names = false;
    for (size_t o = 0; o < question->n_options && !names; o++)
      names = strcmp(question->options[o].label, intent->approve) == 0;
    char *message = NULL;
    if (!names) {
      /* The original prints the label as a JSON string; plain quotes suffice for a reference. */
      if (asprintf(&message,
                   "question %s declares intent %s whose approve label \"%s\" names none of its "
                   "options",
                   question->id, intent->kind, intent->approve) < 0)
        message = NULL;
      return fail_owned(error, "BAD_INTENT", message);
    }
    if (question->detail == NULL) {
      if (asprintf(&message, "question %s declares intent %s without the detail it reviews",
                   question->id, intent->kind) < 0)
        message = NULL;
      return fail_owned(error, "BAD_INTENT", message);
    }
  }
  pthread_mutex_lock(&s->lock);
  const ref_provider *provider = s->provider;
  pthread_mutex_unlock(&s->lock);
  if (provider == NULL) return fail(error, "NO_PROVIDER", "no user-questions provider is registered");
  provider->ask(provider->provider_data, request, callback, user_data);
  return 0;
}
