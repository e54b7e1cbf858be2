"""The ``llm`` actor: one streaming provider call of a turn, with recovery.

It forwards text and reasoning deltas to the session's subscribers as they
arrive (memory-context blocks scrubbed even when split across chunks) and
turns the recovery loop's status lines into status events. Cancelling it (an interrupt, a budget) closes the HTTP
stream at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import trio

from actors.base import Actor
from actors.session.fencing import StreamingContextScrubber
from actors.session.hub import EventHub
from messages.events import ReasoningDelta, StatusUpdate, TextDelta
from messages.supervision import ActorState
from providers.recovery.credentials import CredentialPool
from providers.recovery.fallback import FallbackChain
from providers.recovery.policy import ProviderConnector, stream_with_recovery
from providers.recovery.status import StatusKind
from providers.types import ChatRequest, StreamFinished

__all__ = ["LlmCall"]

_STATUS_KINDS = {
    StatusKind.retry: "retrying",
    StatusKind.backoff: "retrying",
    StatusKind.rotate_credential: "rotating_key",
    StatusKind.fallback: "fallback",
    StatusKind.compress: "compressing",
}


class LlmCall(Actor[Any]):
    """Runs one provider call; ``finished`` holds the reply once it stopped
    (or ``error`` the exception that ended it)."""

    kind = "llm"
    mailbox_capacity = 1

    def __init__(
        self,
        request: ChatRequest,
        *,
        chain: FallbackChain,
        connector: ProviderConnector,
        pools: Mapping[str, CredentialPool],
        retry: Any,
        hub: EventHub,
        approx_tokens: int,
        context_length: int | None,
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
        self.finished: StreamFinished | None = None
        self.error: BaseException | None = None
        self.streamed_text = ""
        self.chunks = 0
        self._scrubber = StreamingContextScrubber()

    def snapshot_details(self) -> dict[str, Any]:
        return {"model": self.chain.current.label, "chunks": self.chunks, "streamed_chars": len(self.streamed_text)}

    async def main(self) -> None:
        self.state = ActorState.BUSY
        self.activity = f"calling {self.chain.current.label}"
        try:
            self.finished = await stream_with_recovery(
                self.request,
                chain=self.chain,
                connector=self.connector,
                pools=self.pools,
                retry=self.retry,
                on_event=self._on_event,
                on_status=self._on_status,
                approx_tokens=self.approx_tokens,
                context_length=lambda _model: self.context_length,
            )
        except trio.Cancelled:
            raise
        except Exception as exc:  # handed to the turn, which decides (compress, give up)
            self.error = exc
        tail = self._scrubber.flush()
        if tail:
            self.streamed_text += tail
            self.hub.publish(TextDelta, text=tail)

    async def _on_event(self, event: Any) -> None:
        self.chunks += 1
        if isinstance(event, TextDelta):
            shown = self._scrubber.feed(event.text)
            if shown:
                self.streamed_text += shown
                self.hub.publish(TextDelta, text=shown)
        elif isinstance(event, ReasoningDelta):
            self.hub.publish(ReasoningDelta, text=event.text)

    async def _on_status(self, step: StatusKind, text: str) -> None:
        kind = _STATUS_KINDS.get(step, "warning" if step is StatusKind.give_up else "info")
        self.activity = text
        self.hub.publish(StatusUpdate, kind=kind, text=text)
