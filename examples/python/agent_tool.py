"""An async agent tool asking the human through a Python provider.

The "model" calls the tool ask_user_question; the seam checks the call (a live root agent, a
well-formed request) and hands the questions to the provider, a stand-in for a real UI that
prints them and picks the recommended option after a short think.

    python examples/python/agent_tool.py
"""

from __future__ import annotations

import asyncio
import json
from typing import List

import user_questions as uq


class ConsoleProvider:
    """Shows each batch of questions and answers like a user who takes the recommendation."""

    async def ask(self, request: uq.ProviderRequest) -> uq.Answer:
        agent = request.get("agent")
        print(f"[ui] {agent.id if agent else 'someone'} asks:")
        answers: List[uq.AnswerItem] = []
        for question in request["questions"]:
            options = question.get("options", [])
            print(f"[ui]   {question['question']}")
            for option in options:
                print(f"[ui]     - {option['label']}")
            await asyncio.sleep(0.05)  # the human thinks; cancelled if the ask is withdrawn
            pick = next((o for o in options if o["label"].endswith("(Recommended)")), None)
            answers.append({"id": question["id"], "selected": [pick["label"]] if pick else []})
        return {"answers": answers}


async def main() -> None:
    with uq.Context() as ctx:
        ctx.user_questions.register_provider(ConsoleProvider())
        agent = uq.Agent("planner")
        detach = ctx.agents.enter(agent)
        tool = uq.AskUserQuestionTool(ctx)
        print(f"[model] tool {tool.name}: {tool.description[:60]}...")

        # What a model would send as the tool call's arguments.
        arguments = {
            "questions": [
                {
                    "id": "pkg",
                    "header": "Package manager",
                    "question": "Which package manager should the project use?",
                    "options": [
                        {"label": "pnpm (Recommended)", "description": "Fast, strict."},
                        {"label": "npm", "description": "Ships with Node."},
                    ],
                }
            ]
        }
        result = await tool.execute(arguments, agent=agent)
        print(f"[model] tool result text: {result['content'][0]['text']}")

        # A call from an agent that is not live is refused before the UI sees it.
        refused = await tool.execute(arguments, agent=uq.Agent("planner"))
        if refused["isError"]:
            print(f"[model] stale agent: {refused['error']['code']}")

        # Asking directly, outside the tool: errors raise UserQuestionError.
        try:
            await ctx.user_questions.ask({"questions": []})
        except uq.UserQuestionError as error:
            print(f"[host] {error.code}: {error.message}")
        detach()
        if not result["isError"]:
            print(json.dumps(result["value"]))


if __name__ == "__main__":
    asyncio.run(main())
