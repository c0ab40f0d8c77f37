/* C benchmarks: the C ABI (include/user_questions.h) beside the C reference
 * (benches/reference/reference.c, the original design's ask() in C), in the same process,
 * interleaved round by round. Prints `BENCH <name> <value> <unit>` lines; scripts/bench makes the
 * table.
 *
 *   bench [--quick | --check]   (--check: only the self-check)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../reference/reference.h"
#include "user_questions.h"

static int rounds = 25;

/* The question every bench asks (the same in every language): one question, two options. */
static const char *REQUEST =
    "{\"questions\":[{\"id\":\"pkg\",\"question\":\"Which package manager?\",\"options\":["
    "{\"label\":\"pnpm (Recommended)\",\"description\":\"Fast\"},{\"label\":\"npm\"}]}]}";
static const char *ANSWER =
    "{\"answers\":[{\"id\":\"pkg\",\"selected\":[\"pnpm (Recommended)\"]}]}";

static const ref_option REF_OPTIONS[] = {{"pnpm (Recommended)", "Fast"}, {"npm", NULL}};
static const ref_item REF_QUESTIONS[] = {
    {"pkg", "Which package manager?", NULL, NULL, REF_OPTIONS, 2, false, NULL}};

static void check(uq_code code, const char *what) {
  if (code != UQ_OK) {
    fprintf(stderr, "%s failed: %s\n", what, uq_code_name(code));
    exit(1);
  }
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *xs, int n) {
  qsort(xs, n, sizeof *xs, cmp_double);
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

static void report(const char *name, double value, const char *unit) {
  printf("BENCH %s %.6g %s\n", name, value, unit);
  fflush(stdout);
}

/* ---- one op = one ask, settled before the next ---------------------------------------- */

typedef struct op {
  const char *name;
  void (*run)(void *state);
  void *state;
  long batch;
  double samples[64];
} op;

static double time_batch(op *o, long n) {
  double t0 = now_ns();
  for (long i = 0; i < n; i++)
    o->run(o->state);
  return (now_ns() - t0) / (double)n;
}

/* Interleaved rounds, the order rotating each round; fills each op's median in `out`. */
static void compare(op *ops, int n_ops, double target_ms, double *out) {
  for (int k = 0; k < n_ops; k++) {
    time_batch(&ops[k], 200);
    long n = 16;
    for (;;) {
      double ms = time_batch(&ops[k], n) * n / 1e6;
      if (ms >= target_ms / 4 || n >= (1L << 24)) {
        ops[k].batch = (long)(n * target_ms / (ms > 0.01 ? ms : 0.01));
        if (ops[k].batch < 16)
          ops[k].batch = 16;
        break;
      }
      n *= 4;
    }
  }
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < n_ops; k++) {
      op *o = &ops[(r + k) % n_ops];
      o->samples[r] = time_batch(o, o->batch);
    }
  for (int k = 0; k < n_ops; k++)
    out[k] = median(ops[k].samples, rounds);
}

/* uq_ask completion: the callback may fire before uq_ask returns or on another thread. */
typedef struct waiter {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  atomic_int done;
} waiter;

