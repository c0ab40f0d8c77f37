"""examples/hub/mail-links.py on its own: a hand-written P, a real SMTP server (aiosmtpd).

These need no hub: they check what the script mails for P's `links` (subject, body lines,
recipients), that P without links sends nothing, and how it fails.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import MAIL_SCRIPT, PYTHON, body_lines, envelope_recipients, free_port

ALICE_LINKS = {
    "Yes": "http://127.0.0.1:8700/a/alice-yes-capability",
    "No": "http://127.0.0.1:8700/a/alice-no-capability",
}
BOB_LINKS = {
    "Yes": "http://127.0.0.1:8700/a/bob-yes-capability",
    "No": "http://127.0.0.1:8700/a/bob-no-capability",
}


def p_with_links(**question_fields) -> dict:
    question = {
        "id": "deploy",
        "question": "Deploy to production?",
        "options": [{"label": "Yes", "description": "Ship release 42 now"}, {"label": "No"}],
        **question_fields,
    }
    return {
        "ticket": 7,
        "questions": [question],
        "askedAt": "2026-01-02T03:04:05.678Z",
        "to": ["ops"],
        "links": {"alice": ALICE_LINKS, "bob": BOB_LINKS, "carol": dict(ALICE_LINKS)},
    }


def run_script(config: Path, p: dict | str) -> subprocess.CompletedProcess:
    stdin = p if isinstance(p, str) else json.dumps(p) + "\n"
    return subprocess.run(
        [PYTHON, str(MAIL_SCRIPT), "--config", str(config)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


PEOPLE = {"alice": "alice@example.test", "bob": "Bob Stone <bob@example.test>"}


def test_mails_each_person_with_an_address_their_own_links(smtp_server, tmp_path):
    config = smtp_server.write_config(tmp_path / "mail.json", PEOPLE)
    done = run_script(config, p_with_links(header="Deploy", detail="Release 42: the new login."))
    assert done.returncode == 0, done.stderr
    # carol may answer (she has links) but has no address: named on stderr, not fatal.
    assert "carol may answer but has no address" in done.stderr
    assert "mailed alice (alice@example.test)" in done.stderr

    mails = smtp_server.mails()
    assert len(mails) == 2
    alice = smtp_server.mails_to("alice@example.test")
    bob = smtp_server.mails_to("bob@example.test")
    assert len(alice) == 1 and len(bob) == 1

    mail = alice[0]
    assert envelope_recipients(mail) == ["alice@example.test"]
    assert mail["To"] == "alice@example.test"
    assert mail["X-MailFrom"] == "questions@example.test"
    assert mail["From"] == "Questions <questions@example.test>"
    assert mail["Subject"] == "Question: Deploy"  # the header, when there is one
    assert mail["Message-ID"] and mail["Date"]
    lines = body_lines(mail)
    assert lines[:4] == ["Deploy to production?", "", "Release 42: the new login.", ""]
    assert lines[4:7] == [
        f"Yes: {ALICE_LINKS['Yes']}",
        "    Ship release 42 now",  # an option's description, under its link
        f"No: {ALICE_LINKS['No']}",
    ]
    text = "\n".join(lines)
    assert "bob-" not in text  # only her own links
    assert "Question 7" in text

    mail = bob[0]
    assert envelope_recipients(mail) == ["bob@example.test"]
    assert mail["To"] == "Bob Stone <bob@example.test>"
    lines = body_lines(mail)
    assert f"Yes: {BOB_LINKS['Yes']}" in lines and f"No: {BOB_LINKS['No']}" in lines
    assert "alice-" not in "\n".join(lines)


def test_subject_without_a_header_is_the_question_on_one_line(smtp_server, tmp_path):
    config = smtp_server.write_config(tmp_path / "mail.json", {"alice": "alice@example.test"})
    p = p_with_links(question="Déployer\nen production ?")
    p["links"] = {"alice": ALICE_LINKS}
    done = run_script(config, p)
    assert done.returncode == 0, done.stderr
    (mail,) = smtp_server.mails()
    # No header: the question's text, its newline folded to a space; non-ASCII survives.
    assert mail["Subject"] == "Question: Déployer en production ?"
    lines = body_lines(mail)
    assert lines[:3] == ["Déployer", "en production ?", ""]
    assert f"Yes: {ALICE_LINKS['Yes']}" in lines


def test_without_links_nothing_is_sent(smtp_server, tmp_path):
    config = smtp_server.write_config(tmp_path / "mail.json", PEOPLE)
    p = p_with_links()
    del p["links"]  # a hub without --access, or a question that gets no links
    done = run_script(config, p)
    assert done.returncode == 0, done.stderr
    assert "question 7 has no links" in done.stderr
    assert smtp_server.mails() == []


def test_nobody_with_an_address_sends_nothing(smtp_server, tmp_path):
    config = smtp_server.write_config(tmp_path / "mail.json", {"dave": "dave@example.test"})
    done = run_script(config, p_with_links())
    assert done.returncode == 0, done.stderr
    assert "nobody to mail" in done.stderr
    assert smtp_server.mails() == []


def test_a_bad_config_exits_2_naming_the_problem(tmp_path):
    config = tmp_path / "mail.json"
    config.write_text(
        '{"smtp": {"host": "localhost", "prot": 25}, "from": "a@b.test", "people": {}}'
    )
    done = run_script(config, p_with_links())
    assert done.returncode == 2
    assert f"bad config {config}: smtp has an unknown key 'prot'" in done.stderr

    config.write_text("not json")
    done = run_script(config, p_with_links())
    assert done.returncode == 2 and "it is not JSON" in done.stderr

    done = run_script(tmp_path / "missing.json", p_with_links())
    assert done.returncode == 2 and "cannot read it" in done.stderr


def test_stdin_that_is_not_p_exits_2(smtp_server, tmp_path):
    config = smtp_server.write_config(tmp_path / "mail.json", PEOPLE)
    done = run_script(config, "hello\n")
    assert done.returncode == 2
    assert "stdin is not a pending question" in done.stderr
    assert smtp_server.mails() == []


def test_an_smtp_server_that_cannot_be_reached_exits_1(tmp_path):
    config = tmp_path / "mail.json"
    port = free_port()  # nobody listens there
    config.write_text(
        json.dumps(
            {
                "smtp": {"host": "127.0.0.1", "port": port},
                "from": "questions@example.test",
                "people": {"alice": "alice@example.test"},
            }
        )
    )
    done = run_script(config, p_with_links())
    assert done.returncode == 1
    assert f"cannot use the SMTP server 127.0.0.1:{port}" in done.stderr
