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
for t in ("request_json", "answer_json", "tool_args"):
    n = len(os.listdir(os.path.join(corpus, t)))
    print(f"seeded {t}: {n} inputs")
