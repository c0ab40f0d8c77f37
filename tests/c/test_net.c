/*
 * uq_register_web_provider and uq_register_remote_provider (§19, §20): a web provider answered
 * over its HTTP API from a plain TCP socket, withdrawn by unregistering and by freeing the
 * context; uq_register_web_provider_with_access (§23): a bad access file's message, people
 * signing in with their own tokens, seeing only their questions, answers with a respondent; a
 * remote provider's bad input, and a hub that cannot be reached settling by the
 * ask's deadline.
 */
#include "support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* One HTTP/1.1 request on a new connection; returns the status (-1 when the connection
 * fails) and copies the body into `body` (NUL-terminated, truncated to `cap`). */
static int http(int port, const char *method, const char *path, const char *token,
                const char *payload, char *body, size_t cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  char request[4096];
  int n =
      snprintf(request, sizeof request,
               "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %zu\r\n"
               "Connection: close\r\n\r\n%s",
               method, path, port, token, payload ? strlen(payload) : 0, payload ? payload : "");
  for (int sent = 0; sent < n;) {
    ssize_t w = send(fd, request + sent, (size_t)(n - sent), 0);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    sent += (int)w;
  }
  char response[16384];
  size_t len = 0;
  for (;;) {
    ssize_t r = recv(fd, response + len, sizeof response - 1 - len, 0);
    if (r <= 0)
      break;
    len += (size_t)r;
    if (len == sizeof response - 1)
      break;
  }
  close(fd);
  response[len] = '\0';
  int status = -1;
  if (sscanf(response, "HTTP/1.1 %d", &status) != 1)
    return -1;
  const char *start = strstr(response, "\r\n\r\n");
  if (body && cap) {
    snprintf(body, cap, "%s", start ? start + 4 : "");
  }
  return status;
}

/* Port and token of `http://127.0.0.1:PORT/?token=TOKEN`. */
static int parse_url(const char *url, int *port, char *token, size_t cap) {
  const char *prefix = "http://127.0.0.1:";
  if (strncmp(url, prefix, strlen(prefix)) != 0)
    return 0;
  *port = atoi(url + strlen(prefix));
  const char *t = strstr(url, "/?token=");
  if (!t)
    return 0;
  snprintf(token, cap, "%s", t + strlen("/?token="));
  return *port > 0 && token[0] != '\0';
}

/* The ticket of the first pending question the API lists, or 0. */
static uint64_t first_ticket(int port, const char *token) {
  char body[8192];
  if (http(port, "GET", "/api/v1/questions", token, NULL, body, sizeof body) != 200)
    return 0;
  const char *t = strstr(body, "\"ticket\":");
  return t ? strtoull(t + strlen("\"ticket\":"), NULL, 10) : 0;
}

static void web_bad_input(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg = 77;
  char *url = (char *)"untouched";
  CHECK_CODE(uq_register_web_provider(NULL, NULL, &reg, &url), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider(ctx, NULL, NULL, &url), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider(ctx, NULL, &reg, NULL), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider(ctx, "not an address", &reg, &url), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider(ctx, "\xff:0", &reg, &url), UQ_INVALID_ARGUMENT);
  CHECK(reg == 77);
  CHECK_STR(url, "untouched");

  /* Only one provider per context: the second server is stopped again. */
  uint64_t auto_reg = 0;
  CHECK_CODE(uq_register_auto_responder(ctx, "first", false, &auto_reg), UQ_OK);
  CHECK_CODE(uq_register_web_provider(ctx, NULL, &reg, &url), UQ_DUPLICATE_PROVIDER);
  CHECK(reg == 77);
  CHECK_STR(url, "untouched");
  uq_context_free(ctx);
}