static void on_answer(void *user_data, uq_code code, const char *json) {
  waiter *w = user_data;
  if (code != UQ_OK) {
    fprintf(stderr, "ask failed: %s %s\n", uq_code_name(code), json);
    exit(1);
  }
  pthread_mutex_lock(&w->lock);
  atomic_store(&w->done, 1);
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

static void wait_done(waiter *w) {
  if (atomic_load(&w->done))
    return;
  pthread_mutex_lock(&w->lock);
  while (!atomic_load(&w->done))
    pthread_cond_wait(&w->cond, &w->lock);
  pthread_mutex_unlock(&w->lock);
}

typedef struct ours {
  uq_context *ctx;
  const uq_agent *agent;
  waiter w;
} ours;

static void run_uq_ask(void *p) {
  ours *o = p;
  atomic_store(&o->w.done, 0);
  check(uq_ask(o->ctx, REQUEST, o->agent, NULL, on_answer, &o->w), "uq_ask");
  wait_done(&o->w);
}

static void run_uq_ask_wait(void *p) {
  ours *o = p;
  char *json = NULL;
  check(uq_ask_wait(o->ctx, REQUEST, o->agent, NULL, &json), "uq_ask_wait");
  uq_string_free(json);
}

/* A provider written in C: answers each pending question at once, from inside ask. */
static void c_provider_ask(void *user_data, uint64_t ticket, const char *request_json) {
  (void)request_json;
  check(uq_answer((uq_context *)user_data, ticket, ANSWER, NULL), "uq_answer");
}

static ours *ours_new(const char *provider) {
  ours *o = calloc(1, sizeof *o);
  o->ctx = uq_context_new();
  pthread_mutex_init(&o->w.lock, NULL);
  pthread_cond_init(&o->w.cond, NULL);
  uint64_t reg;
  if (strcmp(provider, "c") == 0) {
    uq_provider p = {c_provider_ask, NULL, NULL};
    check(uq_register_provider(o->ctx, &p, o->ctx, &reg), "uq_register_provider");
  } else {
    check(uq_register_auto_responder(o->ctx, provider, false, &reg), "auto responder");
  }
  return o;
}

static void ours_free(ours *o) {
  uq_context_free(o->ctx);
  pthread_cond_destroy(&o->w.cond);
  pthread_mutex_destroy(&o->w.lock);
  free(o);
}

/* The reference's provider: answers at once with each question's first option. */
static void ref_first_option(void *provider_data, const ref_request *request, ref_callback callback,
                             void *user_data) {
  (void)provider_data;
  ref_answer_item items[8];
  size_t n = request->n_questions < 8 ? request->n_questions : 8;
  for (size_t i = 0; i < n; i++) {
    const ref_item *q = &request->questions[i];
    items[i].id = q->id;
    items[i].selected = q->n_options ? &q->options[0].label : NULL;
    items[i].n_selected = q->n_options ? 1 : 0;
    items[i].custom = NULL;
  }
  ref_answer answer = {items, n};
  callback(user_data, NULL, &answer);
}

static const ref_provider REF_PROVIDER = {ref_first_option, NULL};

typedef struct theirs {
  ref_registry agents;
  ref_service service;
  const ref_agent *agent;
  waiter w;
} theirs;

static void on_ref_answer(void *user_data, const ref_error *error, const ref_answer *answer) {
  (void)answer;
  if (error != NULL) {
    fprintf(stderr, "reference ask failed: %s\n", error->message);
    exit(1);
  }
  on_answer(user_data, UQ_OK, "");
}

static void run_ref_ask(void *p) {
  theirs *t = p;
  atomic_store(&t->w.done, 0);
  ref_request request = {REF_QUESTIONS, 1, t->agent, NULL};
  ref_error error;
  if (ref_ask(&t->service, &request, on_ref_answer, &t->w, &error) != 0) {
    fprintf(stderr, "reference ask failed: %s\n", error.message);
    exit(1);
  }
  wait_done(&t->w);
}

static theirs *theirs_new(void) {
  theirs *t = calloc(1, sizeof *t);
  ref_registry_init(&t->agents);
  ref_service_init(&t->service, &t->agents);
  ref_register_provider(&t->service, &REF_PROVIDER);
  pthread_mutex_init(&t->w.lock, NULL);
  pthread_cond_init(&t->w.cond, NULL);
  return t;
}

static void theirs_free(theirs *t) {
  ref_service_destroy(&t->service);
  ref_registry_destroy(&t->agents);
  pthread_cond_destroy(&t->w.cond);
  pthread_mutex_destroy(&t->w.lock);
  free(t);
}

static void per_ask(void) {
  ours *auto_ = ours_new("recommended");
  ours *c = ours_new("c");
  theirs *ref = theirs_new();
  op ops[] = {
      {"uq_ask", run_uq_ask, auto_, 0, {0}},
      {"uq_ask_wait", run_uq_ask_wait, auto_, 0, {0}},
      {"uq_ask_c_provider", run_uq_ask, c, 0, {0}},
      {"uq_ask_wait_c_provider", run_uq_ask_wait, c, 0, {0}},
      {"reference", run_ref_ask, ref, 0, {0}},
  };
  int n = sizeof ops / sizeof *ops;
  double med[8];
  compare(ops, n, 40, med);
  char name[128];
  for (int k = 0; k < n; k++) {
    snprintf(name, sizeof name, "c.ask.%s", ops[k].name);
    report(name, med[k], "ns");
  }
  ours_free(auto_);
  ours_free(c);
  theirs_free(ref);
}

/* ---- identity at scale ------------------------------------------------------------------ */

typedef struct population {
  ours *o;
  theirs *t;
  uq_agent **agents;
  ref_agent *ref_agents;
  char **ids;
  int n;
} population;

/* n live agents (every other one a child of the root before it), the asker entered last,
 * in a context of ours and in the reference's registry. */
static population populate(int n) {
  population p = {ours_new("first"),
                  theirs_new(),
                  calloc(n, sizeof(uq_agent *)),
                  calloc(n, sizeof(ref_agent)),
                  calloc(n, sizeof(char *)),
                  n};
  uq_agent *last_root = NULL;
  ref_agent *last_ref_root = NULL;
  for (int i = 1; i < n; i++) {
    if (asprintf(&p.ids[i], "agent-%d", i) < 0)
      exit(1);
    p.agents[i] = uq_agent_new(p.ids[i], 0);
    p.ref_agents[i].id = p.ids[i];
    int child = i % 2 == 0;
    check(uq_agents_enter(p.o->ctx, p.agents[i], child ? last_root : NULL), "uq_agents_enter");
    ref_registry_enter(&p.t->agents, &p.ref_agents[i], child ? last_ref_root : NULL);
    if (!child) {
      last_root = p.agents[i];
      last_ref_root = &p.ref_agents[i];
    }
  }
  p.agents[0] = uq_agent_new("asker", 0);
  p.ref_agents[0].id = "asker";
  check(uq_agents_enter(p.o->ctx, p.agents[0], NULL), "uq_agents_enter");
  ref_registry_enter(&p.t->agents, &p.ref_agents[0], NULL);
  p.o->agent = p.agents[0];
  p.t->agent = &p.ref_agents[0];
  return p;
}

static void population_free(population *p) {
  ours_free(p->o);
  theirs_free(p->t);
  for (int i = 0; i < p->n; i++) {
    uq_agent_free(p->agents[i]);
    free(p->ids[i]);
  }
  free(p->agents);
  free(p->ref_agents);
  free(p->ids);
}

/* Every scale in the same interleaved rounds, so that load from other jobs on a shared
 * machine hits 1 and 100,000 alike. */
static void identity(void) {
  const int scales[] = {1, 1000, 100000};
  population pops[3];
  op ops[6];
  char names[6][64];
  for (int s = 0; s < 3; s++) {
    pops[s] = populate(scales[s]);
    snprintf(names[2 * s], sizeof names[0], "ours.%d", scales[s]);
    snprintf(names[2 * s + 1], sizeof names[0], "reference.%d", scales[s]);
    ops[2 * s] = (op){names[2 * s], run_uq_ask_wait, pops[s].o, 0, {0}};
    ops[2 * s + 1] = (op){names[2 * s + 1], run_ref_ask, pops[s].t, 0, {0}};
  }
  double med[6];
  compare(ops, 6, 25, med);
  char name[128];
  for (int k = 0; k < 6; k++) {
    snprintf(name, sizeof name, "c.identity.%s", ops[k].name);
    report(name, med[k], "ns");
  }
  for (int s = 0; s < 3; s++)
    population_free(&pops[s]);
}

/* ---- many waiting asks ----------------------------------------------------------------- */

static long count_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return -1;
  char line[256];
  long n = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Threads:", 8) == 0)
      n = strtol(line + 8, NULL, 10);
  fclose(f);
  return n;
}

