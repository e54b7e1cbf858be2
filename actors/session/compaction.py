"""Compression of one session's history: the compression library wired to the
session's model, store, state and events.

The turn calls the preflight before each provider call; ``/compress`` calls
:meth:`SessionCompaction.compress_now`. The compressor's budgets follow the model
in use: after a fallback to a model with another window they are recomputed,
and automatic compression paused by thrashing is allowed again (a new model, or
a manual compression, is what gets a session out of it: docs/DECISIONS.md#d-compression).
"""

from __future__ import annotations

from conversation.compression import ContextCompressor
from conversation.errors import CompressionError
from actors.session.hub import EventHub
from actors.session.model import SessionModel
from actors.session.options import SessionDeps
from actors.session.state import SessionState, ensure_recorded
from actors.session.turn_parts import PreflightCompress
from messages.chat import ChatMessage, messages_to_dicts
from messages.events import StatusUpdate
from providers.metadata import HistorySize, rough_tokens
from tools.files.ledger import FileReadLedger

__all__ = ["SessionCompaction"]


class SessionCompaction:
    """Compresses a session's history when it grows past the threshold, or on request.

    Args:
        deps / session_id: the store a compaction is written to.
        model: the session's provider side (the window in use, the summariser).
        state: the session's state (its history is replaced by a compaction).
        hub: where compression status lines go.
        file_reads: the session's file-read ledger: a compression forgets its read counts (as
            Hermes does), since the reads' content was summarised away and is needed in full again.

    Attributes:
        history_size: the estimate of the history's size each preflight check is given, kept from
            call to call so that only new messages are encoded.
    """

    __slots__ = (
        "_compressor", "_deps", "_file_reads", "_hub", "_model", "_session_id", "_sized_for", "_state", "history_size",
    )

    def __init__(
        self, deps: SessionDeps, session_id: str, model: SessionModel, state: SessionState, hub: EventHub,
        file_reads: FileReadLedger | None = None,
    ) -> None:
        self._deps = deps
        self._file_reads = file_reads
        self._session_id = session_id
        self._model = model
        self._state = state
        self._hub = hub
        self._compressor: ContextCompressor | None = None
        self._sized_for = ""
        self.history_size = HistorySize()

    def preflight(self) -> PreflightCompress | None:
        """The check the turn runs before each provider call (None: compression is off)."""
        if not self._deps.config.compression.enabled:
            return None
        return self._preflight

    async def _preflight(self, messages: list[ChatMessage], tokens: int) -> list[ChatMessage] | None:
        if not self.compressor().should_compress(tokens):
            return None
        try:
            return await self._compress(messages, None)
        except CompressionError as exc:
            self._hub.publish(StatusUpdate, kind="info", text=f"nothing compressed: {exc}")
            return None

    async def compress_now(self, topic: str | None) -> str:
        """Compress the history on request (``/compress TOPIC``); the user asked, so a pause
        for thrashing ends."""
        compressor = self.compressor()
        before = len(self._state.history)
        try:
            result = await self._compress(self._state.history, topic)
        except CompressionError as exc:
            return str(exc)  # the answer to the request, said once (not also as a status line)
        finally:
            compressor.reset_thrashing()
        if result is None:
            return "nothing to compress"
        return f"compressed {before} → {len(result)} messages"

    def compressor(self) -> ContextCompressor:
        """The session's compressor, sized for the model in use now."""
        model = self._model
        length = model.context_length
        compressor = self._compressor
        if compressor is None:
            compressor = self._compressor = ContextCompressor(
                self._deps.config.compression, context_length=length, summarize=model.summarize, estimate_tokens=rough_tokens,
                today=self._deps.today,
            )
        elif length != compressor.context_length:
            compressor.update_model(length)
        if self._sized_for != model.current:
            if self._sized_for:
                compressor.reset_thrashing()
            self._sized_for = model.current
        return compressor

    async def _compress(self, messages: list[ChatMessage], topic: str | None) -> list[ChatMessage] | None:
        """Compress ``messages`` into the store and the history; the new history (None: unchanged).

        Raises:
            CompressionError: the history is too short to compress; the message says what it needs.
        """
        compressor = self.compressor()
        hub = self._hub
        hub.publish(StatusUpdate, kind="compressing", text="compressing the conversation")
        result = await compressor.compress(messages, focus=topic)
        if result.warning:
            hub.publish(StatusUpdate, kind="warning", text=result.warning)
        if result.summarised_count == 0:
            return None
        state = self._state
        # An ephemeral session not stored yet is stored before its history is replaced there.
        await ensure_recorded(self._deps, self._session_id, state)
        await self._deps.store.compact(self._session_id, messages_to_dicts(result.messages))
        state.history = list(result.messages)
        state.persisted = len(state.history)
        state.compression = {"summary": result.summary, "count": compressor.statistics().compressions}
        if self._file_reads is not None:
            self._file_reads.forget_reads()
        hub.publish(StatusUpdate, kind="compressing", text=f"compressed {result.tokens_before} → {result.tokens_after} tokens")
        return list(result.messages)
