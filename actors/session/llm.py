"""The ``llm`` job: one streaming provider call of a turn, with recovery.

It forwards text and reasoning deltas to the session's subscribers as they
arrive (memory-context blocks scrubbed even when split across chunks) and
turns the recovery loop's status lines into status events. It returns the
provider's :class:`StreamFinished`, or raises the recovery layer's error
(``NeedsCompression``, ``RecoveryExhausted``, ...) for the turn to classify.
Interrupted with its turn (an interrupt, a budget), it closes the HTTP stream at
once and returns what it showed so far, a :class:`StreamProgress`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from actors import Job
from conversation.fencing import StreamingContextScrubber
from actors.session.hub import EventHub
from config.recovery import RetryConfig
from messages.events import ReasoningDelta, StatusUpdate, TextDelta
from providers.recovery.credentials import CredentialPool
from providers.recovery.fallback import FallbackChain
from providers.recovery.policy import ProviderConnector, stream_with_recovery
from providers.recovery.status import StatusKind
from providers.types import ChatRequest, StreamFinished

__all__ = ["LlmCall", "StreamProgress"]

_STATUS_KINDS = {
    StatusKind.retry: "retrying",
    StatusKind.backoff: "retrying",
    StatusKind.rotate_credential: "rotating_key",
    StatusKind.fallback: "fallback",
    StatusKind.compress: "compressing",
}


@attrs.define
class StreamProgress:
    """What a provider call has streamed so far; the call keeps it, and returns it when interrupted
    with its turn (whose partial reply ``text`` then is).

    ``prompt_tokens`` is the request's estimated size: a call cut short reports no usage, so the
    turn counts this and an estimate of ``text`` instead (the provider bills what it streamed).
    """

    text: str = ""
    chunks: int = 0
    prompt_tokens: int = 0


class LlmCall(Job[StreamFinished | StreamProgress]):
    """Runs one provider call and returns its :class:`StreamFinished`, or, interrupted with its
    turn, the :class:`StreamProgress` it had (killed by path alone, it raises ``JobStopped``).

    Raises:
        RecoveryError: the recovery layer gave up or asks for compression.
    """

    kind = "llm"
    # It runs no helper task and no actor: ended twice a turn, a nursery's exit would cost a scheduler pass each.
    starts_tasks = False

    def __init__(
        self,
        request: ChatRequest,
        *,
        chain: FallbackChain,
        connector: ProviderConnector,
        pools: Mapping[str, CredentialPool],
        retry: RetryConfig,
        hub: EventHub,
        approx_tokens: int,
        context_length: Callable[[str], int],
        pace: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.chain = chain
        self.connector = connector
        self.pools = pools
        self.retry = retry
        self.hub = hub
        self.approx_tokens = approx_tokens
        self.context_length = context_length
        self.pace = pace
        self.progress = StreamProgress(prompt_tokens=approx_tokens)
        self._scrubber = StreamingContextScrubber()

    def snapshot_details(self) -> dict[str, Any]:
        return {"model": self.chain.current.label, "chunks": self.progress.chunks, "streamed_chars": len(self.progress.text)}

    async def execute(self) -> StreamFinished:
        self.activity = f"calling {self.chain.current.label}"
        try:
            finished = await stream_with_recovery(
                self.request,
                chain=self.chain,
                connector=self.connector,
                pools=self.pools,
                retry=self.retry,
                on_event=self._on_event,
                on_status=self._on_status,
                approx_tokens=self.approx_tokens,
                context_length=self.context_length,
            )
        except Exception:
            self._flush()
            raise
        self._flush()
        return finished

    async def interrupted(self) -> StreamFinished | StreamProgress:
        """Interrupted with its turn: what the call streamed, which the turn keeps as the partial reply.

        Raises:
            JobStopped: killed by path alone, the call has no value; the turn ends with that error.
        """
        if not self.interrupted_by_parent:
            return await super().interrupted()
        return self.progress

    def _flush(self) -> None:
        """The stream ended: show what the scrubber held back as a possible tag start."""
        tail = self._scrubber.flush()
        if tail:
            self.progress.text += tail
            self.hub.publish(TextDelta, text=tail)

    async def _on_event(self, event: Any) -> None:
        self.progress.chunks += 1
        if isinstance(event, TextDelta):
            shown = self._scrubber.feed(event.text)
            if shown:
                first = not self.progress.text
                self.progress.text += shown
                self.hub.publish(TextDelta, text=shown)
                if first and self.pace is not None:
                    # The answer's first text is out: the rest of it may wait for others' first texts.
                    await self.pace()
        elif isinstance(event, ReasoningDelta):
            self.hub.publish(ReasoningDelta, text=event.text)

    async def _on_status(self, step: StatusKind, text: str) -> None:
        self.activity = text
        if step is StatusKind.give_up:
            return  # the same text ends the turn as its error: published, the client showed it twice
        self.hub.publish(StatusUpdate, kind=_STATUS_KINDS.get(step, "info"), text=text)