static long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return 0;
  long size = 0, resident = 0;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2)
    resident = 0;
  fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

static void ignore_ask(void *user_data, uint64_t ticket, const char *request_json) {
  (void)user_data;
  (void)ticket;
  (void)request_json;
}

static void count_settled(void *user_data, uq_code code, const char *json) {
  (void)json;
  if (code == UQ_ASK_ABORTED)
    atomic_fetch_add((atomic_long *)user_data, 1);
}

/* n asks waiting on a C provider at once: threads created, resident growth per ask (the
 * parsed questions included: C hands the library JSON), uq_pending(), and settling them all
 * by freeing the context. */
static void many_waiting(long n) {
  uq_context *ctx = uq_context_new();
  uq_provider p = {ignore_ask, NULL, NULL};
  uint64_t reg;
  check(uq_register_provider(ctx, &p, NULL, &reg), "uq_register_provider");
  atomic_long settled = 0;
  long threads_before = count_threads();
  long rss_before = rss_bytes();
  double t0 = now_ns();
  for (long i = 0; i < n; i++)
    check(uq_ask(ctx, REQUEST, NULL, NULL, count_settled, &settled), "uq_ask");
  double start_ns = (now_ns() - t0) / n;
  long rss_growth = rss_bytes() - rss_before;
  long threads_after = count_threads();
  t0 = now_ns();
  char *json = NULL;
  check(uq_pending(ctx, &json), "uq_pending");
  double pending_ms = (now_ns() - t0) / 1e6;
  uq_string_free(json);
  t0 = now_ns();
  uq_context_free(ctx);
  double settle_ms = (now_ns() - t0) / 1e6;
  if (atomic_load(&settled) != n) {
    fprintf(stderr, "only %ld of %ld asks settled\n", atomic_load(&settled), n);
    exit(1);
  }
  report("c.pending_asks", (double)n, "asks");
  report("c.start_per_ask", start_ns, "ns");
  report("c.rss_growth_per_pending_ask", (double)rss_growth / n, "B");
  report("c.threads_created_for_asks", (double)(threads_after - threads_before), "threads");
  report("c.pending_call", pending_ms, "ms");
  report("c.settle_all_by_context_free", settle_ms, "ms");
}

