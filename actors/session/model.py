"""A session's provider side: its fallback chain and the limits of the model in use.

The chain starts at the session's own target and moves to the
``fallback_providers`` as the recovery layer falls back; everything sized by
the model (the compressor's budgets, the overflow heuristics) asks for the
model in use now, not the one the session started with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from actors.session.options import SessionDeps, SessionOptions
from config.providers import AuxiliaryTaskConfig
from messages.chat import AssistantMessage, ChatMessage, HumanMessage, content_text, content_to_dict
from providers.metadata import bare_model_name, builtin_limits, parse_overflow_message
from providers.recovery.fallback import FallbackChain, ProviderTarget
from providers.recovery.policy import stream_with_recovery
from providers.types import ChatRequest

__all__ = ["SessionModel"]


class SessionModel:
    """The session's provider chain and what it knows of each model's limits.

    Args:
        deps: the daemon's shared dependencies (config, connector, model metadata).
        options: the session's settings (its own model, provider, base URL, API mode).
    """

    # One per session, and most sessions of a busy daemon sit idle: kept small.
    __slots__ = ("_chain", "_deps", "_learned", "_options", "primary")

    def __init__(self, deps: SessionDeps, options: SessionOptions) -> None:
        self._deps = deps
        self._options = options
        self.primary = options.model_name(deps.config)
        self._chain: FallbackChain | None = None
        # Context lengths learned from overflow errors, where no model metadata keeps them.
        self._learned: dict[str, int] = {}

    @property
    def chain(self) -> FallbackChain:
        """The session's own target, then ``fallback_providers`` (built on first use)."""
        if self._chain is None:
            self._chain = self._build_chain()
        return self._chain

    def _build_chain(self) -> FallbackChain:
        config = self._deps.config
        options = self._options
        target = ProviderTarget.resolve(
            options.provider_name(config, self.primary),
            self.primary,
            options.base_url or config.model.base_url,
            options.api_mode or config.model.api_mode,
        )
        return FallbackChain.from_config(target, config.fallback_providers)

    @property
    def current(self) -> str:
        """The model requests go to now."""
        return self.chain.current.model

    @property
    def context_length(self) -> int:
        """The context window of the model in use now."""
        return self.context_length_of(self.current)

    def context_length_of(self, model: str) -> int:
        """The context window of ``model``: as an overflow error stated it, else as known."""
        learned = self._learned.get(bare_model_name(model))
        if learned is not None:
            return learned
        metadata = self._deps.metadata
        if metadata is not None:
            return metadata.limits(model).context_length
        configured = self._deps.config.model.context_length
        if configured and bare_model_name(model) == bare_model_name(self.primary):
            return configured
        return builtin_limits(model).context_length

    @property
    def max_output_tokens(self) -> int | None:
        """An explicit output cap from config, if any (Anthropic adapters apply their own)."""
        return self._deps.config.model.max_output_tokens

    async def learn_overflow(self, message: str) -> None:
        """A context-overflow error stated the model's real limits: remember them for the model
        in use (on disk too, through the model metadata, where there is one)."""
        metadata = self._deps.metadata
        if metadata is not None:
            info = await metadata.record_overflow(self.current, message)
        else:
            info = parse_overflow_message(message)
        if info.context_length is not None:
            self._learned[bare_model_name(self.current)] = info.context_length

    def auxiliary_chain(self, task: AuxiliaryTaskConfig | None = None) -> FallbackChain:
        """Where a side task goes: ``task``'s own model when it names one, else the auxiliary model when
        configured, else the model in use (a provider or base URL left unset is the next one's)."""
        aux = self._deps.config.auxiliary
        current = self.chain.current
        if task is not None and task.model:
            provider = task.provider or aux.provider or current.provider
            return FallbackChain(ProviderTarget.resolve(provider, task.model, task.base_url or aux.base_url or current.base_url))
        if not aux.model:
            return self.chain
        return FallbackChain(ProviderTarget.resolve(aux.provider or current.provider, aux.model,
                                                    aux.base_url or current.base_url))

    async def ask_auxiliary(
        self, messages: Sequence[ChatMessage], tools: list[dict[str, Any]], task: AuxiliaryTaskConfig | None = None
    ) -> AssistantMessage:
        """One reply to ``messages``, offered ``tools``, from where :meth:`auxiliary_chain` says.

        Raises:
            ProviderError: the provider failed after recovery.
        """
        deps = self._deps
        chain = self.auxiliary_chain(task)
        request = ChatRequest(messages=list(messages), tools=tools, model=chain.current.model)
        finished = await stream_with_recovery(request, chain=chain, connector=deps.connector, pools=deps.pools,
                                              retry=deps.config.retry)
        return finished.message

    async def summarize(self, messages: list[ChatMessage], instructions: str) -> str:
        """A summary of ``messages`` from the auxiliary model when configured, else the model in use."""
        transcript = "\n".join(f"{m.role}: {_text_of(m)}" for m in messages)
        reply = await self.ask_auxiliary([HumanMessage(f"{instructions}\n\n---\n{transcript}")], [])
        return content_text(reply.content)


def _text_of(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return json.dumps(None if content is None else content_to_dict(content), ensure_ascii=False, default=str)
