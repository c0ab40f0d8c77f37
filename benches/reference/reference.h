/* The reference a user would write instead of the library: the original design's ask(), in C.
 *
 * Faithful to the original design (docs/reference.md §12): the signal check, the empty check, the agent
 * check through a registry whose roots() returns a fresh copy of the root list (O(n) in live
 * agents) that is then scanned, the intent checks, the provider check, then the provider's
 * ask. What a C user would write: plain structs (no JSON), a callback for the asynchronous
 * answer, a hash map for get(id), a mutex so that several threads may ask. Used only by the
 * benchmarks (benches/c/bench.c). */
#ifndef UQ_REFERENCE_H
#define UQ_REFERENCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ref_option {
  const char *label;
  const char *description; /* NULL: absent */
} ref_option;

typedef struct ref_intent {
  const char *kind;
  const char *approve;
} ref_intent;

typedef struct ref_item {
  const char *id;
  const char *question;
  const char *detail; /* NULL: absent */
  const char *header; /* NULL: absent */
  const ref_option *options;
  size_t n_options;
  bool multi_select;
  const ref_intent *intent; /* NULL: absent */
} ref_item;

typedef struct ref_answer_item {
  const char *id;
  const char *const *selected;
  size_t n_selected;
  const char *custom; /* NULL: absent */
} ref_answer_item;

typedef struct ref_answer {
  const ref_answer_item *answers;
  size_t n_answers;
} ref_answer;

/* An agent instance: identity is the pointer (=== in the original). */
typedef struct ref_agent {
  const char *id;
} ref_agent;

typedef struct ref_request {
  const ref_item *questions;
  size_t n_questions;
  const ref_agent *agent;   /* NULL: none */
  const volatile bool *signal; /* NULL: none; *signal true: aborted */
} ref_request;

/* The error: a code name and a message (static, or owned by the error when `owned`). */
typedef struct ref_error {
  const char *code;
  const char *message;
  bool owned;
} ref_error;

/* Called once with the answer, or with an error (answer NULL). Both are borrowed. */
typedef void (*ref_callback)(void *user_data, const ref_error *error, const ref_answer *answer);

typedef struct ref_provider {
  void (*ask)(void *provider_data, const ref_request *request, ref_callback callback,
              void *user_data);
  void *provider_data;
} ref_provider;

typedef struct ref_registry {
  pthread_mutex_t lock;
  const ref_agent **slots; /* open addressing by id */
  size_t cap, len;
  const ref_agent **roots;
  size_t n_roots, roots_cap;
} ref_registry;

typedef struct ref_service {
  ref_registry *agents;
  pthread_mutex_t lock;
  const ref_provider *provider;
} ref_service;

void ref_registry_init(ref_registry *r);
void ref_registry_destroy(ref_registry *r);
/* 0, or 1 when the id is live (AGENT_EXISTS). owner NULL: a root. */
int ref_registry_enter(ref_registry *r, const ref_agent *agent, const ref_agent *owner);
const ref_agent *ref_registry_get(ref_registry *r, const char *id);
/* A fresh copy of the live roots (free() it); *n receives their number. */
const ref_agent **ref_registry_roots(ref_registry *r, size_t *n);

void ref_service_init(ref_service *s, ref_registry *agents);
void ref_service_destroy(ref_service *s);
/* 0, or 1 (DUPLICATE_PROVIDER). */
int ref_register_provider(ref_service *s, const ref_provider *provider);
void ref_unregister_provider(ref_service *s);

/* The original design's ask(): 0 when the provider was reached (the callback fires once, from the
 * provider), or -1 with *error set (free it with ref_error_free); the callback never fires. */
int ref_ask(ref_service *s, const ref_request *request, ref_callback callback, void *user_data,
            ref_error *error);
void ref_error_free(ref_error *error);

#endif
