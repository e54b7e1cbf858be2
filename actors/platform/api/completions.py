"""``POST /v1/chat/completions``: one user message, one agent turn, OpenAI's answer shape.

Without ``X-Hermes-Session-Id`` the request's messages are the conversation: a
fresh ephemeral session starts with the earlier messages as its history (when
they alternate user/assistant; otherwise they go in as a transcript), gets the
client's system messages as its ephemeral layer (never stored), the last user
message as its turn, and is closed afterwards. With the header, the last user message continues the
API session of that name (created when absent; the name lives in the API's own namespace, see
:mod:`.gateway`) and the header is echoed back. A streaming
client that disconnects interrupts an ephemeral session's turn; a named
session's turn keeps running for whoever else is watching.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import trio
from starlette.responses import JSONResponse

from actors.platform.api.errors import BadRequest, TurnFailed
from actors.platform.api.firsts import Ticket
from actors.platform.api.gateway import Admission, ApiGateway
from actors.platform.api.sse import Emit, SseResponse
from actors.platform.api.turns import TurnLost, TurnWatch
from actors.platform.api.wire import (
    DONE_FRAME,
    ChunkFrames,
    CompletionRequest,
    chunk,
    completion_body,
    finish_reason,
    new_id,
    sse_data,
    valid_session_id,
)
from messages.chat import AssistantMessage, ChatMessage, HumanMessage
from messages.events import SessionEvent, TextDelta

__all__ = ["SESSION_HEADER", "chat_completion"]

log = logging.getLogger("hermes_actors.api")

SESSION_HEADER = "X-Hermes-Session-Id"


def _seed(request: CompletionRequest) -> list[ChatMessage] | None:
    """The earlier turns as history, when they alternate user/assistant as a history must."""
    earlier = request.earlier
    expected = ("user", "assistant") * (len(earlier) // 2)
    if len(earlier) % 2 or tuple(role for role, _ in earlier) != expected:
        return None
    return [HumanMessage(text) if role == "user" else AssistantMessage(text) for role, text in earlier]


def _ephemeral_layer(request: CompletionRequest, seeded: bool) -> str | None:
    parts = [request.system] if request.system else []
    if request.earlier and not seeded:
        parts.append(
            "The conversation so far, as the API client sent it (the next user message continues it):\n"
            + "\n".join(f"{role}: {text}" for role, text in request.earlier)
        )
    return "\n\n".join(parts) or None


async def chat_completion(gateway: ApiGateway, request: CompletionRequest, session_header: str | None) -> Any:
    """Answer one chat completion request (a JSON response or an SSE stream).

    Raises:
        BadRequest: a malformed session header.
        TooManyRuns / NotFound / TurnFailed: from admission, the session, or the turn.
    """
    if session_header is not None and not valid_session_id(session_header):
        raise BadRequest(f"{SESSION_HEADER} must be 1-64 letters, digits, '_', '.' or '-'")
    admission = await gateway.admit()
    ephemeral = session_header is None
    session_id: str | None = None
    ticket: Ticket | None = None
    try:
        ticket = await gateway.firsts.enter()
        if ephemeral:
            seed = _seed(request)
            session_id = await gateway.open_ephemeral(_ephemeral_layer(request, seed is not None), seed=seed, light=True)
        else:
            assert session_header is not None
            session_id = await gateway.open_named(session_header, request.system)
        watch = await gateway.start_turn(session_id, request.text, label=f"api:{new_id('')[:8]}", fresh=ephemeral)
    except BaseException:
        admission.release()
        if ticket is not None:
            ticket.passed()
        if ephemeral and session_id is not None:
            await gateway.discard(session_id, "api request failed")
        raise
    assert ticket is not None
    headers = {} if session_header is None else {SESSION_HEADER: session_header}
    completion = _Completion(gateway, request, watch, admission, ticket, ephemeral)
    if request.stream:
        return SseResponse(completion.stream, headers, after=completion.close_later)
    return JSONResponse(await completion.answer(), headers=headers)


class _Completion:
    """One admitted completion: its turn, and the cleanup when it ends however it ends."""

    def __init__(
        self, gateway: ApiGateway, request: CompletionRequest, watch: TurnWatch, admission: Admission, ticket: Ticket,
        ephemeral: bool,
    ) -> None:
        self.gateway = gateway
        self.request = request
        self.watch = watch
        self.admission = admission
        self.ticket = ticket
        self.ephemeral = ephemeral
        self.id = new_id("chatcmpl-")
        self.created = int(time.time())
        # The end reason of a stream whose session is closed after its response (see close_later).
        self._closing: str | None = None
        self._streamed = False

    def _text_of(self, event: object) -> str:
        """The answer text an event adds (the session's own deltas; a subagent's are not the answer)."""
        if isinstance(event, TextDelta) and event.session_id == self.watch.session_id:
            return event.text
        return ""

    async def _next_event(self) -> SessionEvent | None:
        """The turn's next event; before the first token, a wait past the ticket's deadline gives the
        slot back (the provider is slow, not this loop) and goes on waiting."""
        if not self.ticket.done:
            with trio.move_on_at(self.ticket.deadline):
                return await self.watch.next_event()
            self.ticket.passed()
        return await self.watch.next_event()

    async def _finish(self, reason: str, *, later: bool = False) -> None:
        """End the completion: its watch, admission and slot now; its ephemeral session now, or
        (``later``) in :meth:`close_later`, once the response has ended."""
        self.watch.close()
        self.admission.release()
        self.ticket.passed()
        if self.ephemeral:
            if later:
                self._closing = reason
                return
            await self.gateway.discard(self.watch.session_id, reason)

    async def close_later(self) -> None:
        """After the stream's response has ended: close the ephemeral session its end left open. Its
        teardown is a tail: it waits for the first tokens queued behind it (bounded). Shielded."""
        reason, self._closing = self._closing, None
        with trio.CancelScope(shield=True):
            if not self._streamed:
                # The response ended before its stream began (the client left first).
                await self._finish("api client disconnected")
            elif reason is not None:
                await self.gateway.firsts.tail()
                await self.gateway.discard(self.watch.session_id, reason)

    async def answer(self) -> dict[str, Any]:
        """Wait for the turn; the ``chat.completion`` body."""
        reason = "api completion cancelled"
        try:
            try:
                while await self._next_event() is not None:
                    pass
            except TurnLost as exc:
                raise TurnFailed(str(exc)) from exc
            outcome = self.watch.outcome
            assert outcome is not None
            reason = "api completion done"
            if outcome.reason == "error":
                raise TurnFailed(f"the agent's turn failed: {outcome.error or outcome.final_text}")
            return completion_body(
                self.id, self.created, self.request.model, outcome.final_text, finish_reason(outcome.reason), outcome.usage
            )
        finally:
            await self._finish(reason)

    async def stream(self, emit: Emit) -> None:
        """Stream the turn's text as chunks, then the finish chunk, usage if asked, and ``[DONE]``."""
        self._streamed = True
        model = self.request.model
        frames = ChunkFrames(self.id, self.created, model)
        reason = "api client disconnected"
        # What is not written yet: the opening (role) chunk goes out with the first text, or with the
        # end: one write fewer per completion, and the client's first token comes no later (the
        # headers are sent at once).
        unsent = frames.opening
        try:
            try:
                while (event := await self._next_event()) is not None:
                    # Deltas that piled up while this task waited go out as one chunk: fewer
                    # writes when the daemon is busy, the same text for the client.
                    pieces = [self._text_of(event)]
                    while (more := self.watch.next_event_nowait()) is not None:
                        pieces.append(self._text_of(more))
                    text = "".join(pieces)
                    if text:
                        unsent += frames.content(text)
                        # A turn that has already ended sends its text with the closing frames: one
                        # write fewer, and nothing is held back waiting.
                        if self.watch.outcome is None:
                            await emit(unsent)
                            unsent = b""
                            if not self.ticket.done:
                                # The first token is out: the rest of this stream is a tail.
                                self.ticket.passed()
                                await self.gateway.firsts.tail()
            except TurnLost as exc:
                await emit(unsent + sse_data(TurnFailed(str(exc)).body()) + DONE_FRAME)
                reason = "api turn lost"
                return
            outcome = self.watch.outcome
            assert outcome is not None
            # The closing frames go out in one write: the client reads them all at once anyway.
            if outcome.reason == "error":
                tail = [sse_data(TurnFailed(f"the agent's turn failed: {outcome.error or outcome.final_text}").body())]
            else:
                tail = [sse_data(chunk(self.id, self.created, model, {}, finish_reason(outcome.reason)))]
                if self.request.include_usage:
                    usage_chunk = chunk(self.id, self.created, model, {})
                    usage_chunk["choices"] = []
                    usage_chunk["usage"] = outcome.usage.to_json()
                    tail.append(sse_data(usage_chunk))
            await emit(b"".join([unsent, *tail, DONE_FRAME]))
            reason = "api completion done"
        finally:
            with trio.CancelScope(shield=True):
                if reason == "api client disconnected":
                    log.info("api: client left completion %s (session %s)", self.id, self.watch.session_id)
                # A completed stream's session is closed once the response has ended (the client is not
                # kept waiting for it); a departed client's turn is stopped at once.
                await self._finish(reason, later=reason == "api completion done")
