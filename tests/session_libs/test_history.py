"""History invariants, interrupt closing and repair on load."""

from __future__ import annotations

import pytest

from conversation.errors import HistoryInvariantError
from conversation.history import (
    INTERRUPTED_REPLY,
    RESTART_REPLY,
    ANTHROPIC_CONTENT_KEY,
    cancelled_tool_text,
    check_alternation,
    close_interrupted_turn,
    is_valid,
    open_tool_calls,
    repair_on_load,
    restart_tool_text,
    sanitize_tool_pairs,
)
from messages.chat import (
    AssistantMessage, ChatMessage, HumanMessage, ImagePart, TextPart, ToolCall, message_from_dict, message_to_dict,
)
from tests.session_libs.messages import assistant, system, tool, user


class TestCheckAlternation:
    """A history passes only when roles alternate and every tool call is answered after its assistant."""

    def test_valid_tool_conversation(self) -> None:
        check_alternation(
            [system(), user(), assistant(None, [("a", "terminal"), ("b", "read_file")]), tool("b"), tool("a"), assistant(), user()]
        )

    def test_empty_and_system_only_are_valid(self) -> None:
        check_alternation([])
        check_alternation([system()])

    @pytest.mark.parametrize(
        ("history", "index"),
        [
            ([user(), system()], 1),
            ([system(), assistant()], 1),
            ([user(), user()], 1),
            ([user(), assistant(), assistant()], 2),
            ([user(), tool("x")], 1),
            ([user(), assistant(None, [("a", "t")]), tool("b")], 2),
            ([user(), assistant(None, [("a", "t")]), tool("a"), tool("a")], 3),
            ([user(), assistant(None, [("a", "t")]), user()], 2),
            ([user(), assistant(None, [("a", "t")]), tool("a"), user()], 3),
            ([user(), assistant(None, [("a", "t"), ("a", "t")])], 1),
            ([object()], 0),
        ],
    )
    def test_violations_name_the_offending_index(self, history: list[ChatMessage], index: int) -> None:
        with pytest.raises(HistoryInvariantError) as info:
            check_alternation(history)
        assert info.value.index == index

    def test_unanswered_calls_fail_unless_pending_allowed(self) -> None:
        history = [user(), assistant(None, [("a", "t"), ("b", "t")]), tool("a")]
        with pytest.raises(HistoryInvariantError, match="never answered"):
            check_alternation(history)
        check_alternation(history, allow_pending_tool_calls=True)
        assert not is_valid(history)
        assert open_tool_calls(history) == [("b", "t")]


