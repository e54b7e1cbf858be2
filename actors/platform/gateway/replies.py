"""Choices answered by a reply, for platforms whose buttons the daemon cannot hear (Matrix has none;
Mattermost's call a URL the daemon may not have): a question the bot asked, and which of its choices
a user's words name.

An approval is answered ``approve`` (once), ``approve session``, ``approve always`` or ``deny``; any
question by its choice's number or words. Never a bare "yes" or "ok": said in passing while a command
waits, they would allow it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from actors.platform.gateway.follower import APPROVAL_LABELS
from actors.platform.gateway.port import ChatRef, Choice, SentMessage
from actors.platform.gateway.recent import Recent
from actors.platform.outbound import DeliveryFailed

__all__ = ["APPROVE_WORDS", "DENY_WORDS", "Question", "ask", "chosen", "forget_edited"]

#: Words that approve (the first choice) or deny, alone or followed by once / session / always.
APPROVE_WORDS, DENY_WORDS = frozenset({"approve", "allow"}), frozenset({"deny"})


@attrs.frozen
class Question:
    """A question the bot asked in a chat: its message (the platform's id), and its choices."""

    message_id: str
    choices: tuple[Choice, ...]

    @property
    def approval(self) -> bool:
        """Whether it asks for an approval (one of its choices denies)."""
        return any(choice.label == APPROVAL_LABELS["deny"] for choice in self.choices)


def chosen(text: str, question: Question) -> int | None:
    """The index of the choice a reply names (its number, its words, or approve/deny on an approval);
    None when the reply names none."""
    words = text.strip().lower().rstrip(".!").split()
    labels = [choice.label.lower() for choice in question.choices]
    said = " ".join(words)
    if said in labels:
        return labels.index(said)
    if said.isdigit() and 1 <= int(said) <= len(labels):
        return int(said) - 1
    if not question.approval or not words or len(words) > 2:
        return None
    if words[0] in DENY_WORDS and len(words) == 1:
        return labels.index(APPROVAL_LABELS["deny"].lower())
    if words[0] in APPROVE_WORDS:
        label = APPROVAL_LABELS.get(words[1] if len(words) == 2 else "once", "").lower()
        return labels.index(label) if label in labels else None
    return None



async def ask(
    asked: Recent, chat: ChatRef, text: str, choices: list[Choice], send: Callable[[str], Awaitable[SentMessage]],
    *, how: tuple[str, str],
) -> SentMessage:
    """Send a question as text, its choices numbered and then how to answer (``how``: the words for an
    approval, and for any other question), and keep it in ``asked`` under ``chat`` until it is answered.

    It is kept before it is sent (a quick reply, or the message's own echo, may come before the send's
    answer), and forgotten if the send fails.

    Raises:
        DeliveryFailed: as ``send`` does.
    """
    question = Question("", tuple(choices))
    lines = [f"{n}. {choice.label}" for n, choice in enumerate(choices, 1)]
    asked.remember(chat, question)
    try:
        sent = await send("\n".join([text, "", *lines, "", how[0] if question.approval else how[1]]))
    except DeliveryFailed:
        asked.pop(chat, None)
        raise
    if asked.get(chat) is question:
        asked.remember(chat, attrs.evolve(question, message_id=sent.message_id))
    return sent


def forget_edited(asked: Recent, message: SentMessage) -> None:
    """A question's message was edited (it was answered, here or elsewhere): it takes no more answers."""
    question = asked.get(message.chat)
    if question is not None and question.message_id == message.message_id:
        del asked[message.chat]