static void web_answered_over_http(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg = 0;
  char *url = NULL;
  CHECK_CODE(uq_register_web_provider(ctx, "127.0.0.1:0", &reg, &url), UQ_OK);
  CHECK(reg > 0);
  int port = 0;
  char token[300];
  CHECK(url && parse_url(url, &port, token, sizeof token));
  uq_string_free(url);

  completion c;
  completion_init(&c);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &c), UQ_OK);
  CHECK(completion_calls(&c) == 0);

  char body[8192];
  /* The wrong token is refused; the question stays pending. */
  CHECK(http(port, "GET", "/api/v1/questions", "wrong", NULL, body, sizeof body) == 401);
  uint64_t ticket = first_ticket(port, token);
  CHECK(ticket > 0);
  char path[128];
  snprintf(path, sizeof path, "/api/v1/questions/%llu/answer", (unsigned long long)ticket);
  /* An answer that does not fit: 422, still pending. */
  CHECK(http(port, "POST", path, token, "{\"answers\":[{\"id\":\"nope\",\"selected\":[]}]}", body,
             sizeof body) == 422);
  CHECK_CONTAINS(body, "BAD_ANSWER");
  CHECK(completion_calls(&c) == 0);
  CHECK(http(port, "POST", path, token, CONFIRM_YES, body, sizeof body) == 200);
  CHECK_STR(body, "{\"ok\":true}");
  CHECK(completion_wait(&c) == 1);
  CHECK_CODE(c.code, UQ_OK);
  CHECK_STR(c.json, CONFIRM_YES);
  /* Answered once: a second answer is refused. */
  CHECK(http(port, "POST", path, token, CONFIRM_NO, body, sizeof body) == 409);

  /* Unregistering withdraws a waiting ask and stops the server before it returns. */
  completion waiting;
  completion_init(&waiting);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &waiting), UQ_OK);
  CHECK(first_ticket(port, token) > ticket);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK(completion_calls(&waiting) == 1);
  CHECK_CODE(waiting.code, UQ_ASK_ABORTED);
  CHECK_CONTAINS(waiting.json, MSG_DISPOSED);
  CHECK(http(port, "GET", "/api/v1/questions", token, NULL, body, sizeof body) == -1);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);

  completion_destroy(&waiting);
  completion_destroy(&c);
  uq_context_free(ctx);
}

static void web_context_free_withdraws(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg = 0;
  char *url = NULL;
  CHECK_CODE(uq_register_web_provider(ctx, NULL, &reg, &url), UQ_OK);
  int port = 0;
  char token[300];
  CHECK(url && parse_url(url, &port, token, sizeof token));
  uq_string_free(url);
  completion c;
  completion_init(&c);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &c), UQ_OK);
  CHECK(first_ticket(port, token) > 0);
  uq_context_free(ctx);
  CHECK(completion_calls(&c) == 1);
  CHECK_CODE(c.code, UQ_ASK_ABORTED);
  CHECK_CONTAINS(c.json, MSG_DISPOSED);
  CHECK(http(port, "GET", "/api/v1/questions", token, NULL, NULL, 0) == -1);
  completion_destroy(&c);
}

/* The access file of the tests below (§23): alice's token is "alice-token-0123456789", bob's
 * "bob-token-0123456789" (their SHA-256 in hex). */
static const char *const ACCESS_FILE =
    "[[person]]\n"
    "id = \"alice\"\n"
    "name = \"Alice Martin\"\n"
    "token_sha256 = \"965b04f03a8200d4bff70f6df635c1d4d3e9c9a1d164d415efc95b9304bfbaf2\"\n"
    "\n"
    "[[person]]\n"
    "id = \"bob\"\n"
    "token_sha256 = \"0357e24c1cb1874dde0773886097863f71ac666f63fba1e9d4c623b79ffda11f\"\n";
#define ALICE "alice-token-0123456789"
#define BOB   "bob-token-0123456789"

