#!/usr/bin/env python3
"""Mail each person a new question with one link per option: answer from your phone.

An `--on-question` command for `uq serve` (docs/hub.md, "Answer from your phone"). The hub
runs it once per new ask with P, the pending question as one line of JSON, on stdin. With an
access file, P carries "links" for a batch of one single-select question with options:
{"<person id>": {"<option label>": URL, ...}, ...} (docs/reference.md §23). This script sends
each person listed there who has an address in the config one plain-text mail:

    Subject: Question: <the question's header, else its text>

    <the question>

    <its detail, if any>

    Yes: https://questions.example.com/a/...
    No: https://questions.example.com/a/...

Opening a link only shows a confirmation page (a mail scanner or a link preview fetching it
answers nothing); its button answers the question as that person, once.

Usage:

    uq serve --access /etc/uq/access.toml --public-url https://questions.example.com \\
      --on-question 'python3 /path/to/mail-links.py --config /etc/uq/mail-links.json'

The config is JSON (Python's standard library reads it on every version this script supports;
TOML would need 3.11's tomllib), every key but "smtp.host", "from" and "people" optional:

    {
      "smtp": {
        "host": "smtp.example.com",
        "port": 587,                     # default: 465 with "tls", else 25
        "security": "starttls",          # "none" (default), "starttls" or "tls"
        "username": "uq",                # log in (needs starttls or tls)
        "password_env": "UQ_SMTP_PASSWORD"  # the environment variable holding the password
      },
      "from": "Questions <questions@example.com>",
      "people": {"alice": "alice@example.com", "bob": "bob@example.com"}
    }

(JSON has no comments: leave them out of the real file.) Unknown keys are refused, so a
misspelt one is not silently ignored.

Behaviour and exit status:
- 0: every person of P's "links" with an address was mailed. A person without an address is
  named on stderr and skipped. P without "links" (a hub without an access file, or a question
  that gets no links: several questions, multi-select, no options, an intent) sends nothing,
  says so on stderr and exits 0.
- 1: a mail could not be sent (the SMTP server refused it, could not be reached, or the login
  failed); the others are still tried while the connection holds. The hub logs the failure
  (`--on-question for question N failed: ...`) and asks the question all the same.
- 2: a bad config, a bad command line, or stdin that is not P.

Needs only Python 3.9+ and its standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import smtplib
import ssl
import sys
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid
from typing import Any

PROG = "mail-links"
TIMEOUT_S = 30  # per SMTP operation: a hung server must not keep the command running for good
SUBJECT_MAX = 150  # characters of question text in the subject


class Failure(Exception):
    """A failure to report on stderr, with the exit status to end with."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


# --- the config ---------------------------------------------------------------------------


def _check_keys(table: dict, allowed: set, where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ValueError(f"{where} has an unknown key {unknown[0]!r}")


def _string(table: dict, key: str, where: str, required: bool = True) -> str | None:
    value = table.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}{key} must be a non-empty string")
    return value


def _address(text: str, where: str) -> str:
    """One mail address (optionally with a display name), checked as a mail header would be."""
    if "\n" in text or "\r" in text:
        raise ValueError(f"{where} must be one line")
    parsed = getaddresses([text])
    if len(parsed) != 1 or "@" not in parsed[0][1]:
        raise ValueError(f"{where} must be one mail address, not {text!r}")
    return text


