"""End to end: a hub mails one-tap links (examples/hub/mail-links.py) and a person answers by one.

`uq serve --access … --on-question "mail-links.py …"` is started on a fresh SQLite store with an
access file (alice in group ops, bob in none, an asker ci whose questions go to ops). The asker
posts a single-select question; the hub hands P, with `links`, to the script, which mails alice
through aiosmtpd into a Maildir. The test then reads the mail as a mail client would and:

1. fetches every link by GET, as a mail scanner or a chat link preview does (no cookie, no
   token): each shows a confirmation page, and the ask is still pending;
2. presses "Yes" as alice's browser would (the page's form: a POST to the same URL, with the
   hub's own Origin): 200, and the asker's poll gets the answer with alice as the respondent;
3. checks a link is good for one answer (409 afterwards, for "No" too), that an altered link
   is 404 and a cross-site POST 403 — before and after the answer — and that bob got no mail.

The contract is docs/reference.md §23 (one-tap links). `uq` is `$UQ_BIN`, else
`<repo>/target/<host triple>/debug/uq` (tests/hub/mail/run builds it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest

from conftest import MAIL_SCRIPT, PYTHON, REPO, body_lines

QUESTION = {
    "id": "deploy",
    "question": "Deploy to production?",
    "options": [{"label": "Yes"}, {"label": "No"}],
}
ALICE = {"id": "alice", "name": "Alice Martin"}
FOREIGN_ORIGIN = "https://attacker.example"


# --- the hub ------------------------------------------------------------------------------


def uq_bin() -> Path:
    if os.environ.get("UQ_BIN"):
        return Path(os.environ["UQ_BIN"])
    triple = (
        os.environ.get("CARGO_BUILD_TARGET")
        or subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True)
        .stdout.split("host: ")[1]
        .split()[0]
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return target / triple / "debug" / "uq"


class Hub:
    """`uq serve` as a child process; its stderr is collected (for the `open` line and for
    failure messages: the script's own stderr lines end up there too)."""

    def __init__(self, args: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if k != "UQ_TOKEN"}
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env=env,
        )  # fmt: skip
        self.lines: list[str] = []
        self._opened = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("open "):
                self._opened.set()
        self._opened.set()  # the hub ended: stop waiting

    def stderr(self) -> str:
        return "\n".join(self.lines)

    def origin(self, timeout_s: float = 30.0) -> str:
        """`http://HOST:PORT` from the hub's `open http://HOST:PORT/` line."""
        self._opened.wait(timeout_s)
        for line in self.lines:
            found = re.match(r"open (http://[^/\s]+)/", line)
            if found:
                return found.group(1)
        raise AssertionError(f"uq serve printed no open line:\n{self.stderr()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def token_and_hash() -> tuple[str, str]:
    token = secrets.token_urlsafe(32)  # base64url: a token the hub accepts as it is
    return token, hashlib.sha256(token.encode()).hexdigest()


# --- HTTP as a mail scanner, a browser and an asker ----------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a redirect is a status to check, not follow
        return None


# No cookie processor: nothing a response sets is sent back (a scanner keeps no session).
_opener = urllib.request.build_opener(_NoRedirect)


def http(method: str, url: str, *, body: bytes | None = None, headers: dict | None = None):
    """(status, headers, body text) of one request; any status is returned, none raised."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with _opener.open(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode("utf-8", "replace")


def scanner_get(url: str):
    return http("GET", url, headers={"User-Agent": "link-scanner/1.0", "Accept": "*/*"})


def press(url: str, origin: str):
    """POST as the confirmation page's form does: the page's Origin, no fields (its button has
    no name), the form content type."""
    return http(
        "POST",
        url,
        body=b"",
        headers={"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"},
    )


class Asker:
    def __init__(self, origin: str, token: str) -> None:
        self.origin, self.token = origin, token

    def call(self, method: str, path: str, payload: dict | None = None):
        headers = {"Authorization": f"Bearer {self.token}"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        status, _, text = http(method, self.origin + path, body=body, headers=headers)
        return status, json.loads(text) if text else None

    def poll(self, ticket: int) -> dict:
        status, body = self.call("GET", f"/api/v1/asks/{ticket}")
        assert status == 200, (status, body)
        return body


class _Forms(HTMLParser):
    """The forms of a page: [(method, action, [button types])]."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append(((attrs.get("method") or "get").lower(), attrs.get("action"), []))
        elif tag == "button" and self.forms:
            self.forms[-1][2].append((attrs.get("type") or "submit").lower())


def altered(link: str) -> list[str]:
    """Links that differ from `link` in one way each: a character of its capability changed
    (in the middle; at the end, where base64 keeps spare bits), one cut, one added."""
    head, capability = link.rsplit("/a/", 1)
    assert capability, link

    def changed(c: str) -> str:
        return "B" if c == "A" else "A"

    middle = len(capability) // 2
    return [
        f"{head}/a/{capability[:middle]}{changed(capability[middle])}{capability[middle + 1 :]}",
        f"{head}/a/{capability[:-1]}{changed(capability[-1])}",
        f"{head}/a/{capability[:-1]}",
        f"{head}/a/{capability}A",
    ]


def wait_for_mail(smtp_server, address: str, p_file: Path, server: Hub, timeout_s: float = 30):
    """The mail to `address`, waiting at most `timeout_s`; fails at once, saying why, when the
    hub's P (copied to `p_file`) has no links: then no mail will come."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = smtp_server.mails_to(address)
        if found:
            return found[0]
        text = p_file.read_text(encoding="utf-8") if p_file.exists() else ""
        if text.endswith("\n") and "links" not in json.loads(text):
            raise AssertionError(
                "the hub gave --on-question a P without links, so nothing was mailed: this "
                f"hub makes no one-tap links (§23)\nP: {text}hub stderr:\n{server.stderr()}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no mail to {address} within {timeout_s} s (mails: "
                f"{[(m['To'], m['Subject']) for m in smtp_server.mails()]}; P: {text!r})\n"
                f"hub stderr:\n{server.stderr()}"
            )
        time.sleep(0.05)


# --- the test -----------------------------------------------------------------------------


@pytest.fixture
def hub(smtp_server, tmp_path: Path):
    """A hub with an access file and the mail script as --on-question; yields what the test
    needs to talk to it."""
    binary = uq_bin()
    assert binary.is_file(), f"no uq binary at {binary} (build it, or set UQ_BIN)"
    alice_token, alice_hash = token_and_hash()
    _, bob_hash = token_and_hash()
    ci_token, ci_hash = token_and_hash()
    access = tmp_path / "access.toml"
    access.write_text(
        f"""
[[person]]
id = "alice"
name = "{ALICE["name"]}"
token_sha256 = "{alice_hash}"
groups = ["ops"]

[[person]]
id = "bob"
name = "Bob Stone"
token_sha256 = "{bob_hash}"

[[asker]]
id = "ci"
token_sha256 = "{ci_hash}"
to = ["ops"]
""",
        encoding="utf-8",
    )
    config = smtp_server.write_config(
        tmp_path / "mail-links.json",
        {"alice": "alice@example.test", "bob": "bob@example.test"},
    )
    p_file = tmp_path / "p.json"  # a copy of P, to compare the mail with what the hub sent
    on_question = (
        f"tee {shlex.quote(str(p_file))} | "
        f"{shlex.quote(PYTHON)} {shlex.quote(str(MAIL_SCRIPT))} "
        f"--config {shlex.quote(str(config))}"
    )
    server = Hub(
        [
            str(binary), "serve",
            "--store", f"sqlite:{tmp_path / 'hub.db'}",
            "--listen", "127.0.0.1:0",
            "--access", str(access),
            "--on-question", on_question,
        ]
    )  # fmt: skip
    try:
        origin = server.origin()
        yield {
            "server": server,
            "origin": origin,
            "asker": Asker(origin, ci_token),
            "p_file": p_file,
            "alice_token": alice_token,
        }
    finally:
        server.stop()


def test_a_mailed_link_answers_once_as_its_person_and_a_scanner_answers_nothing(hub, smtp_server):
    origin, asker, server = hub["origin"], hub["asker"], hub["server"]

    # The asker posts a single-select question (addressed, by its own `to`, to ops).
    status, body = asker.call("POST", "/api/v1/asks", {"questions": [QUESTION], "key": "deploy-42"})
    assert status == 201, (status, body)
    ticket = body["ticket"]

    # Alice (in ops) gets the mail; read it back from the Maildir and take its links.
    mail = wait_for_mail(smtp_server, "alice@example.test", hub["p_file"], server)
    assert mail["Subject"] == "Question: Deploy to production?"
    lines = body_lines(mail)
    assert lines[0] == "Deploy to production?"
    links = {}
    for line in lines:
        found = re.fullmatch(r"(Yes|No): (\S+)", line)
        if found:
            links[found.group(1)] = found.group(2)
    assert set(links) == {"Yes", "No"}, lines
    for link in links.values():
        # No --public-url: the links are on the listen address.
        assert link.startswith(f"{origin}/a/"), (link, origin)
    assert links["Yes"] != links["No"]

    # The mail carries exactly the links of P, which has links for alice only (bob is in no
    # group the question went to).
    p = json.loads(hub["p_file"].read_text(encoding="utf-8"))
    assert p["ticket"] == ticket and p["to"] == ["ops"]
    assert p["links"] == {"alice": links}, p.get("links")

    # 1. A scanner fetches every link: a confirmation page each, nothing answered.
    for label, link in links.items():
        for _ in range(2):  # scanners fetch more than once
            status, headers, page = scanner_get(link)
            assert status == 200, (label, status, page)
            assert headers.get_content_type() == "text/html"
            assert "Deploy to production?" in page and label in page
            parser = _Forms()
            parser.feed(page)
            posts = [f for f in parser.forms if f[0] == "post"]
            assert len(posts) == 1, parser.forms
            _, action, buttons = posts[0]
            # Resolved against the page's own URL, as the browser does.
            assert urljoin(link, action or "") == link, (action, link)
            assert buttons == ["submit"], buttons
    for bad in altered(links["Yes"]):
        assert scanner_get(bad)[0] == 404, bad
        assert press(bad, origin)[0] == 404, bad  # a forged link answers nothing
    # A cross-site POST (another site's page submitting the form) is refused.
    assert press(links["No"], FOREIGN_ORIGIN)[0] == 403
    assert asker.poll(ticket) == {"status": "pending"}

    # 2. Alice presses "Yes" on the confirmation page.
    status, headers, page = press(links["Yes"], origin)
    assert status == 200, (status, page, server.stderr())
    assert headers.get_content_type() == "text/html"
    assert asker.poll(ticket) == {
        "status": "answered",
        "answer": {
            "answers": [{"id": "deploy", "selected": ["Yes"]}],
            "respondent": ALICE,
        },
    }

    # 3. One answer per link, and per ask: pressing again, or the other option, is 409 with a
    # page naming how and by whom.
    for label in ("Yes", "No"):
        status, headers, page = press(links[label], origin)
        assert status == 409, (label, status, page)
        assert ALICE["name"] in page or ALICE["id"] in page, page
    # Looking at a link of a settled ask changes nothing either.
    scanner_get(links["No"])
    for bad in altered(links["No"]):
        assert press(bad, origin)[0] == 404, bad
    assert press(links["No"], FOREIGN_ORIGIN)[0] == 403
    assert asker.poll(ticket)["answer"]["answers"] == [{"id": "deploy", "selected": ["Yes"]}]

    # Bob got no mail: the question went to ops only. Alice got exactly one.
    assert smtp_server.mails_to("bob@example.test") == []
    assert len(smtp_server.mails()) == 1
