"""Turns the `BENCH <name> <value> <unit>` lines of one scripts/bench run into one table.

    python3 benches/report.py RESULTS [--criterion DIR]

RESULTS holds the lines every bench printed (and `META <key> <value…>` lines about the
machine); --criterion reads the Rust medians from criterion's estimates.json files. Prints
markdown: medians, the ratios binding / reference, identity at scale, the 100k-pending
figures, throughput, start-up and size, and whether each performance target is met.
"""

import json
import os
import sys


def load(path, criterion_dir=None):
    values, meta = {}, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "BENCH":
                values[parts[1]] = float(parts[2])
            elif len(parts) >= 2 and parts[0] == "META":
                meta[parts[1]] = " ".join(parts[2:])
    if criterion_dir and os.path.isdir(criterion_dir):
        for group, name in [
            ("ask", "auto_responder"),
            ("ask", "rust_provider"),
            ("ask", "reference_rust_provider"),
            ("ask", "inbox_round_trip"),
            *[("identity", f"{who}/{n}") for who in ("ours", "reference") for n in (1, 1000, 100000)],
        ]:
            est = os.path.join(criterion_dir, group, *name.split("/"), "new", "estimates.json")
            if os.path.exists(est):
                with open(est) as f:
                    median = json.load(f)["median"]["point_estimate"]
                values[f"rust.{group}.{name.replace('/', '.')}"] = median
    return values, meta


def ns(v):
    if v is None:
        return "—"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.2f} µs"
    return f"{v:.0f} ns"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fx(r, digits=2):
    return "—" if r is None else f"{r:.{digits}f}×"


def verdict(ok):
    return "—" if ok is None else ("met" if ok else "**missed**")