/* ---- 4 asking and 4 answering threads --------------------------------------------------- */

#define QUEUE_CAP 4096

typedef struct contention {
  uq_context *ctx;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint64_t queue[QUEUE_CAP];
  size_t head, len;
  atomic_int stop;
  atomic_long answered;
} contention;

/* The C provider: queues each ticket for the answering threads. */
static void queue_ask(void *user_data, uint64_t ticket, const char *request_json) {
  (void)request_json;
  contention *c = user_data;
  pthread_mutex_lock(&c->lock);
  if (c->len < QUEUE_CAP)
    c->queue[(c->head + c->len++) % QUEUE_CAP] = ticket;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

typedef struct window {
  atomic_int left;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  contention *c;
} window;

static void on_window_answer(void *user_data, uq_code code, const char *json) {
  (void)json;
  window *w = user_data;
  if (code == UQ_OK)
    atomic_fetch_add(&w->c->answered, 1);
  pthread_mutex_lock(&w->lock);
  atomic_fetch_sub(&w->left, 1);
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

static void *asker(void *p) {
  contention *c = p;
  window w;
  w.c = c;
  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.cond, NULL);
  while (!atomic_load(&c->stop)) {
    /* Keep a small window of asks in flight per thread. */
    atomic_store(&w.left, 16);
    for (int i = 0; i < 16; i++)
      if (uq_ask(c->ctx, REQUEST, NULL, NULL, on_window_answer, &w) != UQ_OK)
        atomic_fetch_sub(&w.left, 1);
    pthread_mutex_lock(&w.lock);
    while (atomic_load(&w.left) > 0)
      pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
  }
  pthread_cond_destroy(&w.cond);
  pthread_mutex_destroy(&w.lock);
  return NULL;
}

static void *answerer(void *p) {
  contention *c = p;
  for (;;) {
    pthread_mutex_lock(&c->lock);
    while (c->len == 0 && !atomic_load(&c->stop))
      pthread_cond_wait(&c->cond, &c->lock);
    if (c->len == 0) {
      pthread_mutex_unlock(&c->lock);
      return NULL;
    }
    uint64_t ticket = c->queue[c->head];
    c->head = (c->head + 1) % QUEUE_CAP;
    c->len--;
    pthread_mutex_unlock(&c->lock);
    uq_answer(c->ctx, ticket, ANSWER, NULL);
  }
}

static void contention_4x4(double seconds) {
  contention *c = calloc(1, sizeof *c);
  c->ctx = uq_context_new();
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  uq_provider p = {queue_ask, NULL, NULL};
  uint64_t reg;
  check(uq_register_provider(c->ctx, &p, c, &reg), "uq_register_provider");
  pthread_t threads[8];
  for (int i = 0; i < 4; i++)
    pthread_create(&threads[i], NULL, asker, c);
  for (int i = 0; i < 4; i++)
    pthread_create(&threads[4 + i], NULL, answerer, c);
  usleep(200000); /* warm up */
  long start_count = atomic_load(&c->answered);
  double t0 = now_ns();
  usleep((useconds_t)(seconds * 1e6));
  long n = atomic_load(&c->answered) - start_count;
  double elapsed = (now_ns() - t0) / 1e9;
  atomic_store(&c->stop, 1);
  pthread_mutex_lock(&c->lock);
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  for (int i = 4; i < 8; i++)
    pthread_join(threads[i], NULL);
  /* The answerers are gone: unregistering settles what is still waiting (ASK_ABORTED). */
  check(uq_unregister_provider(c->ctx, reg), "uq_unregister_provider");
  for (int i = 0; i < 4; i++)
    pthread_join(threads[i], NULL);
  report("c.contention_4x4", n / elapsed, "asks/s");
  uq_context_free(c->ctx);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* ---- self-check ------------------------------------------------------------------------ */

typedef struct captured {
  char text[1024];
} captured;

static void json_string(char *out, size_t cap, const char *s) {
  size_t n = 0;
  out[n++] = '"';
  for (; *s && n + 3 < cap; s++) {
    if (*s == '"' || *s == '\\')
      out[n++] = '\\';
    out[n++] = *s;
  }
  out[n++] = '"';
  out[n] = 0;
}

static void capture_ref(void *user_data, const ref_error *error, const ref_answer *answer) {
  (void)error;
  captured *c = user_data;
  /* Compact answer JSON, as the library renders it (one label, no custom, here). */
  char id[128], label[256];
  json_string(id, sizeof id, answer->answers[0].id);
  if (answer->answers[0].n_selected == 1) {
    json_string(label, sizeof label, answer->answers[0].selected[0]);
    snprintf(c->text, sizeof c->text, "{\"answers\":[{\"id\":%s,\"selected\":[%s]}]}", id, label);
  } else {
    snprintf(c->text, sizeof c->text, "{\"answers\":[{\"id\":%s,\"selected\":[]}]}", id);
  }
}

/* Before timing: the reference and the library must fail the original design's checks alike (same
 * code, same message, in its order) and answer alike, or the comparison is moot. */
static void self_check(void) {
  static const ref_option yes_no[] = {{"Yes", NULL}, {"No", NULL}};
  static const ref_intent ship = {"plan-review", "Ship"}, yes = {"plan-review", "Yes"};
  static const ref_item bad_approve[] = {
      {"plan", "Approve?", "the plan", NULL, yes_no, 2, false, &ship}};
  static const ref_item no_detail[] = {{"plan", "Approve?", NULL, NULL, yes_no, 2, false, &yes}};
  static const char *PLAN_SHIP =
      "{\"questions\":[{\"id\":\"plan\",\"question\":\"Approve?\",\"detail\":\"the plan\","
      "\"options\":[{\"label\":\"Yes\"},{\"label\":\"No\"}],"
      "\"intent\":{\"kind\":\"plan-review\",\"approve\":\"Ship\"}}]}";
  static const char *PLAN_NO_DETAIL =
      "{\"questions\":[{\"id\":\"plan\",\"question\":\"Approve?\","
      "\"options\":[{\"label\":\"Yes\"},{\"label\":\"No\"}],"
      "\"intent\":{\"kind\":\"plan-review\",\"approve\":\"Yes\"}}]}";

  uq_context *ctx = uq_context_new();
  uq_agent *root = uq_agent_new("root", 0), *child = uq_agent_new("child", 0);
  uq_agent *stale = uq_agent_new("root", 0);
  check(uq_agents_enter(ctx, root, NULL), "uq_agents_enter");
  check(uq_agents_enter(ctx, child, root), "uq_agents_enter");
  uq_abort *aborted = uq_abort_new();
  uq_abort_trigger(aborted);
  theirs *t = theirs_new();
  ref_agent ref_root = {"root"}, ref_child = {"child"}, ref_stale = {"root"};
  ref_registry_enter(&t->agents, &ref_root, NULL);
  ref_registry_enter(&t->agents, &ref_child, &ref_root);
  static const volatile bool ref_aborted = true;

  struct {
    const char *name, *json;
    const uq_agent *agent;
    const uq_abort *abort;
    ref_request ref;
    bool bare;
  } cases[] = {
      {"aborted signal", REQUEST, NULL, aborted, {REF_QUESTIONS, 1, NULL, &ref_aborted}, false},
      {"no questions", "{\"questions\":[]}", NULL, NULL, {REF_QUESTIONS, 0, NULL, NULL}, false},
      {"stale agent", REQUEST, stale, NULL, {REF_QUESTIONS, 1, &ref_stale, NULL}, false},
      {"child agent", REQUEST, child, NULL, {REF_QUESTIONS, 1, &ref_child, NULL}, false},
      {"approve names no option", PLAN_SHIP, NULL, NULL, {bad_approve, 1, NULL, NULL}, false},
      {"intent without detail", PLAN_NO_DETAIL, NULL, NULL, {no_detail, 1, NULL, NULL}, false},
      {"no provider", REQUEST, NULL, NULL, {REF_QUESTIONS, 1, NULL, NULL}, true},
      {"answered", REQUEST, NULL, NULL, {REF_QUESTIONS, 1, NULL, NULL}, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint64_t reg = 0;
    if (!cases[i].bare) {
      check(uq_register_auto_responder(ctx, "first", false, &reg), "auto responder");
      ref_register_provider(&t->service, &REF_PROVIDER);
    }
    char *ours = NULL;
    uq_ask_wait(ctx, cases[i].json, cases[i].agent, cases[i].abort, &ours);
    captured theirs = {{0}};
    ref_error error;
    if (ref_ask(&t->service, &cases[i].ref, capture_ref, &theirs, &error) != 0) {
      char message[600];
      json_string(message, sizeof message, error.message);
      snprintf(theirs.text, sizeof theirs.text, "{\"code\":\"%s\",\"message\":%s}", error.code,
               message);
      ref_error_free(&error);
    }
    if (strcmp(ours, theirs.text) != 0) {
      fprintf(stderr, "self-check \"%s\": ours gave %s, the reference %s\n", cases[i].name, ours,
              theirs.text);
      exit(1);
    }
    uq_string_free(ours);
    if (!cases[i].bare) {
      check(uq_unregister_provider(ctx, reg), "uq_unregister_provider");
      ref_unregister_provider(&t->service);
    }
  }
  uq_context_free(ctx);
  uq_agent_free(root);
  uq_agent_free(child);
  uq_agent_free(stale);
  uq_abort_free(aborted);
  theirs_free(t);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  if (quick)
    rounds = 3;
  self_check();
  if (argc > 1 && strcmp(argv[1], "--check") == 0)
    return 0;
  /* First, while the heap is fresh, so that resident growth is the asks' own. */
  many_waiting(quick ? 10000 : 100000);
  per_ask();
  identity();
  contention_4x4(quick ? 0.3 : 2.0);
  return 0;
}
