"""Shared parts of the mail tests: an SMTP server that writes a Maildir, and reading it back.

The server is aiosmtpd's `Controller` (a thread of this process) with the `Mailbox` handler:
every mail it accepts is added to a Maildir, with the envelope in the headers `X-MailFrom` and
`X-RcptTo`. The tests read that Maildir as a mail client would (`mailbox.Maildir`).
"""

from __future__ import annotations

import email
import email.policy
import json
import mailbox
import os
import socket
import sys
import time
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox

REPO = Path(__file__).resolve().parents[3]
MAIL_SCRIPT = REPO / "examples" / "hub" / "mail-links.py"
# The Python that runs mail-links.py: $MAIL_PYTHON (e.g. python3.9, the oldest it supports),
# else the tests' own.
PYTHON = os.environ.get("MAIL_PYTHON") or sys.executable


def free_port() -> int:
    """A port nobody listens on right now (the Controller needs a fixed one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SmtpServer:
    host: str
    port: int
    maildir: Path

    def mails(self) -> list[EmailMessage]:
        """Every mail received so far, parsed as a mail client would."""
        box = mailbox.Maildir(self.maildir, create=False)
        return [
            email.message_from_bytes(box.get_bytes(key), policy=email.policy.default)
            for key in sorted(box.keys())
        ]

    def mails_to(self, address: str) -> list[EmailMessage]:
        """The mails whose envelope recipients include `address`."""
        return [m for m in self.mails() if address in envelope_recipients(m)]

    def wait_for_mail_to(self, address: str, timeout_s: float = 30.0) -> EmailMessage:
        """The first mail to `address`, waiting for it at most `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.mails_to(address)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                got = [(m["To"], m["Subject"]) for m in self.mails()]
                raise AssertionError(f"no mail to {address} within {timeout_s} s (got {got})")
            time.sleep(0.05)

    def write_config(self, path: Path, people: dict[str, str]) -> Path:
        """A mail-links.py config sending through this server."""
        config = {
            "smtp": {"host": self.host, "port": self.port},
            "from": "Questions <questions@example.test>",
            "people": people,
        }
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        return path


def envelope_recipients(mail: EmailMessage) -> list[str]:
    return [a.strip() for a in str(mail.get("X-RcptTo", "")).split(",") if a.strip()]


def body_lines(mail: EmailMessage) -> list[str]:
    """The lines of a plain-text mail's body (its transfer encoding undone)."""
    assert not mail.is_multipart(), "the mail must be plain text, not multipart"
    assert mail.get_content_type() == "text/plain"
    return mail.get_content().splitlines()


@pytest.fixture
def smtp_server(tmp_path: Path):
    maildir = tmp_path / "Maildir"
    handler = Mailbox(maildir)
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield SmtpServer("127.0.0.1", port, maildir)
    finally:
        controller.stop()
