"""Chat messages as typed values: their dict form both ways, through the one converter."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from messages.chat import (
    CHAT,
    AssistantMessage,
    ChatMessage,
    ChatMessageError,
    HumanMessage,
    ImagePart,
    RawPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    content_text,
    dict_form,
    message_to_dict,
    messages_from_dicts,
)
from tests.store.strategies import extras, json_values, text_part, image_part, tool_call

# The dict forms the daemon writes today, one of each kind (the provider layer's normalized reply included).
TODAY = [
    {"role": "system", "content": "You are Hermes."},
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
    {
        "role": "assistant", "content": None, "reasoning": "thinking",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\":\"ls\"}"},
                        "extra_content": {"google": {"thought_signature": "sig"}}}],
        "anthropic_content": [{"type": "thinking", "thinking": "t", "signature": "s"}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "a b"},
    {"role": "assistant", "content": "done"},
]

contents = st.text(max_size=40) | st.lists(text_part | image_part, max_size=3)
dict_messages = st.one_of(
    st.builds(lambda c, more: {"role": "system", "content": c, **more}, contents, extras),
    st.builds(lambda c, more: {"role": "user", "content": c, **more}, contents, extras),
    st.builds(
        lambda c, r, calls, more: {
            "role": "assistant", "content": c, **({"reasoning": r} if r is not None else {}), **({"tool_calls": calls} if calls else {}), **more,
        },
        st.none() | contents, st.none() | st.text(max_size=20), st.lists(tool_call, max_size=3), extras,
    ),
    st.builds(
        lambda i, n, c, more: {"role": "tool", "tool_call_id": i, **({"name": n} if n is not None else {}), "content": c, **more},
        st.text(max_size=8), st.none() | st.text(max_size=8), contents, extras,
    ),
)


class TestDictForm:
    """A message in today's dict form becomes a typed value and comes back the same dict, key order included."""

    def test_todays_forms_round_trip(self) -> None:
        typed = CHAT.structure(TODAY, list[ChatMessage])
        assert [type(m) for m in typed] == [SystemMessage, HumanMessage, AssistantMessage, ToolMessage, AssistantMessage]
        back = CHAT.unstructure(typed, list[ChatMessage])
        assert back == TODAY
        assert [list(m) for m in back] == [list(m) for m in TODAY]

    def test_fields_are_typed(self) -> None:
        user, reply = CHAT.structure(TODAY[1], ChatMessage), CHAT.structure(TODAY[2], ChatMessage)
        assert user == HumanMessage((TextPart("look"), ImagePart("data:image/png;base64,AA")))
        assert isinstance(reply, AssistantMessage)
        assert reply.tool_calls == (
            ToolCall("c1", "terminal", "{\"command\":\"ls\"}", {"extra_content": {"google": {"thought_signature": "sig"}}}),
        )
        assert reply.extras == {"anthropic_content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
        assert reply.reasoning == "thinking" and reply.content is None

    @given(dict_messages)
    def test_any_message_of_a_known_role_round_trips(self, message: dict[str, Any]) -> None:
        back = CHAT.unstructure(CHAT.structure(message, ChatMessage), ChatMessage)
        assert back == message
        assert list(back) == list(message)

    @given(json_values)
    def test_unusual_parts_are_kept_verbatim(self, value: Any) -> None:
        part = {"type": "input_audio", "input_audio": value}
        typed = CHAT.structure({"role": "user", "content": [part]}, ChatMessage)
        assert typed.content == (RawPart(part),)
        assert CHAT.unstructure(typed, ChatMessage)["content"] == [part]

    def test_null_optional_keys_are_left_out(self) -> None:
        """A provider's reply with no reasoning and no calls is stored without the null keys (read back the same)."""
        typed = CHAT.structure({"role": "assistant", "content": "x", "reasoning": None, "tool_calls": []}, ChatMessage)
        assert CHAT.unstructure(typed, ChatMessage) == {"role": "assistant", "content": "x"}
        assert typed == AssistantMessage("x")

    def test_the_dict_form_is_made_once(self) -> None:
        message = HumanMessage("hi")
        assert dict_form(message) is dict_form(message) == {"role": "user", "content": "hi"}
        assert message_to_dict(message) is not dict_form(message)

    def test_typed_values_unstructure_without_naming_the_union(self) -> None:
        assert CHAT.unstructure(ToolMessage("c1", "ok", "terminal")) == {
            "role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "ok",
        }

    def test_content_text_joins_text_parts(self) -> None:
        assert content_text((TextPart("a"), ImagePart("u"), TextPart("b"))) == "a b"
        assert content_text(None) == "" and content_text("x") == "x"


class TestInvalid:
    """What is not a message of a known shape is refused with a named error saying why."""

    @pytest.mark.parametrize(
        ("message", "says"),
        [
            ({"role": "robot", "content": "x"}, "unknown message role 'robot'"),
            ({"content": "x"}, "unknown message role None"),
            ({"role": "user", "content": 5}, "user content must be a string or a list of parts"),
            ({"role": "tool", "content": "x"}, "tool_call_id must be a string"),
            ({"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}, "function call"),
            ({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}]}, "JSON text"),
            ({"role": "assistant", "reasoning": 3}, "reasoning must be a string"),
            ("not a dict", "must be an object"),
        ],
    )
    def test_refused(self, message: Any, says: str) -> None:
        with pytest.raises(ChatMessageError, match=says.replace("(", r"\(")):
            CHAT.structure(message, ChatMessage)

    def test_the_index_of_a_bad_message_is_named(self) -> None:
        with pytest.raises(ChatMessageError, match="message 1: unknown message role"):
            messages_from_dicts([TODAY[0], {"role": "robot"}])

    def test_a_concrete_class_refuses_another_role(self) -> None:
        with pytest.raises(ChatMessageError, match="expected a tool message, got user"):
            CHAT.structure({"role": "user", "content": "x"}, ToolMessage)