def main():
    args = sys.argv[1:]
    criterion = None
    if "--criterion" in args:
        i = args.index("--criterion")
        criterion = args[i + 1]
        del args[i : i + 2]
    v, meta = load(args[0], criterion)
    g = v.get
    out = []
    w = out.append

    w("### Machine")
    w("")
    w(f"- cores: **{meta.get('cores', '?')}** ({meta.get('cpu', '?')}); load average at start: {meta.get('loadavg', '?')}, at the end: {meta.get('loadavg_end', '?')}")
    w(f"- {meta.get('versions', '')}")
    w(f"- shared with other jobs: medians of {meta.get('rounds', 'many')} interleaved rounds (criterion: 40 samples)")
    w("")

    w("### 1. Per-ask overhead (median per ask, provider answers at once)")
    w("")
    w("| surface | ours | median | reference (same process) | median | ratio ours/ref | target |")
    w("|---|---|---|---|---|---|---|")
    rows = [
        ("Rust core", "Rust provider", "rust.ask.rust_provider", "Rust reference", "rust.ask.reference_rust_provider", None),
        ("Rust core", "AutoResponder", "rust.ask.auto_responder", "Rust reference", "rust.ask.reference_rust_provider", None),
        ("Rust core", "inbox round trip", "rust.ask.inbox_round_trip", "Rust reference", "rust.ask.reference_rust_provider", None),
        ("Node", "JS provider", "node.ask.js_provider", "pure-JS reference", "node.ask.reference", 15.0),
        ("Node", "AutoResponder", "node.ask.auto_responder", "pure-JS reference", "node.ask.reference", 8.0),
        ("Node", "inbox round trip", "node.ask.inbox_round_trip", "pure-JS reference", "node.ask.reference", 15.0),
        ("Node", "crossing only (no ask)¹", "node.ask.crossing_floor", "pure-JS reference", "node.ask.reference", 5.0),
        ("Node", "floor: Node-API reads, no checks³", "node.floor.typed", "pure-JS reference", "node.ask.reference", None),
        ("Node", "floor: JSON crossing, no checks³", "node.floor.json", "pure-JS reference", "node.ask.reference", None),
        ("Node", "floor: JSON crossing + JS provider³", "node.floor.json_js_provider", "pure-JS reference", "node.ask.reference", None),
        ("Python", "async, async provider", "python.ask.py_provider", "pure-Python reference", "python.ask.reference", 6.0),
        ("Python", "async, sync provider", "python.ask.sync_py_provider", "pure-Python reference", "python.ask.reference", 3.0),
        ("Python", "async, AutoResponder", "python.ask.auto_responder", "pure-Python reference", "python.ask.reference", 2.0),
        ("Python", "async, inbox round trip", "python.ask.inbox_round_trip", "pure-Python reference", "python.ask.reference", 6.0),
        ("Python", "inbox round trip, pure Python²", "python.ask.reference_inbox_round_trip", "pure-Python reference", "python.ask.reference", None),
        ("Python", "crossing only (no ask)¹", "python.ask.crossing_floor", "pure-Python reference", "python.ask.reference", None),
        ("Python", "ask_blocking, sync provider", "python.ask.blocking_py_provider", "pure-Python reference", "python.ask.reference", None),
        ("Python", "ask_blocking, sync provider", "python.ask.blocking_py_provider", "reference via run_until_complete", "python.ask.reference_run_until_complete", None),
        ("Python", "ask_blocking, AutoResponder", "python.ask.blocking_auto_responder", "pure-Python reference", "python.ask.reference", None),
        ("C", "uq_ask, AutoResponder", "c.ask.uq_ask", "C reference", "c.ask.reference", None),
        ("C", "uq_ask_wait, AutoResponder", "c.ask.uq_ask_wait", "C reference", "c.ask.reference", None),
        ("C", "uq_ask, C provider", "c.ask.uq_ask_c_provider", "C reference", "c.ask.reference", None),
        ("C", "uq_ask_wait, C provider", "c.ask.uq_ask_wait_c_provider", "C reference", "c.ask.reference", None),
    ]
    for surface, what, key, ref_name, ref_key, target in rows:
        if g(key) is None:
            continue
        r = ratio(g(key), g(ref_key))
        t = "—" if target is None else f"≤ {target:.0f}× — {verdict(None if r is None else r <= target)}"
        if key == "c.ask.uq_ask" and g(key) is not None:
            # The C target is absolute: the C reference works on C structs, with no JSON.
            t = f"≤ 800 ns — {verdict(g(key) <= 800)}"
        w(f"| {surface} | {what} | {ns(g(key))} | {ref_name} | {ns(g(ref_key))} | {fx(r, 1)} | {t} |")
    js_ref = g("node.ask.reference")
    for what, key in [("Rust provider", "rust.ask.rust_provider"), ("AutoResponder", "rust.ask.auto_responder")]:
        if g(key) is not None and js_ref is not None:
            speedup = js_ref / g(key)
            w(
                f"| Rust core | {what} | {ns(g(key))} | pure-JS reference | {ns(js_ref)} | "
                f"{fx(ratio(g(key), js_ref), 2)} (Rust is {speedup:.2f}× {'faster' if speedup >= 1 else 'as fast'}) | "
                f"≥ 10× faster — {verdict(speedup >= 10)} |"
            )
    w("")
    w(
        "¹ `AutoResponder.ask`/`.answer` called directly: the questions go to the native side and "
        "an answer comes back, with no ask, no provider call and no promise/future: the floor any "
        "ask through the binding pays as the bindings are built today (JSON or object conversion)."
    )
    if g("python.ask.reference_inbox_round_trip") is not None:
        w("")
        w(
            "² The same inbox round trip as the row above it (`ensure_future(ask)`, `sleep(0)`, "
            "answer, `await`), through the pure-Python reference with a pure-Python inbox: what "
            "asyncio itself costs for that op, the floor under any implementation's figure."
        )
    if g("node.floor.typed") is not None:
        w("")
        w(
            "³ `benches/node/floor.c`: the bench's request carried to native code and an answer "
            "back with nothing else done (no checks, no ask, no copy for the provider) — by "
            "Node-API reads of each field, by JSON text (`JSON.stringify`, one native read, "
            "`JSON.parse`), and by JSON with the JS provider called in between and its answer "
            "carried to native code too: the least any Node-API addon pays for the Node rows' "
            "crossing, before any work of its own."
        )
    w("")

    w("### 2. Identity at scale (median ask latency with N live agents, half roots, half children; the asker entered last)")
    w("")
    w("| surface | implementation | 1 | 1,000 | 100,000 | 100,000 / 1 | target |")
    w("|---|---|---|---|---|---|---|")
    for lang, name in [("rust", "Rust"), ("node", "Node"), ("python", "Python"), ("c", "C")]:
        for who in ("ours", "reference"):
            a, b, c = (g(f"{lang}.identity.{who}.{n}") for n in (1, 1000, 100000))
            if a is None:
                continue
            r = ratio(c, a)
            t = f"≤ 1.2× — {verdict(None if r is None else r <= 1.2)}" if who == "ours" else "(O(n) roots scan)"
            w(f"| {name} | {who} | {ns(a)} | {ns(b)} | {ns(c)} | {fx(r)} | {t} |")
    w("")

    w("### 3. Many waiting asks (100,000 pending in one QuestionInbox)")
    w("")
    w("| figure | Rust core | C ABI | target |")
    w("|---|---|---|---|")
    b = g("rust.bytes_per_pending_ask_beyond_payload")
    w(
        f"| heap bytes per pending ask beyond its payload | {'—' if b is None else f'{b:.0f} B'} | — | "
        f"≤ 2 KiB — {verdict(None if b is None else b <= 2048)} |"
    )
    p = g("rust.payload_bytes_per_ask")
    w(f"| payload (the questions) per ask, for scale | {'—' if p is None else f'{p:.0f} B'} | — | |")
    r1, r2 = g("rust.rss_growth_per_pending_ask"), g("c.rss_growth_per_pending_ask")
    w(
        f"| resident growth per pending ask | {'—' if r1 is None else f'{r1:.0f} B (payload excluded)'} | "
        f"{'—' if r2 is None else f'{r2:.0f} B (payload included: C passes JSON)'} | |"
    )
    s1, s2 = g("rust.start_per_ask"), g("c.start_per_ask")
    w(f"| time to start one ask (100k in a row) | {ns(s1)} | {ns(s2)} | |")
    p1, p2 = g("rust.pending_call"), g("c.pending_call")
    w(
        f"| `pending()` of 100,000 | {'—' if p1 is None else f'{p1:.1f} ms'} | "
        f"{'—' if p2 is None else f'{p2:.1f} ms (`uq_pending`, as JSON)'} | |"
    )
    t1, t2 = g("rust.settle_all_by_context_drop"), g("c.settle_all_by_context_free")
    ok = None if t1 is None else t1 < 1000 and (t2 is None or t2 < 1000)
    w(
        f"| settle all 100,000 by dropping the context | {'—' if t1 is None else f'{t1:.0f} ms'} | "
        f"{'—' if t2 is None else f'{t2:.0f} ms (`uq_context_free`)'} | < 1 s — {verdict(ok)} |"
    )
    h1, h2 = g("rust.threads_created_for_asks"), g("c.threads_created_for_asks")
    ok = None if h1 is None else h1 == 0 and (h2 is None or h2 == 0)
    w(
        f"| threads created for the 100,000 asks | {'—' if h1 is None else f'{h1:.0f}'} | "
        f"{'—' if h2 is None else f'{h2:.0f}'} | 0 — {verdict(ok)} |"
    )
    w("")

    w("### 4. Throughput under contention (4 threads asking, 4 answering, one inbox)")
    w("")
    w("| surface | asks per second |")
    w("|---|---|")
    for name, key in [("Rust core", "rust.contention_4x4_asks_per_second"), ("C ABI", "c.contention_4x4")]:
        if g(key) is not None:
            w(f"| {name} | {g(key):,.0f} |")
    w("")

    w("### 5. Start-up and size")
    w("")
    w("| figure | value |")
    w("|---|---|")
    for name, key, unit in [
        ("`import user_questions` (in a fresh interpreter, median)", "python.import", "ms"),
        ("`import asyncio` alone, which the package needs (baseline)", "python.import_asyncio", "ms"),
        ("`require('user-questions')` (in a fresh node, median)", "node.require", "ms"),
        ("stripped `libuser_questions.so` (C ABI)", "size.libuser_questions_so", "B"),
        ("stripped Node addon (`.node`)", "size.node_addon", "B"),
        ("stripped Python extension (`_native.cpython-*.so`)", "size.python_ext", "B"),
    ]:
        x = g(key)
        if x is None:
            continue
        w(f"| {name} | {x:.1f} ms |" if unit == "ms" else f"| {name} | {x / 1024:.0f} KiB ({x:,.0f} B) |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