/* Writes `text` to a new temporary file whose path is copied into `path` (`cap` >= 32). */
static int write_temp(const char *text, char *path, size_t cap) {
  snprintf(path, cap, "/tmp/uq_access_XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0)
    return 0;
  size_t len = strlen(text);
  int ok = write(fd, text, len) == (ssize_t)len;
  close(fd);
  return ok;
}

static void web_access_bad_input(void) {
  uq_context *ctx = uq_context_new();
  char bad[64];
  CHECK(write_temp("[[person]]\nid = \"Bob\"\ntoken_sha256 = \"00\"\n", bad, sizeof bad));
  uint64_t reg = 77;
  char *url = (char *)"untouched";
  char *error = NULL;

  /* A file that does not pass: INVALID_ARGUMENT, and the message names the file and why. */
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, bad, &reg, &url, &error),
             UQ_INVALID_ARGUMENT);
  char want[160];
  snprintf(want, sizeof want,
           "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"cannot read the access file %s: person 1",
           bad);
  CHECK(error && strncmp(error, want, strlen(want)) == 0);
  if (error && strncmp(error, want, strlen(want)) != 0)
    printf("  error: %s\n", error);
  uq_string_free(error);

  /* A file that cannot be read. */
  error = NULL;
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, "/nonexistent/access.toml", &reg, &url,
                                                  &error),
             UQ_INVALID_ARGUMENT);
  CHECK_CONTAINS(error, "cannot read the access file /nonexistent/access.toml: ");
  uq_string_free(error);

  /* Without out_error_json, the code alone. */
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, bad, &reg, &url, NULL),
             UQ_INVALID_ARGUMENT);
  /* Every pointer is checked. */
  error = NULL;
  CHECK_CODE(uq_register_web_provider_with_access(NULL, NULL, bad, &reg, &url, &error),
             UQ_INVALID_ARGUMENT);
  CHECK_CONTAINS(error, "INVALID_ARGUMENT");
  uq_string_free(error);
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, "\xff", &reg, &url, NULL),
             UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider_with_access(ctx, "\xff:0", NULL, &reg, &url, NULL),
             UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, NULL, NULL, &url, NULL),
             UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, NULL, &reg, NULL, NULL),
             UQ_INVALID_ARGUMENT);
  CHECK(reg == 77);
  CHECK_STR(url, "untouched");

  /* NULL access_path: uq_register_web_provider's one random token, in the URL. */
  error = (char *)"untouched";
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, NULL, &reg, &url, &error), UQ_OK);
  CHECK(error == NULL);
  int port = 0;
  char token[300];
  CHECK(parse_url(url, &port, token, sizeof token));
  uq_string_free(url);
  char body[256];
  CHECK(http(port, "GET", "/api/v1/me", token, NULL, body, sizeof body) == 200);
  CHECK_STR(body, "{}");
  /* One provider per context. */
  url = (char *)"untouched";
  uint64_t other = 77;
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, bad, &other, &url, NULL),
             UQ_INVALID_ARGUMENT);
  char good[64];
  CHECK(write_temp(ACCESS_FILE, good, sizeof good));
  CHECK_CODE(uq_register_web_provider_with_access(ctx, NULL, good, &other, &url, NULL),
             UQ_DUPLICATE_PROVIDER);
  CHECK(other == 77);
  CHECK_STR(url, "untouched");
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  unlink(good);
  unlink(bad);
  uq_context_free(ctx);
}

