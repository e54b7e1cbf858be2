"""Steer delivery into tool results."""

from __future__ import annotations

import pytest

from conversation.errors import EmptySteerError
from conversation.steer import SteerBuffer, append_steer, normalize_steer, wrap_steer
from messages.chat import ImagePart, TextPart, ToolMessage
from tests.session_libs.messages import assistant, tool, user

WRAPPED_GO_LEFT = (
    "[OUT-OF-BAND USER MESSAGE — a direct message from the user, delivered mid-turn; not tool output]\n"
    "go left\n"
    "[/OUT-OF-BAND USER MESSAGE]"
)


class TestNormalize:
    """Steer text is stripped and must not be empty."""

    def test_stripped(self) -> None:
        assert normalize_steer("  go left \n") == "go left"

    @pytest.mark.parametrize("text", ["", "   ", "\n\t "])
    def test_empty_rejected(self, text: str) -> None:
        with pytest.raises(EmptySteerError):
            normalize_steer(text)
        buffer = SteerBuffer()
        with pytest.raises(EmptySteerError):
            buffer.add(text)
        assert not buffer


class TestWrap:
    """The fence is exactly the issue's text."""

    def test_exact_fence(self) -> None:
        assert wrap_steer("go left") == WRAPPED_GO_LEFT

    def test_text_content_gets_fence_after_blank_line(self) -> None:
        assert append_steer(tool("a", "output"), "go left").content == "output\n\n" + WRAPPED_GO_LEFT

    def test_multimodal_content_gets_text_part(self) -> None:
        image = ImagePart("data:x")
        message = ToolMessage("a", (image,))
        assert append_steer(message, "go left").content == (image, TextPart(WRAPPED_GO_LEFT))
        assert message.content == (image,)

    def test_empty_content_is_just_the_fence(self) -> None:
        assert append_steer(tool("a", ""), "go left").content == WRAPPED_GO_LEFT


class TestSteerBuffer:
    """Steers wait for a tool result, join with newlines, and become the next user message when left over."""

    def test_several_steers_join_on_last_tool_result(self) -> None:
        buffer = SteerBuffer()
        buffer.add(" go ")
        buffer.add("left")
        history = [user(), assistant(None, [("a", "t"), ("b", "t")]), tool("a", "A"), tool("b", "B")]
        assert buffer.deliver(history)
        assert history[2].content == "A"
        assert history[3].content == "B\n\n" + WRAPPED_GO_LEFT.replace("go left", "go\nleft")
        assert not buffer

    def test_waits_without_tool_result(self) -> None:
        buffer = SteerBuffer()
        buffer.add("later")
        history = [user()]
        assert not buffer.deliver(history)
        assert history == [user()] and len(buffer) == 1

    def test_nothing_to_deliver(self) -> None:
        history = [user(), assistant(None, [("a", "t")]), tool("a")]
        assert not SteerBuffer().deliver(history)
        assert history[-1] == tool("a")

    def test_leftover_is_taken_once(self) -> None:
        buffer = SteerBuffer()
        buffer.add("one")
        buffer.add("two")
        assert buffer.take() == "one\ntwo"
        assert buffer.take() is None
