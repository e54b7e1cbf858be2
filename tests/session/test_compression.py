"""Context compression inside a session: preflight trigger, summary call, compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from actors.session.hub import Subscription
from conversation.history import check_alternation
from config.loader import Config
from config.providers import ModelConfig
from config.recovery import RetryConfig
from messages.chat import messages_from_dicts
from messages.events import SessionEvent, StatusUpdate, TurnFinished
from messages.session import Compress, Hibernate, UserMessage
from store.memory import InMemorySessionStore
from tests.session.harness import collect_turn, open_harness, run_turn

SUMMARY = "## Active Task\nRead the big files.\n## Completed Actions\nRead files 0-3."


def read_call(i: int) -> dict:
    return {"tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": f"big{i}.txt"}}]}


class TestCompression:
    """A history past half the context window is summarised before the next call."""

    async def test_preflight_compression_replaces_the_middle(self, tmp_path: Path) -> None:
        """The summary comes from the model, the store is compacted, alternation holds, the turn answers."""
        # Each turn adds ~2,500 tokens: the 11,800-token threshold is first crossed
        # by the second call of the fifth turn.
        config = Config(model=ModelConfig(context_length=23_600), retry=RetryConfig(max_retries=0))
        async with open_harness(tmp_path, config) as h:
            for i in range(6):
                (h.workdir / f"big{i}.txt").write_text("\n".join(f"line {i}-{n} " + "x" * 60 for n in range(120)))
            handle, events_in, sid = await h.start_session()
            for i in range(4):
                h.provider.push(read_call(i), {"text": f"read {i}"})
                finished, _ = await run_turn(handle, events_in, f"read big{i}.txt")
                assert finished.reason == "completed"
            before = len(h.provider.requests)
            h.provider.push(read_call(4), {"text": SUMMARY}, {"text": "all read"})
            finished, events = await run_turn(handle, events_in, "read big4.txt")
            assert finished.final_text == "all read"
            assert any(isinstance(e, StatusUpdate) and e.kind == "compressing" for e in events)
            summary_request, final_request = h.provider.requests[before + 1], h.provider.requests[before + 2]
            assert "Active Task" in json.dumps(summary_request.body)
            sent = json.dumps(final_request.body)
            # The protected head (first exchange) and the tail stay; the middle turns became the summary.
            assert "Read files 0-3" in sent and "REFERENCE ONLY" in sent
            assert "line 0-5" in sent and "line 4-5" in sent
            assert "line 1-5" not in sent and "line 2-5" not in sent
            loaded = await h.deps.store.load(sid)
            check_alternation(messages_from_dicts(loaded.messages))
            assert len(loaded.messages) < 20

    async def test_compress_on_request_when_idle(self, tmp_path: Path) -> None:
        """/compress on an idle session runs one compression and says what happened."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            for i in range(5):
                h.provider.push({"text": f"answer {i} " + "y" * 200})
                await run_turn(handle, events_in, f"question {i} " + "z" * 200)
            h.provider.push({"text": SUMMARY})
            outcome = await handle.ask(Compress("the questions"))
            assert outcome.startswith(("compressed", "nothing to compress"))
            check_alternation(messages_from_dicts((await h.deps.store.load(sid)).messages))


class HeldCounters(InMemorySessionStore):
    """Holds each turn's closing save (its counters and state) until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = trio.Event()
        self.holding = trio.Event()

    async def update_counters(self, session_id: str, **fields: Any) -> None:
        self.holding.set()
        await self.release.wait()
        await super().update_counters(session_id, **fields)


class TestRequestsRightAfterATurn:
    """A turn is said finished only once it is saved, and a request a client sends as soon as it sees
    TurnFinished is answered, not refused as busy."""

    async def test_compress_asked_on_turn_finished_is_answered(self, tmp_path: Path) -> None:
        """While the turn's closing save is held, TurnFinished is not out; /compress asked the moment it
        is runs."""
        store = HeldCounters()
        store.release.set()
        async with open_harness(tmp_path, store=store) as h:
            handle, events_in, sid = await h.start_session()
            for i in range(2):
                h.provider.push({"text": f"answer {i} " + "y" * 200})
                await run_turn(handle, events_in, f"question {i} " + "z" * 200)
            store.release, store.holding = trio.Event(), trio.Event()
            h.provider.push({"text": "answer 2 " + "y" * 200}, {"text": SUMMARY})
            await handle.tell(UserMessage("question 2 " + "z" * 200))
            await store.holding.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert not any(isinstance(event, TurnFinished) for event in _pending(events_in))
            store.release.set()
            await collect_turn(events_in)
            assert (await handle.ask(Compress("the questions"))).startswith(("compressed", "nothing to compress"))
            check_alternation(messages_from_dicts((await h.deps.store.load(sid)).messages))

    async def test_hibernate_asked_on_turn_finished_is_taken(self, tmp_path: Path) -> None:
        """A Hibernate asked the moment TurnFinished is out hibernates the session."""
        store = HeldCounters()
        store.release.set()
        async with open_harness(tmp_path, store=store) as h:
            handle, events_in, _ = await h.start_session()
            h.provider.push({"text": "answer"})
            await run_turn(handle, events_in, "question")
            events_in.close()
            assert await handle.ask(Hibernate()) is True
            with trio.fail_after(10):
                await handle.wait_stopped()


def _pending(subscription: Subscription) -> list[SessionEvent]:
    """The events a subscription holds and has not handed out yet, taken without waiting."""
    taken: list[SessionEvent] = []
    while (event := subscription.receive_nowait()) is not None:
        taken.append(event)
    return taken


class TestOverflowRecovery:
    """A context-overflow error from the provider compresses and retries once."""

    async def test_overflow_error_compresses_then_retries(self, tmp_path: Path) -> None:
        """The 400 context-length error triggers a summary call, then the same turn succeeds."""
        async with open_harness(tmp_path, Config(retry=RetryConfig(max_retries=0))) as h:
            handle, events_in, sid = await h.start_session()
            for i in range(5):
                h.provider.push({"text": f"answer {i}"})
                await run_turn(handle, events_in, f"question {i} " + "q" * 2000)
            overflow = {"error": {"status": 400, "body": {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}}}
            h.provider.push(overflow, {"text": SUMMARY}, {"text": "fits now"})
            finished, events = await run_turn(handle, events_in, "one more")
            assert (finished.reason, finished.final_text) == ("completed", "fits now")
            assert any(isinstance(e, StatusUpdate) and "too large" in e.text for e in events)
            check_alternation(messages_from_dicts((await h.deps.store.load(sid)).messages))