static void web_access_people_answer(void) {
  char path[64];
  CHECK(write_temp(ACCESS_FILE, path, sizeof path));
  uq_context *ctx = uq_context_new();
  uint64_t reg = 0;
  char *url = NULL;
  char *error = (char *)"untouched";
  CHECK_CODE(uq_register_web_provider_with_access(ctx, "127.0.0.1:0", path, &reg, &url, &error),
             UQ_OK);
  CHECK(error == NULL);
  CHECK(reg > 0);
  /* The URL carries no token: each person signs in with their own. */
  CHECK(url && strstr(url, "token") == NULL);
  int port = 0;
  CHECK(url && sscanf(url, "http://127.0.0.1:%d/", &port) == 1 && port > 0);
  char want_url[64];
  snprintf(want_url, sizeof want_url, "http://127.0.0.1:%d/", port);
  CHECK_STR(url, want_url);
  uq_string_free(url);

  char body[8192];
  CHECK(http(port, "GET", "/api/v1/me", ALICE, NULL, body, sizeof body) == 200);
  CHECK_STR(body, "{\"id\":\"alice\",\"name\":\"Alice Martin\"}");
  CHECK(http(port, "GET", "/api/v1/me", BOB, NULL, body, sizeof body) == 200);
  CHECK_STR(body, "{\"id\":\"bob\",\"name\":\"bob\"}");
  CHECK(http(port, "GET", "/api/v1/me", "wrong", NULL, body, sizeof body) == 401);

  /* A question for bob is not listed for alice. */
  completion for_bob;
  completion_init(&for_bob);
  const char *to_bob = "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed?\","
                       "\"options\":[{\"label\":\"Yes (Recommended)\"},{\"label\":\"No\"}]}],"
                       "\"to\":[\"bob\"]}";
  CHECK_CODE(uq_ask(ctx, to_bob, NULL, NULL, on_done, &for_bob), UQ_OK);
  uint64_t bobs = first_ticket(port, BOB);
  CHECK(bobs > 0);
  CHECK(http(port, "GET", "/api/v1/questions", ALICE, NULL, body, sizeof body) == 200);
  CHECK_STR(body, "{\"pending\":[]}");
  char path_of[128];
  snprintf(path_of, sizeof path_of, "/api/v1/questions/%llu/answer", (unsigned long long)bobs);
  CHECK(http(port, "POST", path_of, ALICE, CONFIRM_YES, body, sizeof body) == 404);
  CHECK(completion_calls(&for_bob) == 0);

  /* A question for everyone: alice answers it, and the answer says so. */
  completion c;
  completion_init(&c);
  CHECK_CODE(uq_ask(ctx, CONFIRM, NULL, NULL, on_done, &c), UQ_OK);
  uint64_t ticket = first_ticket(port, ALICE);
  CHECK(ticket > bobs);
  snprintf(path_of, sizeof path_of, "/api/v1/questions/%llu/answer", (unsigned long long)ticket);
  CHECK(http(port, "POST", path_of, ALICE, CONFIRM_YES, body, sizeof body) == 200);
  CHECK(completion_wait(&c) == 1);
  CHECK_CODE(c.code, UQ_OK);
  CHECK_STR(c.json, "{\"answers\":[{\"id\":\"go\",\"selected\":[\"Yes (Recommended)\"]}],"
                    "\"respondent\":{\"id\":\"alice\",\"name\":\"Alice Martin\"}}");

  /* Unregistering withdraws bob's question and stops the server. */
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  CHECK(completion_calls(&for_bob) == 1);
  CHECK_CODE(for_bob.code, UQ_ASK_ABORTED);
  CHECK(http(port, "GET", "/api/v1/me", ALICE, NULL, body, sizeof body) == -1);
  completion_destroy(&c);
  completion_destroy(&for_bob);
  uq_context_free(ctx);
  unlink(path);
}

/* A loopback port nothing listens on (bound for a moment, then released). */
static int unused_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

