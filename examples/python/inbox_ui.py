"""A Python UI over a QuestionInbox, answering from another task.

The agent asks (two asks at once); the inbox turns each into a pending question with a
ticket; the UI task learns of them through subscribe() and settles them by ticket — the
first one with an answer, the second one by dismissing it.

    python examples/python/inbox_ui.py
"""

from __future__ import annotations

import asyncio

import user_questions as uq


async def ui(inbox: uq.QuestionInbox, tickets: "asyncio.Queue[int]") -> None:
    for _ in range(2):
        ticket = await tickets.get()
        pending = {p["ticket"]: p for p in inbox.pending()}[ticket]
        question = pending["questions"][0]
        print(f"[ui] #{ticket} from {pending.get('agentId')}: {question['question']}")
        if ticket == 1:
            try:
                inbox.answer(ticket, {"answers": [{"id": question["id"], "selected": ["Maybe"]}]})
            except uq.UserQuestionError as error:  # not one of its options: still pending
                print(f"[ui] #{ticket} rejected: {error.code}")
            inbox.answer(ticket, {"answers": [{"id": question["id"], "selected": ["Yes"]}]})
        else:
            inbox.cancel(ticket)


async def main() -> None:
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    agent = uq.Agent("builder")
    ctx.agents.enter(agent)

    loop = asyncio.get_running_loop()
    tickets: "asyncio.Queue[int]" = asyncio.Queue()

    def on_event(event: uq.InboxEvent) -> None:
        # Runs on whichever thread caused the event: hand it to the loop.
        if event["type"] == "requested":
            loop.call_soon_threadsafe(tickets.put_nowait, event["ticket"])
        elif event["type"] == "resolved":
            print(f"[ui] #{event['ticket']} {event['outcome']}")

    unsubscribe = inbox.subscribe(on_event)
    ui_task = asyncio.create_task(ui(inbox, tickets))

    def question(qid: str, text: str) -> uq.Item:
        return {"id": qid, "question": text, "options": [{"label": "Yes"}, {"label": "No"}]}

    deploy, migrate = await asyncio.gather(
        ctx.user_questions.ask({"questions": [question("deploy", "Deploy now?")], "agent": agent}),
        ctx.user_questions.ask(
            {"questions": [question("migrate", "Run the migration?")], "agent": agent}
        ),
        return_exceptions=True,
    )
    await ui_task
    print(f"[agent] deploy: {deploy}")
    print(f"[agent] migrate: {migrate!r}")
    unsubscribe()
    ctx.close()


if __name__ == "__main__":
    asyncio.run(main())