class TestCloseInterruptedTurn:
    """An interrupted turn is closed with the issue's exact texts and leaves a valid history."""

    def test_unrun_tools_cancelled_and_given_results_passed_through(self) -> None:
        history = [user(), assistant(None, [("a", "terminal"), ("b", "read_file"), ("c", "web_search")]), tool("a", "done")]
        closed = close_interrupted_turn(history, results={"b": "[Command interrupted]\npartial output"})
        assert closed[3:] == [
            tool("b", "[Command interrupted]\npartial output", "read_file"),
            tool("c", "[Tool execution cancelled — web_search was skipped due to user interrupt]", "web_search"),
            assistant("Operation interrupted."),
        ]
        check_alternation(closed)
        assert history[-1] == tool("a", "done") and len(history) == 3

    def test_cancelled_text_is_exact(self) -> None:
        assert cancelled_tool_text("terminal") == "[Tool execution cancelled — terminal was skipped due to user interrupt]"
        assert INTERRUPTED_REPLY == "Operation interrupted."

    def test_partial_text_kept_and_unsigned_thinking_dropped(self) -> None:
        partial = message_from_dict({
            "role": "assistant",
            "content": "I was saying",
            "reasoning": "half a thought",
            ANTHROPIC_CONTENT_KEY: [
                {"type": "thinking", "thinking": "t1", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "thinking", "thinking": "t2"},
                {"type": "text", "text": "I was saying"},
            ],
            "tool_calls": [{"id": "z", "type": "function", "function": {"name": "x", "arguments": "{"}}],
        })
        assert isinstance(partial, AssistantMessage)
        closed = close_interrupted_turn([user()], partial=partial)
        assert message_to_dict(closed[-1]) == {
            "role": "assistant",
            "content": "I was saying",
            ANTHROPIC_CONTENT_KEY: [
                {"type": "thinking", "thinking": "t1", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
            ],
        }
        check_alternation(closed)

    @pytest.mark.parametrize("text", ["", "   \n", None])
    def test_empty_partial_text_is_not_kept(self, text: str | None) -> None:
        closed = close_interrupted_turn([user()], partial=AssistantMessage(text))
        assert closed == [user(), assistant("Operation interrupted.")]

    def test_partial_after_tool_results_closes_the_turn(self) -> None:
        history = [user(), assistant(None, [("a", "t")]), tool("a")]
        closed = close_interrupted_turn(history, partial=AssistantMessage("Looking at it"))
        assert closed[-1] == assistant("Looking at it")
        check_alternation(closed)

    def test_history_already_at_rest_is_unchanged(self) -> None:
        history = [user(), assistant()]
        assert close_interrupted_turn(history) == history


class TestRepairOnLoad:
    """A history cut short by a crash is restored to a valid one; a valid one is left alone."""

    def test_valid_history_unchanged(self) -> None:
        history = [system(), user(), assistant(None, [("a", "t")]), tool("a"), assistant()]
        assert repair_on_load(history) == history

    def test_trailing_user_message_gets_restart_reply(self) -> None:
        assert repair_on_load([system(), user("q")]) == [system(), user("q"), assistant(RESTART_REPLY)]

    def test_dangling_tool_calls_answered(self) -> None:
        repaired = repair_on_load([user(), assistant(None, [("a", "terminal"), ("b", "patch")]), tool("a")])
        assert repaired[3] == tool("b", restart_tool_text("patch"), "patch")
        assert repaired[4] == assistant(RESTART_REPLY)
        check_alternation(repaired)

    def test_orphans_duplicates_and_misplaced_system_dropped(self) -> None:
        repaired = repair_on_load(
            [assistant("early"), tool("zz"), user("a"), system("late"), user("b"), assistant("x"), assistant("y"), tool("q")]
        )
        assert repaired == [user("a\n\nb"), assistant("x\n\ny")]

    def test_user_after_tool_result_gets_reply_between(self) -> None:
        repaired = repair_on_load([user(), assistant(None, [("a", "t")]), tool("a"), user("next")])
        assert [m.role for m in repaired] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
        check_alternation(repaired)

    def test_text_reply_folded_into_following_tool_call_message(self) -> None:
        repaired = repair_on_load([user(), assistant("thinking aloud"), assistant("now", [("a", "t")]), tool("a"), assistant()])
        assert repaired[1] == assistant("thinking aloud\n\nnow", [("a", "t")])
        check_alternation(repaired)

    def test_multimodal_user_messages_merge_as_parts(self) -> None:
        image = ImagePart("data:x")
        repaired = repair_on_load([HumanMessage((image,)), user("caption"), assistant()])
        assert repaired[0].content == (image, TextPart("caption"))


class TestSanitizeToolPairs:
    """Orphaned tool calls and results are removed after a cut."""

    def test_orphans_removed_in_both_directions(self) -> None:
        history = [tool("gone"), assistant("kept text", [("a", "t"), ("b", "t")]), tool("a"), user(), assistant(None, [("c", "t")])]
        cleaned = sanitize_tool_pairs(history)
        assert cleaned == [assistant("kept text", [("a", "t")]), tool("a"), user()]


class TestExtrasPreserved:
    """Provider extras on messages survive repair and interrupt closing untouched."""

    def test_extras_round_trip(self) -> None:
        extras = {
            "reasoning": "thought",
            ANTHROPIC_CONTENT_KEY: [{"type": "thinking", "thinking": "t", "signature": "s"}],
            "responses_items": [{"type": "reasoning", "id": "rs_1", "encrypted_content": "xyz"}],
        }
        call = ToolCall("a", "t", "{}", {"extra_content": {"google": {"thought_signature": "sig"}}})
        reply = AssistantMessage(None, (call,), "thought", {k: v for k, v in extras.items() if k != "reasoning"})
        history = [system(), user(), reply, tool("a"), AssistantMessage("done", reasoning="r2")]
        assert repair_on_load(history) == history
        closed = close_interrupted_turn(history[:3])
        assert closed[2] == reply
