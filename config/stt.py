"""Configuration of speech-to-text (yaml section ``stt``, Hermes's keys): how users' voice notes become text."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import positive_number

__all__ = ["STT_PROVIDERS", "SttConfig", "SttEndpointConfig"]

#: ``auto`` picks OpenAI, then Groq, by the keys set; ``local`` (Hermes's on-machine Whisper) has no engine
#: here, so it transcribes nothing and says why; ``none`` turns transcription off as ``enabled: false`` does.
STT_PROVIDERS = ("auto", "openai", "groq", "local", "none")


@attrs.frozen
class SttEndpointConfig:
    """One OpenAI-compatible transcription service (``stt.openai``, ``stt.groq``).

    Attributes:
        model: the transcription model it is asked for.
        base_url: the service's API root (None: its public one, or the variable Hermes reads).
        api_key: the key, when not in the environment (the environment's variable wins, as in Hermes).
    """

    model: str = attrs.field(validator=v.and_(v.instance_of(str), v.min_len(1)))
    base_url: str | None = attrs.field(default=None, validator=v.optional(v.instance_of(str)))
    api_key: str | None = attrs.field(default=None, validator=v.optional(v.instance_of(str)), repr=False)


@attrs.frozen
class SttConfig:
    """Section ``stt``: voice notes sent to a chat bot, transcribed before the model sees them.

    Attributes:
        enabled: transcribe at all; off, a voice note reaches the model as a saved file with a note.
        provider: one of :data:`STT_PROVIDERS`.
        echo_transcripts: also show the user what was heard (``🎙️ "..."``) before the answer.
        timeout_seconds: the longest one transcription may take.
        openai: OpenAI's transcription endpoint (``VOICE_TOOLS_OPENAI_KEY`` or ``OPENAI_API_KEY``,
            ``STT_OPENAI_BASE_URL``).
        groq: Groq's (``GROQ_API_KEY``, ``GROQ_BASE_URL``).
    """

    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    provider: str = attrs.field(default="auto", validator=v.in_(STT_PROVIDERS))
    echo_transcripts: bool = attrs.field(default=True, validator=v.instance_of(bool))
    timeout_seconds: float = attrs.field(default=60.0, validator=positive_number)
    openai: SttEndpointConfig = attrs.Factory(lambda: SttEndpointConfig("whisper-1"))
    groq: SttEndpointConfig = attrs.Factory(lambda: SttEndpointConfig("whisper-large-v3-turbo"))
