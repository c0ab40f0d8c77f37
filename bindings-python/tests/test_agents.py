"""Agents and the registry (§5): identity is the Python instance."""

from __future__ import annotations

import pytest

import user_questions as uq
from conftest import YES, request


def test_identity_is_the_instance() -> None:
    a, b = uq.Agent("a"), uq.Agent("a")
    assert a == a and a != b
    assert len({a, b}) == 2
    assert (a.id, a.delegation_depth) == ("a", 0)
    assert uq.Agent("c", delegation_depth=3).delegation_depth == 3
    assert repr(a) == "Agent('a', delegation_depth=0)"


def test_enter_get_roots_list_return_the_very_objects(ctx: uq.Context) -> None:
    root, child, other = uq.Agent("root"), uq.Agent("child", 1), uq.Agent("other")
    ctx.agents.enter(root)
    ctx.agents.enter(child, owner=root)
    ctx.agents.enter(other, None)
    assert ctx.agents.get("root") is root
    assert ctx.agents.get("child") is child
    assert ctx.agents.get("nobody") is None
    assert ctx.agents.roots() == [root, other]
    assert ctx.agents.list() == [root, child, other]
    assert all(x is y for x, y in zip(ctx.agents.list(), [root, child, other]))
    assert len(ctx.agents) == 3
    assert root in ctx.agents and uq.Agent("root") not in ctx.agents


def test_entering_a_live_id_fails_agent_exists(ctx: uq.Context) -> None:
    ctx.agents.enter(uq.Agent("a"))
    with pytest.raises(uq.UserQuestionError) as info:
        ctx.agents.enter(uq.Agent("a"))
    assert (info.value.code, info.value.message) == (
        "AGENT_EXISTS",
        'agent "a" is already registered',
    )


def test_detach_is_idempotent_and_a_stale_one_never_removes_a_later_agent(ctx: uq.Context) -> None:
    first = uq.Agent("a")
    detach = ctx.agents.enter(first)
    detach()
    detach.detach()
    assert ctx.agents.get("a") is None
    second = uq.Agent("a")
    ctx.agents.enter(second)
    detach()
    assert ctx.agents.exit(first) is False
    assert ctx.agents.get("a") is second
    assert ctx.agents.exit(second) is True
    assert ctx.agents.list() == []


async def test_a_stale_detach_never_removes_the_same_instance_entered_again(
    ctx: uq.Context,
) -> None:
    class Answering:
        def ask(self, req: object) -> object:
            return YES

    ctx.user_questions.register_provider(Answering())
    agent = uq.Agent("a")
    first = ctx.agents.enter(agent)
    first()
    second = ctx.agents.enter(agent)
    first()
    first.detach()
    with first:
        pass
    assert ctx.agents.get("a") is agent and agent in ctx.agents
    assert await ctx.user_questions.ask(request(agent=agent)) == YES
    second()
    assert ctx.agents.get("a") is None
    # Exited by instance (whatever the registration), then entered again as a child: neither
    # earlier handle removes the new registration; its own does.
    root = uq.Agent("root")
    ctx.agents.enter(root)
    third = ctx.agents.enter(agent)
    assert ctx.agents.exit(agent) is True
    fourth = ctx.agents.enter(agent, owner=root)
    first()
    third()
    assert ctx.agents.list() == [root, agent] and ctx.agents.get("a") is agent
    with pytest.raises(uq.UserQuestionError) as info:
        await ctx.user_questions.ask(request(agent=agent))
    assert info.value.code == "DELEGATED_CALLER"
    fourth()
    assert ctx.agents.list() == [root]


async def test_a_child_stays_a_child_and_a_resumed_session_may_ask(ctx: uq.Context) -> None:
    class Answering:
        def ask(self, req: object) -> object:
            return YES

    ctx.user_questions.register_provider(Answering())
    root, child = uq.Agent("root"), uq.Agent("child")
    detach_root = ctx.agents.enter(root)
    ctx.agents.enter(child, owner=root)
    detach_root()
    with pytest.raises(uq.UserQuestionError) as info:
        await ctx.user_questions.ask(request(agent=child))
    assert info.value.code == "DELEGATED_CALLER"
    resumed = uq.Agent("session", delegation_depth=4)
    ctx.agents.enter(resumed)
    assert await ctx.user_questions.ask(request(agent=resumed)) == YES
    with pytest.raises(uq.UserQuestionError) as stale:
        await ctx.user_questions.ask(request(agent=root))
    assert stale.value.code == "CALLER_NOT_LIVE"


def test_subclasses_of_agent_keep_their_identity(ctx: uq.Context) -> None:
    class Named(uq.Agent):
        pass

    agent = Named("n")
    ctx.agents.enter(agent)
    assert ctx.agents.get("n") is agent


def test_the_detach_handle_is_a_context_manager_that_detaches_on_exit(ctx: uq.Context) -> None:
    agent = uq.Agent("worker")
    with ctx.agents.enter(agent) as detach:
        assert isinstance(detach, uq.AgentDetach)
        assert ctx.agents.get("worker") is agent
    assert ctx.agents.get("worker") is None and agent not in ctx.agents
    later = uq.Agent("worker")
    ctx.agents.enter(later)
    detach()  # stale: never removes the later agent
    with detach:
        pass
    assert ctx.agents.get("worker") is later


async def test_an_exception_leaving_the_agent_block_detaches_it(ctx: uq.Context) -> None:
    class Answering:
        def ask(self, req: uq.ProviderRequest) -> uq.Answer:
            return {"answers": [{"id": "go", "selected": ["Yes"]}]}

    ctx.user_questions.register_provider(Answering())
    agent = uq.Agent("worker")
    with pytest.raises(RuntimeError), ctx.agents.enter(agent):
        assert await ctx.user_questions.ask(request(agent=agent)) == YES
        raise RuntimeError("the agent's run failed")
    with pytest.raises(uq.UserQuestionError) as info:
        await ctx.user_questions.ask(request(agent=agent))
    assert info.value.code == "CALLER_NOT_LIVE"
