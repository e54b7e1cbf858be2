"""Context compression: pruning, boundaries, summary, assembly, fallback and anti-thrashing."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from conversation.compression import ContextCompressor, assemble, find_boundaries, prune_old_tool_results
from conversation.compression.pruning import IMAGE_PLACEHOLDER, summarise_tool_result
from conversation.compression.texts import (
    STATIC_FALLBACK,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    SYSTEM_NOTE,
)
from conversation.errors import CompressionError
from conversation.history import check_alternation
from config.session import CompressionConfig
from providers.metadata import rough_tokens as estimate_tokens
from messages.chat import AssistantMessage, ChatMessage, HumanMessage, ImagePart, TextPart, ToolMessage
from tests.session_libs.messages import assistant, system, tool, user


def _tokens(message: ChatMessage) -> int:
    return estimate_tokens([message])


def _conversation(rounds: int, result_size: int = 50) -> list[ChatMessage]:
    """System, then ``rounds`` of user -> assistant(tool call) -> tool -> assistant."""
    history: list[ChatMessage] = [system()]
    for n in range(rounds):
        history += [
            user(f"request {n}"),
            assistant(None, [(f"c{n}", "terminal")], {"command": f"make step{n}"}),
            tool(f"c{n}", json.dumps({"output": f"step {n}\n" * result_size, "exit_code": 0})),
            assistant(f"done {n}"),
        ]
    return history


class TestPruning:
    """Old large tool results become one-liners; the tail, small results and JSON validity are preserved."""

    def test_tool_specific_lines(self) -> None:
        terminal = json.dumps({"output": "line\n" * 47, "exit_code": 0})
        assert summarise_tool_result("terminal", {"command": "npm test"}, terminal) == "[terminal] ran `npm test` -> exit 0, 47 lines output"
        assert summarise_tool_result("read_file", {"path": "config.py"}, "x" * 1200) == "[read_file] read config.py from line 1 (1,200 chars)"
        search = json.dumps({"matches": [{"f": i} for i in range(12)]})
        assert summarise_tool_result("search_files", {"pattern": "compress", "path": "agent/"}, search) == (
            "[search_files] content search for 'compress' in agent/ -> 12 matches"
        )
        assert summarise_tool_result("delegate_task", {"goal": "Refactor auth module"}, "r" * 3400) == (
            "[delegate_task] 'Refactor auth module' (3,400 chars result)"
        )
        assert summarise_tool_result("web_search", {"q": "x"}, "r" * 500) == '[web_search] {"q": "x"} (500 chars result)'

    def test_prunes_only_before_tail(self) -> None:
        history = _conversation(3, result_size=300)
        pruned, stats = prune_old_tool_results(history, protect_from=9)
        assert pruned[3].content == "[terminal] ran `make step0` -> exit 0, 300 lines output"
        assert pruned[7].content.startswith("[terminal] ran `make step1`")
        assert pruned[11] == history[11]
        assert stats.results_summarised == 2 and len(pruned) == len(history)
        assert [m.role for m in pruned] == [m.role for m in history]

    def test_small_results_kept(self) -> None:
        history = [user(), assistant(None, [("a", "terminal")]), tool("a", "ok"), assistant()]
        assert prune_old_tool_results(history, 4)[0] == history

    def test_identical_results_keep_newest(self) -> None:
        same = "the same fairly long output " * 3
        history = [user(), assistant(None, [("a", "read_file")]), tool("a", same), assistant(), user(), assistant(None, [("b", "read_file")]), tool("b", same), assistant()]
        pruned, stats = prune_old_tool_results(history, 8)
        assert pruned[2].content == "[read_file] result identical to a later read_file result; see that one"
        assert pruned[6].content == same and stats.duplicates_removed == 1

    def test_large_arguments_shrunk_to_valid_json(self) -> None:
        history = [user(), assistant(None, [("a", "write_file")], {"path": "big.md", "content": "# x\n" * 1000, "n": [1, {"deep": "y" * 900}]}), tool("a", "ok"), assistant()]
        pruned, stats = prune_old_tool_results(history, 4)
        reply = pruned[1]
        assert isinstance(reply, AssistantMessage)
        arguments = json.loads(reply.tool_calls[0].arguments)
        assert arguments["path"] == "big.md"
        assert arguments["content"].startswith("# x\n") and arguments["content"].endswith("…[truncated 3,800 chars]")
        assert arguments["n"][1]["deep"].endswith("…[truncated 700 chars]")
        assert stats.arguments_shrunk == 1

    def test_images_removed(self) -> None:
        shot = ToolMessage("a", (TextPart("shot"), ImagePart("data:image/png;base64,AAAA")))
        pruned, stats = prune_old_tool_results([user(), assistant(None, [("a", "computer_use")]), shot, assistant()], 4)
        assert pruned[2].content == (TextPart("shot"), TextPart(IMAGE_PLACEHOLDER))
        assert stats.images_removed == 1


class TestBoundaries:
    """The head is system + first 3; the tail follows the token budget without splitting tool groups."""

    def test_head_protects_system_and_first_three(self) -> None:
        history = _conversation(4)
        bounds = find_boundaries(history, protect_first_n=3, tail_budget=10, tokens=_tokens)
        assert bounds.head_end == 4

    def test_head_pushed_past_tool_results(self) -> None:
        history = _conversation(4)
        assert find_boundaries(history, protect_first_n=2, tail_budget=10, tokens=_tokens).head_end == 4

    def test_tail_keeps_last_user_and_at_least_three(self) -> None:
        history = _conversation(5)
        bounds = find_boundaries(history, protect_first_n=3, tail_budget=1, tokens=_tokens)
        assert history[bounds.tail_start].role == "user"
        assert bounds.tail_start == len(history) - 4

    @pytest.mark.parametrize(("budget", "expected"), [(50, 7), (800, 4), (1600, 2)])
    def test_tool_group_taken_whole_within_soft_ceiling(self, budget: int, expected: int) -> None:
        # Token sizes: the group at 4..6 costs 53 + 1018 + 19; the last three messages cost 26.
        history = [system(), user("a"), assistant("b"), user("c"), assistant(None, [("x", "t"), ("y", "t")]),
                   tool("x", "A" * 4000), tool("y", "small"), assistant("e"), user("f"), assistant("g")]
        bounds = find_boundaries(history, protect_first_n=1, tail_budget=budget, tokens=_tokens)
        assert bounds.tail_start == expected

    @given(st.lists(st.sampled_from(["text", "tools1", "tools3", "big"]), min_size=1, max_size=25), st.integers(1, 400), st.integers(0, 5))
    def test_invariants(self, shapes: list[str], budget: int, protect: int) -> None:
        history = [system()]
        for n, shape in enumerate(shapes):
            history.append(user(f"u{n}"))
            if shape == "text":
                history.append(assistant(f"a{n}"))
                continue
            count = 3 if shape == "tools3" else 1
            ids = [(f"c{n}_{k}", "t") for k in range(count)]
            history.append(assistant(None, ids))
            history += [tool(i, "R" * (2000 if shape == "big" else 20)) for i, _ in ids]
            history.append(assistant(f"a{n}"))
        bounds = find_boundaries(history, protect_first_n=protect, tail_budget=budget, tokens=_tokens)
        n = len(history)
        assert bounds.head_end <= bounds.tail_start <= n
        for index in (bounds.head_end, bounds.tail_start):
            assert index == n or history[index].role != "tool"
        last_user = max(i for i, m in enumerate(history) if m.role == "user")
        assert last_user < bounds.head_end or last_user >= bounds.tail_start
        assert n - bounds.tail_start >= min(3, n - bounds.head_end) or bounds.tail_start == bounds.head_end


class TestAssembly:
    """The summary role keeps alternation, else the summary is merged into the first tail message."""

    def test_user_role_with_end_marker(self) -> None:
        result = assemble([system(), user(), assistant()], "S", [assistant("next"), user("q")])
        assert result[3] == HumanMessage(f"{SUMMARY_PREFIX}\n\nS\n\n{SUMMARY_END_MARKER}")
        assert result[0].content.endswith(SYSTEM_NOTE)
        check_alternation(result)

    def test_assistant_role(self) -> None:
        result = assemble([system(), user()], "S", [user("q"), assistant()])
        assert result[2] == AssistantMessage(f"{SUMMARY_PREFIX}\n\nS")
        check_alternation(result)

    def test_merged_into_tail_when_no_role_fits(self) -> None:
        result = assemble([system(), user()], "S", [assistant("reply")])
        assert len(result) == 3 and result[2].content == f"{SUMMARY_PREFIX}\n\nS\n\nreply"
        merged_user = assemble([system()], "S", [user("q"), assistant()])
        assert merged_user[1].content == f"{SUMMARY_PREFIX}\n\nS\n\n{SUMMARY_END_MARKER}\n\nq"
        check_alternation(result)
        check_alternation(merged_user)

    def test_system_note_added_once(self) -> None:
        once = assemble([system()], "S", [user(), assistant()])
        twice = assemble(once[:1], "S2", [user(), assistant()])
        assert twice[0].content.count(SYSTEM_NOTE) == 1

    def test_orphans_removed(self) -> None:
        result = assemble([system(), user()], "S", [tool("gone"), assistant("x"), user("q")])
        assert all(m.role != "tool" for m in result)


class _Summarizer:
    """Records calls; answers with a fixed summary or raises."""

    def __init__(self, reply: str = "## Active Task\nrequest 9", error: Exception | None = None) -> None:
        self.calls: list[tuple[list[ChatMessage], str]] = []
        self.reply = reply
        self.error = error

    async def __call__(self, messages: list[ChatMessage], instructions: str) -> str:
        self.calls.append((messages, instructions))
        if self.error is not None:
            raise self.error
        return self.reply


def _compressor(summarizer: _Summarizer, context_length: int = 20_000, **config: Any) -> ContextCompressor:
    return ContextCompressor(CompressionConfig(minimum_threshold_tokens=100, **config), context_length=context_length, summarize=summarizer, estimate_tokens=estimate_tokens)


class TestContextCompressor:
    """Compression triggers at 50 %, summarises the middle, falls back on failure and stops thrashing."""

    def test_trigger_and_model_switch(self) -> None:
        compressor = _compressor(_Summarizer(), context_length=200_000)
        assert compressor.threshold_tokens == 100_000 and compressor.tail_budget == 20_000
        assert not compressor.should_compress(99_999) and compressor.should_compress(100_000)
        compressor.update_model(32_000)
        assert compressor.threshold_tokens == 16_000 and compressor.tail_budget == 3_200
        assert compressor.max_summary_tokens == 1_600
        assert compressor.should_compress(16_000)

    def test_disabled(self) -> None:
        assert not _compressor(_Summarizer(), enabled=False).should_compress(10**9)

    async def test_compress_shapes_history(self) -> None:
        summarizer = _Summarizer()
        compressor = _compressor(summarizer, context_length=4_000)
        history = _conversation(10)
        result = await compressor.compress(history)
        check_alternation(result.messages)
        assert result.messages[1:4] == history[1:4]
        assert result.messages[-1] == history[-1] and result.messages[-4] == history[-4]
        summary = next(m for m in result.messages if SUMMARY_PREFIX in str(m.content))
        assert "## Active Task\nrequest 9" in summary.content
        [(middle, instructions)] = summarizer.calls
        assert middle[0].role != "tool" and len(middle) == result.summarised_count
        for section in ("## Active Task", "## Completed Actions", "## Blocked", "## Key Decisions", "## Resolved Questions",
                        "## Pending User Asks", "## Critical Context", "## Remaining Work", "[REDACTED]"):
            assert section in instructions
        assert "PREVIOUS SUMMARY" not in instructions
        assert result.tokens_after < result.tokens_before and not result.fallback_used and result.warning is None
        assert compressor.previous_summary == "## Active Task\nrequest 9"

    async def test_iterative_update_and_focus(self) -> None:
        summarizer = _Summarizer()
        compressor = _compressor(summarizer, context_length=4_000)
        first = await compressor.compress(_conversation(10))
        await compressor.compress(first.messages + _conversation(10)[1:], focus="database migrations")
        instructions = summarizer.calls[1][1]
        assert "PREVIOUS SUMMARY:\n## Active Task\nrequest 9" in instructions
        assert "FOCUS TOPIC: database migrations" in instructions

    async def test_static_fallback_on_failure(self) -> None:
        compressor = _compressor(_Summarizer(error=RuntimeError("aux down")), context_length=4_000)
        result = await compressor.compress(_conversation(10))
        assert result.fallback_used and result.summary == STATIC_FALLBACK.format(dropped=result.summarised_count)
        assert result.warning is not None and "RuntimeError" in result.warning
        assert compressor.previous_summary is None
        check_alternation(result.messages)

    async def test_empty_summary_falls_back(self) -> None:
        result = await _compressor(_Summarizer(reply="   "), context_length=4_000).compress(_conversation(10))
        assert result.fallback_used

    async def test_anti_thrashing(self) -> None:
        compressor = _compressor(_Summarizer(reply="x" * 8000), context_length=4_000)
        history = _conversation(6)
        first = await compressor.compress(history)
        assert first.savings < 0.10 and not compressor.paused and first.warning is None
        second = await compressor.compress(history)
        assert compressor.paused and not compressor.should_compress(10**9)
        assert second.warning is not None and "less than 10%" in second.warning
        compressor.reset_thrashing()
        assert compressor.should_compress(10**9)

    async def test_secrets_redacted_from_summary(self) -> None:
        key = "sk-proj-" + "a1B2c3D4" * 5
        result = await _compressor(_Summarizer(reply=f"## Critical Context\nkey is {key}"), context_length=4_000).compress(_conversation(10))
        assert key not in result.summary and "[REDACTED]" in result.summary
        assert all(key not in str(m.content) for m in result.messages)

    async def test_cancellation_propagates_without_fallback(self, autojump_clock: object) -> None:
        async def hang(messages: list[dict[str, Any]], instructions: str) -> str:
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        compressor = ContextCompressor(CompressionConfig(minimum_threshold_tokens=100), context_length=4_000, summarize=hang, estimate_tokens=estimate_tokens)
        with trio.move_on_after(5) as scope:
            await compressor.compress(_conversation(10))
        assert scope.cancelled_caught
        assert compressor.previous_summary is None and compressor.statistics().compressions == 0
        assert compressor.statistics().ineffective_in_a_row == 0

    async def test_nothing_to_compress(self) -> None:
        compressor = _compressor(_Summarizer())
        with pytest.raises(CompressionError):
            await compressor.compress([system(), user(), assistant()])
        assert compressor.statistics().ineffective_in_a_row == 1

    async def test_last_user_message_never_summarised(self) -> None:
        history = _conversation(6) + [user("request final")]
        for n in range(12):
            history += [assistant(None, [(f"x{n}", "terminal")], {"command": f"probe {n}"}), tool(f"x{n}", f"probe result {n} " * 30)]
        compressor = _compressor(_Summarizer(), context_length=4_000)
        bounds = find_boundaries(history, protect_first_n=3, tail_budget=compressor.tail_budget, tokens=_tokens)
        assert history[bounds.tail_start] == user("request final")
        result = await compressor.compress(history)
        assert user("request final") in result.messages
        assert result.messages[-1] == history[-1]
        check_alternation(result.messages)


class TestSummaryTemplate:
    """The seed's sections and cap, with what Hermes 0.19.0 adds where the seed is silent."""

    async def _instructions(self, **kwargs: Any) -> str:
        summarizer = _Summarizer()
        compressor = _compressor(summarizer, context_length=4_000, **kwargs)
        await compressor.compress(_conversation(10))
        return summarizer.calls[0][1]

    async def test_sections_in_hermes_order_under_the_seeds_names(self) -> None:
        instructions = await self._instructions()
        headings = [line for line in instructions.splitlines() if line.startswith("## ")]
        assert headings == [
            "## Active Task", "## Goal", "## Constraints & Preferences", "## Completed Actions", "## Active State",
            "## In Progress", "## Blocked", "## Key Decisions", "## Resolved Questions", "## Pending User Asks",
            "## Relevant Files", "## Remaining Work", "## Critical Context",
        ]
        assert "[tool: " in instructions, "each completed action names its tool"

    async def test_finished_work_is_anchored_to_the_day(self) -> None:
        summarizer = _Summarizer()
        compressor = ContextCompressor(
            CompressionConfig(minimum_threshold_tokens=100), context_length=4_000, summarize=summarizer,
            estimate_tokens=estimate_tokens, today=lambda: datetime.date(2026, 11, 28),
        )
        await compressor.compress(_conversation(10))
        assert "Today is 2026-11-28." in summarizer.calls[0][1]

    def test_the_cap_is_the_seeds_12k_not_hermes_10k(self) -> None:
        assert CompressionConfig().summary_max_tokens == 12_000
        assert _compressor(_Summarizer(), context_length=1_000_000).max_summary_tokens == 12_000
