"""A conversation's messages as typed values, and the one converter to and from their dict form.

A session's history is a list of :data:`ChatMessage`: a :class:`SystemMessage` first, then
:class:`HumanMessage` and :class:`AssistantMessage` in turn, each assistant's :class:`ToolCall`
answered by a :class:`ToolMessage`. The rules of that order live in ``conversation.history``.

The dict form is the internal OpenAI form every store row and provider adapter already knows::

    {"role": "system", "content": str}
    {"role": "user", "content": str | [part, ...]}
    {"role": "assistant", "content": str | None, "reasoning": str,
     "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}, ...]}
    {"role": "tool", "tool_call_id": str, "name": str, "content": str | [part, ...]}

Every other key (a provider's extras: thinking blocks with their signatures, Responses items,
OpenRouter's ``reasoning_details``; on a tool call, Gemini's ``extra_content``) is kept in
``extras``, in the order received, and given back as it came: the next request to the same provider
must send it back unchanged. :data:`CHAT` converts both ways (``CHAT.structure(d, ChatMessage)``,
``CHAT.unstructure(m)``) at the two places a message leaves the process: the store and the
providers. Structuring then unstructuring a message in the form above gives the same dict, key
order included, so what is stored keeps its bytes; the one exception is a key that is optional and
null (``"reasoning": null``, ``"tool_calls": []``): it is left out, as reading one treats it as absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeAlias

import attrs
import cattrs

__all__ = [
    "CHAT",
    "AssistantMessage",
    "ChatMessage",
    "ChatMessageError",
    "Content",
    "ContentPart",
    "HumanMessage",
    "ImagePart",
    "RawPart",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolMessage",
    "append_text",
    "content_text",
    "content_to_dict",
    "dict_form",
    "message_from_dict",
    "message_to_dict",
    "messages_from_dicts",
    "messages_to_dicts",
]

_NO_EXTRAS: Mapping[str, Any] = MappingProxyType({})


class ChatMessageError(ValueError):
    """A dict is not a chat message this module can type (unknown role, a field of the wrong type)."""


@attrs.frozen
class TextPart:
    """Text inside list content."""

    text: str


@attrs.frozen
class ImagePart:
    """An image inside list content: a URL (``data:`` URLs included) and the detail asked for."""

    url: str
    detail: str | None = None


@attrs.frozen
class RawPart:
    """A content part of another shape (audio, a file, a provider's own), kept as it came."""

    data: Mapping[str, Any]


ContentPart: TypeAlias = TextPart | ImagePart | RawPart
Content: TypeAlias = str | tuple[ContentPart, ...]


@attrs.frozen
class ToolCall:
    """One function call an assistant message asks for; ``arguments`` is the model's raw JSON text."""

    id: str
    name: str
    arguments: str
    extras: Mapping[str, Any] = attrs.field(default=_NO_EXTRAS, repr=False)


@attrs.frozen
class SystemMessage:
    """The system prompt: only ever the first message."""

    content: Content
    extras: Mapping[str, Any] = attrs.field(default=_NO_EXTRAS, repr=False)
    # The dict form, made at the first :func:`dict_form` call (the message never changes).
    _dict: dict[str, Any] | None = attrs.field(default=None, init=False, eq=False, repr=False, hash=False)

    role = "system"


@attrs.frozen
class HumanMessage:
    """A ``user`` message: what the person sent, and what the daemon says on their side (a steer, a
    background process's note, a continuation request)."""

    content: Content
    extras: Mapping[str, Any] = attrs.field(default=_NO_EXTRAS, repr=False)
    # The dict form, made at the first :func:`dict_form` call (the message never changes).
    _dict: dict[str, Any] | None = attrs.field(default=None, init=False, eq=False, repr=False, hash=False)

    role = "user"


@attrs.frozen
class AssistantMessage:
    """The model's reply: text, its reasoning, and the tool calls it asks for."""

    content: Content | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    extras: Mapping[str, Any] = attrs.field(default=_NO_EXTRAS, repr=False)
    # The dict form, made at the first :func:`dict_form` call (the message never changes).
    _dict: dict[str, Any] | None = attrs.field(default=None, init=False, eq=False, repr=False, hash=False)

    role = "assistant"


@attrs.frozen
class ToolMessage:
    """The result of the tool call ``tool_call_id`` (the function ``name``)."""

    tool_call_id: str
    content: Content
    name: str | None = None
    extras: Mapping[str, Any] = attrs.field(default=_NO_EXTRAS, repr=False)
    # The dict form, made at the first :func:`dict_form` call (the message never changes).
    _dict: dict[str, Any] | None = attrs.field(default=None, init=False, eq=False, repr=False, hash=False)

    role = "tool"


ChatMessage: TypeAlias = SystemMessage | HumanMessage | AssistantMessage | ToolMessage


def content_text(content: Content | None) -> str:
    """The text of ``content``: itself when a string, its text parts joined by spaces when a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(part.text for part in content if isinstance(part, TextPart))


def append_text(content: Content | None, text: str) -> Content:
    """``content`` with ``text`` added: after a blank line when a string, as a new text part when a list."""
    if isinstance(content, tuple):
        return (*content, TextPart(text))
    return f"{content}\n\n{text}" if content else text


# --- the dict form ----------------------------------------------------------------------------------


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ChatMessageError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _part_from_dict(part: object) -> ContentPart:
    if not isinstance(part, Mapping):
        raise ChatMessageError(f"a content part must be an object, got {type(part).__name__}")
    kind = part.get("type")
    if kind == "text" and part.keys() == {"type", "text"} and isinstance(part["text"], str):
        return TextPart(part["text"])
    if kind == "image_url" and part.keys() == {"type", "image_url"}:
        image = part["image_url"]
        if isinstance(image, Mapping) and isinstance(image.get("url"), str):
            detail = image.get("detail")
            if image.keys() == {"url"} or (image.keys() == {"url", "detail"} and isinstance(detail, str)):
                return ImagePart(image["url"], detail)
    return RawPart(dict(part))


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        image = {"url": part.url} if part.detail is None else {"url": part.url, "detail": part.detail}
        return {"type": "image_url", "image_url": image}
    return dict(part.data)


def _content_from_dict(value: object, what: str) -> Content:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return tuple(_part_from_dict(part) for part in value)
    raise ChatMessageError(f"{what} must be a string or a list of parts, got {type(value).__name__}")


def content_to_dict(content: Content) -> str | list[dict[str, Any]]:
    """The dict form of ``content``: a string as it is, parts as a list of dicts."""
    return content if isinstance(content, str) else [_part_to_dict(part) for part in content]


_CALL_KEYS = frozenset(("id", "type", "function"))


def _call_from_dict(call: object) -> ToolCall:
    if not isinstance(call, Mapping):
        raise ChatMessageError(f"a tool call must be an object, got {type(call).__name__}")
    function = call.get("function")
    if not isinstance(function, Mapping) or call.get("type", "function") != "function":
        raise ChatMessageError("a tool call must be a function call with a 'function' object")
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        raise ChatMessageError("a tool call's arguments must be JSON text")
    if function.keys() - {"name", "arguments"}:
        raise ChatMessageError(f"a tool call's function has unknown keys {sorted(function.keys() - {'name', 'arguments'})}")
    extras = {key: value for key, value in call.items() if key not in _CALL_KEYS}
    return ToolCall(
        _str(call.get("id"), "a tool call's id"), _str(function.get("name"), "a tool call's name"), arguments,
        extras or _NO_EXTRAS,
    )


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    out.update(call.extras)
    return out


def _extras(message: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Any]:
    extras = {key: value for key, value in message.items() if key not in known}
    return extras or _NO_EXTRAS


_SYSTEM_KEYS = frozenset(("role", "content"))
_ASSISTANT_KEYS = frozenset(("role", "content", "reasoning", "tool_calls"))
_TOOL_KEYS = frozenset(("role", "content", "tool_call_id", "name"))


def message_from_dict(message: Mapping[str, Any]) -> ChatMessage:
    """The typed message of a dict in the internal OpenAI form (see the module docstring).

    Raises:
        ChatMessageError: an unknown role, a missing field, or a field of the wrong type.
    """
    if not isinstance(message, Mapping):
        raise ChatMessageError(f"a message must be an object, got {type(message).__name__}")
    role = message.get("role")
    if role == "user":
        return HumanMessage(_content_from_dict(message.get("content", ""), "user content"), _extras(message, _SYSTEM_KEYS))
    if role == "assistant":
        content = message.get("content")
        reasoning = message.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, str):
            raise ChatMessageError("assistant reasoning must be a string")
        calls = message.get("tool_calls") or ()
        if not isinstance(calls, list | tuple):
            raise ChatMessageError("assistant tool_calls must be a list")
        return AssistantMessage(
            None if content is None else _content_from_dict(content, "assistant content"),
            tuple(_call_from_dict(call) for call in calls),
            reasoning,
            _extras(message, _ASSISTANT_KEYS),
        )
    if role == "tool":
        name = message.get("name")
        return ToolMessage(
            _str(message.get("tool_call_id"), "a tool message's tool_call_id"),
            _content_from_dict(message.get("content", ""), "tool content"),
            None if name is None else _str(name, "a tool message's name"),
            _extras(message, _TOOL_KEYS),
        )
    if role == "system":
        return SystemMessage(_content_from_dict(message.get("content", ""), "system content"), _extras(message, _SYSTEM_KEYS))
    raise ChatMessageError(f"unknown message role {role!r}")


def message_to_dict(message: ChatMessage) -> dict[str, Any]:
    """The dict form of ``message`` (a new dict; its inner values are shared, not copied)."""
    out: dict[str, Any]
    if isinstance(message, AssistantMessage):
        content = message.content
        out = {"role": "assistant", "content": None if content is None else content_to_dict(content)}
        if message.reasoning is not None:
            out["reasoning"] = message.reasoning
        if message.tool_calls:
            out["tool_calls"] = [_call_to_dict(call) for call in message.tool_calls]
    elif isinstance(message, ToolMessage):
        out = {"role": "tool", "tool_call_id": message.tool_call_id}
        if message.name is not None:
            out["name"] = message.name
        out["content"] = content_to_dict(message.content)
    else:
        out = {"role": message.role, "content": content_to_dict(message.content)}
    if message.extras:
        out.update(message.extras)
    return out


def dict_form(message: ChatMessage) -> dict[str, Any]:
    """The dict form of ``message``, made once and shared: for readers that only serialise it (a request
    body, a size estimate) and never change it. :func:`message_to_dict` gives a dict of one's own."""
    cached = message._dict
    if cached is None:
        cached = message_to_dict(message)
        object.__setattr__(message, "_dict", cached)
    return cached


def messages_from_dicts(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """:func:`message_from_dict` of each.

    Raises:
        ChatMessageError: the first message that is not one; its index is in the text.
    """
    typed = []
    for index, message in enumerate(messages):
        try:
            typed.append(message_from_dict(message))
        except ChatMessageError as exc:
            raise ChatMessageError(f"message {index}: {exc}") from None
    return typed


def messages_to_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """:func:`message_to_dict` of each."""
    return [message_to_dict(message) for message in messages]


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    for cls in (SystemMessage, HumanMessage, AssistantMessage, ToolMessage):
        converter.register_unstructure_hook(cls, message_to_dict)
        converter.register_structure_hook(cls, _structure_as(cls))
    converter.register_unstructure_hook(ChatMessage, message_to_dict)
    converter.register_structure_hook(ChatMessage, lambda value, _: message_from_dict(value))
    converter.register_unstructure_hook(ToolCall, _call_to_dict)
    converter.register_structure_hook(ToolCall, lambda value, _: _call_from_dict(value))
    return converter


def _structure_as(cls: type[ChatMessage]) -> Any:
    def structure(value: Mapping[str, Any], _: object) -> ChatMessage:
        message = message_from_dict(value)
        if not isinstance(message, cls):
            raise ChatMessageError(f"expected a {cls.role} message, got {message.role}")
        return message

    return structure


CHAT = _make_converter()
"""The converter of chat messages (and of anything holding them) to and from their dict form."""