def load_config(path: str) -> dict[str, Any]:
    """Reads and checks the config; a ValueError names what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read it: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"it is not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ValueError("it must be a JSON object")
    _check_keys(raw, {"smtp", "from", "people"}, "the config")

    smtp = raw.get("smtp")
    if not isinstance(smtp, dict):
        raise ValueError("smtp must be an object with at least a host")
    _check_keys(smtp, {"host", "port", "security", "username", "password_env"}, "smtp")
    host = _string(smtp, "host", "smtp.")
    security = smtp.get("security", "none")
    if security not in ("none", "starttls", "tls"):
        raise ValueError('smtp.security must be "none", "starttls" or "tls"')
    port = smtp.get("port", 465 if security == "tls" else 25)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError("smtp.port must be a whole number from 1 to 65535")
    username = _string(smtp, "username", "smtp.", required=False)
    password_env = _string(smtp, "password_env", "smtp.", required=False)
    if (username is None) != (password_env is None):
        raise ValueError("smtp.username and smtp.password_env go together")
    if username is not None and security == "none":
        raise ValueError(
            'smtp.username needs smtp.security "starttls" or "tls" (no password in clear)'
        )

    sender = _address(str(_string(raw, "from", "")), "from")
    people = raw.get("people")
    if not isinstance(people, dict):
        raise ValueError('people must be an object: {"<person id>": "<mail address>", ...}')
    for person, address in people.items():
        if not isinstance(address, str):
            raise ValueError(f"people.{person} must be a mail address (a string)")
        _address(address, f"people.{person}")
    return {
        "host": host,
        "port": port,
        "security": security,
        "username": username,
        "password_env": password_env,
        "from": sender,
        "people": people,
    }


# --- P and the mail -----------------------------------------------------------------------


def one_line(text: str) -> str:
    """Text for a header or a one-line entry: runs of whitespace, newlines too, become a space."""
    return " ".join(text.split())


def read_p(text: str) -> dict[str, Any]:
    """Parses P and checks the parts this script uses; a ValueError names what is wrong."""
    try:
        p = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"it is not JSON: {e}") from None
    if not isinstance(p, dict):
        raise ValueError("it is not a JSON object")
    if not isinstance(p.get("ticket"), int) or not isinstance(p.get("questions"), list):
        raise ValueError("it has no ticket and questions: is this P of `uq serve --on-question`?")
    links = p.get("links")
    if links is None:
        return p
    if not isinstance(links, dict) or len(p["questions"]) != 1:
        raise ValueError("its links must be an object, for a batch of one question")
    for person, by_label in links.items():
        if not isinstance(by_label, dict) or not all(
            isinstance(label, str) and isinstance(url, str) for label, url in by_label.items()
        ):
            raise ValueError(f"its links.{person} must map option labels to URLs")
    if not isinstance(p["questions"][0], dict):
        raise ValueError("its questions[0] must be an object")
    return p


def compose(p: dict[str, Any], person: str, address: str, sender: str) -> EmailMessage:
    """The plain-text mail to one person: the question, its detail, one link per option."""
    question = p["questions"][0]
    text = str(question.get("question", ""))
    title = one_line(str(question.get("header") or text))
    if len(title) > SUBJECT_MAX:
        title = title[: SUBJECT_MAX - 1] + "…"

    descriptions = {
        o.get("label"): o.get("description")
        for o in question.get("options") or []
        if isinstance(o, dict)
    }
    lines = [text, ""]
    if question.get("detail"):
        lines += [str(question["detail"]), ""]
    # One line per option, in the order of P's links (the options' order), "<label>: <URL>";
    # the option's description, if any, indented on the line below.
    for label, url in p["links"][person].items():
        lines.append(f"{one_line(label)}: {url}")
        description = descriptions.get(label)
        if isinstance(description, str) and description.strip():
            lines.append(f"    {one_line(description)}")
    about = f"Question {p['ticket']}"
    if p.get("agentId"):
        about += f" from {p['agentId']}"
    about += f", asked at {p.get('askedAt', '?')}"
    if p.get("expiresAt"):
        about += f", open until {p['expiresAt']}"
    lines += [
        "",
        "-- ",
        "Opening a link shows the choice and a button; nothing is answered until you press it.",
        f"Each link answers once, as you ({person}): do not forward this mail.",
        about + ".",
    ]

    mail = EmailMessage()
    mail["Subject"] = f"Question: {title}"
    mail["From"] = sender
    mail["To"] = address
    mail["Date"] = formatdate(localtime=True)
    mail["Message-ID"] = make_msgid(domain=_domain(sender))
    mail["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies
    mail.set_content("\n".join(lines) + "\n")  # text/plain; utf-8, encoded as its text needs
    return mail


def _domain(sender: str) -> str | None:
    address = getaddresses([sender])[0][1]
    try:
        return Address(addr_spec=address).domain or None
    except (ValueError, IndexError):
        return None


# --- sending ------------------------------------------------------------------------------


def connect(config: dict[str, Any]) -> smtplib.SMTP:
    host, port, security = config["host"], config["port"], config["security"]
    where = f"the SMTP server {host}:{port}"
    try:
        if security == "tls":
            server: smtplib.SMTP = smtplib.SMTP_SSL(
                host, port, timeout=TIMEOUT_S, context=ssl.create_default_context()
            )
        else:
            server = smtplib.SMTP(host, port, timeout=TIMEOUT_S)
            if security == "starttls":
                server.starttls(context=ssl.create_default_context())
        if config["username"] is not None:
            password = os.environ.get(config["password_env"])
            if password is None:
                server.close()
                raise Failure(
                    f"the environment variable {config['password_env']} (smtp.password_env) "
                    "is not set",
                    2,
                )
            server.login(config["username"], password)
    except (smtplib.SMTPException, OSError) as e:
        raise Failure(f"cannot use {where}: {e}", 1) from None
    return server


def send_all(p: dict[str, Any], config: dict[str, Any]) -> int:
    """Mails every person of P's links who has an address; returns the exit status."""
    ticket = p["ticket"]
    recipients = []
    for person in p["links"]:
        address = config["people"].get(person)
        if address is None:
            say(
                f"question {ticket}: {person} may answer but has no address in the config; not mailed"
            )
        else:
            recipients.append((person, address))
    if not recipients:
        say(f"question {ticket}: nobody to mail")
        return 0

    failed = 0
    server = connect(config)
    try:
        for person, address in recipients:
            mail = compose(p, person, address, config["from"])
            try:
                server.send_message(mail)
            except (
                smtplib.SMTPRecipientsRefused,
                smtplib.SMTPSenderRefused,
                smtplib.SMTPDataError,
            ) as e:
                # This mail was refused; the connection still serves the others.
                failed += 1
                say(
                    f"question {ticket}: the SMTP server refused the mail to {person} ({address}): {e}"
                )
                continue
            except (smtplib.SMTPException, OSError) as e:
                raise Failure(
                    f"question {ticket}: sending the mail to {person} ({address}) failed: {e}", 1
                ) from None
            say(f"question {ticket}: mailed {person} ({address})")
    finally:
        try:
            server.quit()
        except (smtplib.SMTPException, OSError):
            server.close()
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mail-links.py",
        description="uq serve --on-question: mail each person the question with one link per "
        "option (P on stdin).",
    )
    parser.add_argument("--config", required=True, help="the JSON config (see the header)")
    args = parser.parse_args(argv)
    try:
        try:
            config = load_config(args.config)
        except ValueError as e:
            raise Failure(f"bad config {args.config}: {e}", 2) from None
        try:
            p = read_p(sys.stdin.read())
        except ValueError as e:
            raise Failure(f"stdin is not a pending question: {e}", 2) from None
        if p.get("links") is None:
            say(
                f"question {p['ticket']} has no links (a hub without --access, or a question "
                "that gets none): nothing mailed"
            )
            return 0
        return send_all(p, config)
    except Failure as e:
        say(str(e))
        return e.status


if __name__ == "__main__":
    sys.exit(main())