static void remote_bad_input(void) {
  uq_context *ctx = uq_context_new();
  uint64_t reg = 77;
  CHECK_CODE(uq_register_remote_provider(NULL, "http://127.0.0.1:1", "t", &reg),
             UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_remote_provider(ctx, NULL, "t", &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_remote_provider(ctx, "ftp://127.0.0.1:1", "t", &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_remote_provider(ctx, "\xff", "t", &reg), UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_remote_provider(ctx, "http://127.0.0.1:1", "\xff", &reg),
             UQ_INVALID_ARGUMENT);
  /* No token given and none in the URL. */
  CHECK_CODE(uq_register_remote_provider(ctx, "http://127.0.0.1:1", NULL, &reg),
             UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_remote_provider(ctx, "http://127.0.0.1:1", "a b", &reg),
             UQ_INVALID_ARGUMENT);
  CHECK_CODE(uq_register_remote_provider(ctx, "http://127.0.0.1:1", "t", NULL),
             UQ_INVALID_ARGUMENT);
  CHECK(reg == 77);
  /* The token of the URL's query serves when none is given. */
  CHECK_CODE(uq_register_remote_provider(ctx, "http://127.0.0.1:1/?token=abc", NULL, &reg), UQ_OK);
  uint64_t other = 77;
  CHECK_CODE(uq_register_remote_provider(ctx, "http://127.0.0.1:1", "t", &other),
             UQ_DUPLICATE_PROVIDER);
  CHECK(other == 77);
  CHECK_CODE(uq_unregister_provider(ctx, reg), UQ_OK);
  uq_context_free(ctx);
}

static void remote_unreachable_hub_settles_by_the_deadline(void) {
  uq_context *ctx = uq_context_new();
  int port = unused_port();
  CHECK(port > 0);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  uint64_t reg = 0;
  CHECK_CODE(uq_register_remote_provider(ctx, url, "secret", &reg), UQ_OK);
  const char *request = "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed?\","
                        "\"options\":[{\"label\":\"Yes\"},{\"label\":\"No\"}]}],\"timeoutMs\":300}";
  char *json = NULL;
  CHECK_CODE(uq_ask_wait(ctx, request, NULL, NULL, &json), UQ_ASK_TIMED_OUT);
  CHECK_CONTAINS(json, "ASK_TIMED_OUT");
  uq_string_free(json);
  uq_context_free(ctx);
}

/* A process forked from one whose remote providers already run (a pre-forking server, Python's
 * multiprocessing) asks through a remote provider of its own: the parent's remote thread is not
 * in the child, and the child's ask must still reach its end (here an unreachable hub: timed
 * out by its deadline) instead of waiting on a thread that does not exist. */
static void remote_works_in_a_forked_child(void) {
  uq_context *parent = uq_context_new();
  uint64_t reg = 0;
  CHECK_CODE(uq_register_remote_provider(parent, "http://127.0.0.1:1", "t", &reg), UQ_OK);
  int result[2];
  CHECK(pipe(result) == 0);
  fflush(stdout);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    /* The result goes through the pipe (a checker's verdict on the child's exit is not this
     * test's); a hang is ended by SIGALRM, and the pipe then says nothing. */
    close(result[0]);
    alarm(60);
    uq_context *ctx = uq_context_new();
    int port = unused_port();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    uint64_t own = 0;
    uq_code code = uq_register_remote_provider(ctx, url, "t", &own);
    char *json = NULL;
    if (code == UQ_OK) {
      code = uq_ask_wait(
          ctx, "{\"questions\":[{\"id\":\"go\",\"question\":\"Proceed?\"}],\"timeoutMs\":300}",
          NULL, NULL, &json);
    }
    char line[512];
    int n = snprintf(line, sizeof line, "%d %s", (int)code, json ? json : "");
    uq_string_free(json);
    if (write(result[1], line, (size_t)n) != n) {
      _exit(4);
    }
    _exit(0);
  }
  close(result[1]);
  char got[512] = {0};
  size_t have = 0;
  ssize_t n;
  while (have < sizeof got - 1 && (n = read(result[0], got + have, sizeof got - 1 - have)) > 0) {
    have += (size_t)n;
  }
  close(result[0]);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  char want[16];
  snprintf(want, sizeof want, "%d ", (int)UQ_ASK_TIMED_OUT);
  CHECK(strncmp(got, want, strlen(want)) == 0);
  CHECK_CONTAINS(got, "ASK_TIMED_OUT");
  if (strncmp(got, want, strlen(want)) != 0) {
    printf("  the forked child's ask: \"%s\" (status %d)\n", got, status);
  }
  CHECK_CODE(uq_unregister_provider(parent, reg), UQ_OK);
  uq_context_free(parent);
}

int main(void) {
  web_bad_input();
  web_answered_over_http();
  web_context_free_withdraws();
  web_access_bad_input();
  web_access_people_answer();
  remote_bad_input();
  remote_unreachable_hub_settles_by_the_deadline();
  remote_works_in_a_forked_child();
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("web and remote provider tests passed\n");
  return 0;
}
