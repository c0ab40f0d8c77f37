"""Adapters (§21): the seam behind the protocols agents already speak.

- :mod:`user_questions.adapters.claude`: Claude Code's ``AskUserQuestion`` and a Claude Agent
  SDK ``can_use_tool`` callback (``AskUserQuestion``, ``ExitPlanMode`` → ``review_plan``);
- :mod:`user_questions.adapters.codex`: Codex's ``request_user_input``;
- :mod:`user_questions.adapters.mcp`: MCP form elicitation both ways and
  ``McpElicitationProvider`` (needs ``user-questions[mcp]``).
- :mod:`user_questions.adapters.langgraph`: ``ask_user_question`` as a LangGraph tool that
  interrupts with the checked questions, and ``answer_interrupt`` to answer one through any
  provider (needs ``user-questions[langgraph]``).
- :mod:`user_questions.adapters.openai_agents`: ``ask_user_question`` as an OpenAI Agents SDK
  ``FunctionTool`` (needs ``user-questions[openai-agents]``).

Each is imported on its own; none imports a framework until it is used.
"""
