"""Voice notes heard: a user's recording turned into text through an OpenAI-compatible transcription
endpoint (``POST {base}/audio/transcriptions``), for every chat platform.

Which endpoint is the ``stt`` section's choice (:func:`speech_endpoint`); the desk calls
:meth:`Transcriber.transcribe` on each voice note or audio file it fetched, and when there is no
endpoint, or the call fails, hands the model the saved file with a note instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import attrs
import httpx2
import trio

from config.stt import SttConfig
from providers import openai_sdk

__all__ = ["MAX_AUDIO_BYTES", "SpeechEndpoint", "Transcriber", "TranscriptionFailed", "speech_endpoint"]

log = logging.getLogger("hermes_actors.platform.gateway")

#: The largest recording sent to be transcribed (OpenAI's and Groq's limit).
MAX_AUDIO_BYTES = 25 * 1024 * 1024

_PUBLIC_ROOTS = {"openai": "https://api.openai.com/v1", "groq": "https://api.groq.com/openai/v1"}
#: Where each service's key and API root may come from, in Hermes's order (the environment first).
_KEY_VARIABLES = {"openai": ("VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"), "groq": ("GROQ_API_KEY",)}
_ROOT_VARIABLES = {"openai": "STT_OPENAI_BASE_URL", "groq": "GROQ_BASE_URL"}


class TranscriptionFailed(Exception):
    """A recording was not turned into text; the message says why, without the key."""


@attrs.frozen
class SpeechEndpoint:
    """The transcription service chosen: its name, API root, key and model."""

    name: str
    base_url: str
    api_key: str = attrs.field(repr=False)
    model: str


def speech_endpoint(config: SttConfig, environ: Mapping[str, str]) -> tuple[SpeechEndpoint | None, str]:
    """The endpoint ``config`` chooses with the keys in ``environ``, or None, and a line saying which or why none."""
    if not config.enabled or config.provider == "none":
        return None, "speech-to-text is off (stt.enabled: false or stt.provider: none)"
    if config.provider == "local":
        return None, "stt.provider is local, but no on-machine speech engine is built here; set it to openai or groq"
    names = ("openai", "groq") if config.provider == "auto" else (config.provider,)
    for name in names:
        section = config.openai if name == "openai" else config.groq
        key = next((environ[var] for var in _KEY_VARIABLES[name] if environ.get(var)), None) or section.api_key
        if key:
            root = section.base_url or environ.get(_ROOT_VARIABLES[name]) or _PUBLIC_ROOTS[name]
            return SpeechEndpoint(name, root.rstrip("/"), key, section.model), f"voice notes are transcribed by {name} ({section.model})"
    wanted = " or ".join(var for name in names for var in _KEY_VARIABLES[name])
    return None, f"no speech-to-text key is set ({wanted}); voice notes reach the model as files"


class Transcriber:
    """Turns recordings into text at one endpoint; a new connection per recording (they are rare).

    Args:
        endpoint: where, and with which key and model.
        timeout: the longest one transcription may take, in seconds.
        echo: whether the user is shown what was heard (``stt.echo_transcripts``).
    """

    def __init__(self, endpoint: SpeechEndpoint, timeout: float, *, echo: bool) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.echo = echo
        self.transcribed = self.failed = 0

    async def transcribe(self, path: Path) -> str:
        """The text spoken in the recording at ``path``.

        Raises:
            TranscriptionFailed: the file is too large or empty of speech, or the service refused or did not answer.
        """
        try:
            text = await self._call(path)
        except TranscriptionFailed:
            self.failed += 1
            raise
        self.transcribed += 1
        return text

    async def _call(self, path: Path) -> str:
        data = await trio.to_thread.run_sync(path.read_bytes)
        if len(data) > MAX_AUDIO_BYTES:
            raise TranscriptionFailed(f"the recording is {len(data):,} bytes, over the {MAX_AUDIO_BYTES:,} a transcription takes")
        endpoint = self.endpoint
        timeout = httpx2.Timeout(self.timeout)
        openai = await openai_sdk()  # loaded in a thread on the first voice note, not at every daemon start
        async with httpx2.AsyncClient(timeout=timeout) as http:
            client = openai.AsyncOpenAI(
                api_key=endpoint.api_key, base_url=endpoint.base_url, max_retries=0, timeout=timeout, http_client=http,
            )
            try:
                result = await client.audio.transcriptions.create(model=endpoint.model, file=(path.name, data))
            except openai.APIStatusError as exc:
                raise TranscriptionFailed(f"{endpoint.name} answered HTTP {exc.status_code}") from None
            except openai.APIError as exc:
                raise TranscriptionFailed(f"{endpoint.name} did not answer ({type(exc).__name__})") from None
        text = (result if isinstance(result, str) else str(getattr(result, "text", ""))).strip()
        if not text:
            raise TranscriptionFailed(f"{endpoint.name} heard no speech")
        return text
