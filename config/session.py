"""Configuration sections read by the session actor and its libraries.

Each class is one section of ``config.yaml`` (the yaml key is in its docstring); defaults come from the
seeds. Validators make a bad value an error at load time rather than a surprise mid-turn.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, on_off, positive_int, positive_number

_ratio = [v.instance_of(float), v.gt(0.0), v.le(1.0)]
#: What a message does while a turn runs (``display.busy_input_mode``, and each platform's own).
BUSY_MODES = ("interrupt", "queue", "steer")


@attrs.frozen
class AgentConfig:
    """Section ``agent``: the iteration budget and optional whole-turn budgets.

    ``turn_time_budget_seconds`` and ``turn_token_budget`` are deadlines on the turn scope; ``None`` means no limit.
    ``api_max_retries`` (Hermes's name and default) is how often a failed provider call is retried before
    the fallback chain; the loader hands it to ``retry`` (``RetryConfig.max_retries``).
    """

    max_turns: int = attrs.field(default=90, validator=positive_int)
    api_max_retries: int = attrs.field(default=3, validator=integer(ge=0, le=20))
    turn_time_budget_seconds: float | None = attrs.field(default=None, validator=v.optional(positive_number))
    turn_token_budget: int | None = attrs.field(default=None, validator=v.optional(positive_int))
    # How long a clarify question asked on a chat platform (Telegram, Discord, the API) waits for the user,
    # as Hermes's gateway does (an hour: people step away); then the model is told to decide itself.
    clarify_timeout: float = attrs.field(default=3600.0, validator=positive_number)


@attrs.frozen
class ClarifyConfig:
    """Section ``clarify``: a question asked of an attached CLI client, as Hermes's CLI asks it.

    ``timeout`` (120 s, Hermes's) is how long the CLI's question waits before the model is told to decide
    itself; chat platforms wait ``agent.clarify_timeout`` instead.
    """

    timeout: float = attrs.field(default=120.0, validator=positive_number)


@attrs.frozen
class CompressionConfig:
    """Section ``compression``: when and how the context compressor runs (docs/DECISIONS.md#d-compression)."""

    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    # Fraction of the model's context window at which compression triggers.
    threshold: float = attrs.field(default=0.5, validator=_ratio)
    # Non-system messages after the system prompt that are never summarised.
    protect_first_n: int = attrs.field(default=3, validator=integer(ge=0))
    # Tail token budget as a fraction of the threshold (Hermes's name; the spec's summary_target_ratio).
    target_ratio: float = attrs.field(default=0.2, validator=_ratio)
    # Fewest recent messages always kept in the tail, whatever their size (Hermes's name; the spec's
    # hard minimum of 3 stays the default, where Hermes has 20).
    protect_last_n: int = attrs.field(default=3, validator=integer(ge=1))
    # Summary budget as a fraction of the tokens being summarised, floored and capped below.
    summary_ratio: float = attrs.field(default=0.2, validator=_ratio)
    summary_min_tokens: int = attrs.field(default=2000, validator=positive_int)
    summary_max_tokens: int = attrs.field(default=12_000, validator=positive_int)
    # A compression saving less than this fraction counts as ineffective.
    min_savings: float = attrs.field(default=0.10, validator=_ratio)
    # Consecutive ineffective compressions after which automatic compression stops.
    max_ineffective: int = attrs.field(default=2, validator=positive_int)
    # Floor for the trigger, so a tiny context window still leaves room to work.
    minimum_threshold_tokens: int = attrs.field(default=4000, validator=positive_int)

    @summary_max_tokens.validator
    def _max_not_below_min(self, attribute: attrs.Attribute[int], value: int) -> None:
        if value < self.summary_min_tokens:
            raise ValueError(f"summary_max_tokens ({value}) must be >= summary_min_tokens ({self.summary_min_tokens})")


@attrs.frozen
class GuardrailWarnAfter:
    """Section ``tool_loop_guardrails.warn_after``: counts at which a loop is warned about."""

    exact_failure: int = attrs.field(default=2, validator=positive_int)
    same_tool_failure: int = attrs.field(default=3, validator=positive_int)
    idempotent_no_progress: int = attrs.field(default=2, validator=positive_int)


@attrs.frozen
class GuardrailHardStopAfter:
    """Section ``tool_loop_guardrails.hard_stop_after``: counts at which a loop ends the turn (when hard stops are on)."""

    exact_failure: int = attrs.field(default=5, validator=positive_int)
    same_tool_failure: int = attrs.field(default=8, validator=positive_int)
    idempotent_no_progress: int = attrs.field(default=5, validator=positive_int)


@attrs.frozen
class GuardrailsConfig:
    """Section ``tool_loop_guardrails``: tool-loop detection in Hermes Agent's form
    (docs/DECISIONS.md#d-tool-loop-guardrails).

    ``warnings_enabled`` turns the warnings appended to results on or off. Hard stops end the turn:
    they are off in attended sessions unless ``hard_stop_enabled``, and on in unattended ones (cron)
    unless ``non_interactive_hard_stop_enabled`` is false.
    """

    warnings_enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    hard_stop_enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    non_interactive_hard_stop_enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    warn_after: GuardrailWarnAfter = attrs.Factory(GuardrailWarnAfter)
    hard_stop_after: GuardrailHardStopAfter = attrs.Factory(GuardrailHardStopAfter)


@attrs.frozen
class DisplayConfig:
    """Section ``display``: what a user message does while a turn is running, and what clients are told."""

    busy_input_mode: str = attrs.field(default="interrupt", validator=v.in_(BUSY_MODES))
    # When true, an interrupt arriving while subagents or a compression run is queued instead.
    interrupt_demoted_while_busy: bool = attrs.field(default=False, validator=v.instance_of(bool))
    # The background review's line to attached clients (Hermes's key and values): off, on (what was
    # changed), verbose (with the entry's text and the reason). YAML's true/false read as on/off.
    memory_notifications: str = attrs.field(
        default="on", converter=on_off, validator=v.in_(("off", "on", "verbose")),
    )
