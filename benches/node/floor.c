/*
 * What any Node-API addon pays to carry the bench's request to native code and an answer back,
 * with nothing else done: no checks, no ask, no allocation on the native side. The floors under
 * the Node rows of BENCHMARKS.md §1 (benches/node/bench.js times them beside the pure-JS
 * reference; scripts/bench builds this file with gcc against Node's own headers).
 *
 *   typed(request)  reads every field of {questions: [{id, question, options: [{label,
 *                   description?}], header?, multiSelect?}]} through Node-API (the strings
 *                   copied out as UTF-8) and builds {answers: [{id, selected: [first label]}]}
 *                   from what it read;
 *   text(json)      reads a JSON text as UTF-8 and returns the answer's JSON text, made from
 *                   bytes: what a crossing by JSON costs natively (the caller stringifies and
 *                   parses).
 */
#include <node_api.h>
#include <string.h>

#define MAX_TEXT 1024

static size_t read_string(napi_env env, napi_value value, char *buf, size_t size) {
  size_t len = 0;
  napi_get_value_string_utf8(env, value, buf, size, &len);
  return len;
}

static napi_value typed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value request, questions, answers, out;
  char text[MAX_TEXT];
  uint32_t count = 0;
  napi_get_cb_info(env, info, &argc, &request, NULL, NULL);
  napi_get_named_property(env, request, "questions", &questions);
  napi_get_array_length(env, questions, &count);
  napi_create_array_with_length(env, count, &answers);
  for (uint32_t i = 0; i < count; i++) {
    napi_value question, value, options, option, answer, selected, string;
    char id[MAX_TEXT], first[MAX_TEXT];
    size_t id_len, first_len = 0;
    uint32_t option_count = 0;
    bool has;
    napi_get_element(env, questions, i, &question);
    napi_get_named_property(env, question, "id", &value);
    id_len = read_string(env, value, id, sizeof id);
    napi_get_named_property(env, question, "question", &value);
    read_string(env, value, text, sizeof text);
    napi_has_named_property(env, question, "header", &has);
    napi_has_named_property(env, question, "multiSelect", &has);
    napi_get_named_property(env, question, "options", &options);
    napi_get_array_length(env, options, &option_count);
    for (uint32_t j = 0; j < option_count; j++) {
      size_t len;
      napi_get_element(env, options, j, &option);
      napi_get_named_property(env, option, "label", &value);
      len = read_string(env, value, text, sizeof text);
      if (j == 0) {
        memcpy(first, text, len);
        first_len = len;
      }
      napi_has_named_property(env, option, "description", &has);
      if (has) {
        napi_get_named_property(env, option, "description", &value);
        read_string(env, value, text, sizeof text);
      }
    }
    napi_create_object(env, &answer);
    napi_create_string_utf8(env, id, id_len, &string);
    napi_set_named_property(env, answer, "id", string);
    napi_create_array_with_length(env, 1, &selected);
    napi_create_string_utf8(env, first, first_len, &string);
    napi_set_element(env, selected, 0, string);
    napi_set_named_property(env, answer, "selected", selected);
    napi_set_element(env, answers, i, answer);
  }
  napi_create_object(env, &out);
  napi_set_named_property(env, out, "answers", answers);
  return out;
}

static napi_value text(napi_env env, napi_callback_info info) {
  static const char answer[] =
      "{\"answers\":[{\"id\":\"pkg\",\"selected\":[\"pnpm (Recommended)\"]}]}";
  size_t argc = 1;
  napi_value json, out;
  char buf[MAX_TEXT];
  napi_get_cb_info(env, info, &argc, &json, NULL, NULL);
  read_string(env, json, buf, sizeof buf);
  napi_create_string_utf8(env, answer, sizeof answer - 1, &out);
  return out;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value fn;
  napi_create_function(env, "typed", NAPI_AUTO_LENGTH, typed, NULL, &fn);
  napi_set_named_property(env, exports, "typed", fn);
  napi_create_function(env, "text", NAPI_AUTO_LENGTH, text, NULL, &fn);
  napi_set_named_property(env, exports, "text", fn);
  return exports;
}
