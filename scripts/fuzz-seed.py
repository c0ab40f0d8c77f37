#!/usr/bin/env python3
"""Seeds the fuzz corpora from tests/vectors: requests, question+answer pairs, tool arguments."""
import glob, hashlib, json, os

root = os.path.join(os.path.dirname(__file__), "..")
corpus = os.path.join(root, "fuzz", "corpus")


def put(target, text):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    data = text.encode()
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def cases(pattern):
    for path in sorted(glob.glob(os.path.join(root, "tests", "vectors", pattern))):
        with open(path) as f:
            yield from json.load(f)


for case in cases("*.json"):
    if "request" in case:
        put("request_json", json.dumps(case["request"]))
    if "requestJson" in case:
        put("request_json", case["requestJson"])
    answer = (case.get("provider") or {}).get("answer")
    if answer is not None and "request" in case:
        put("answer_json", json.dumps({"questions": case["request"].get("questions"), "answer": answer}))
for case in cases("inbox/*.json"):
    for step in case.get("submit", []):
        if "answer" in step:
            put("answer_json", json.dumps({"questions": case["request"].get("questions"), "answer": step["answer"]}))
for case in cases("tool/*.json"):
    if "args" in case:
        put("tool_args", json.dumps(case["args"]))
    if "argsJson" in case:
        put("tool_args", case["argsJson"])
# c_abi: the first byte picks the entry point (fuzz/fuzz_targets/c_abi.rs), the rest is its string.
for name in ("request_json", "answer_json", "tool_args"):
    d = os.path.join(corpus, name)
    for i, f in enumerate(sorted(os.listdir(d))[:60]):
        with open(os.path.join(d, f), "rb") as src:
            body = src.read()
        op = {"request_json": 0, "answer_json": 3, "tool_args": 2}[name]
        put("c_abi", (chr(op + 8 * (i % 2))).encode().decode() + body.decode("utf-8", "replace"))
for t in ("request_json", "answer_json", "tool_args", "c_abi"):
    n = len(os.listdir(os.path.join(corpus, t)))
    print(f"seeded {t}: {n} inputs")
