"""The scripted provider's ears: ``POST /v1/audio/transcriptions`` as OpenAI's API takes it (a multipart
form with ``file`` and ``model``), where a recording's "speech" is its own bytes read as UTF-8 text.

A demo or a test makes a voice note that says "hello" by writing ``hello`` into it; anything that is not
UTF-8 text is refused with OpenAI's error shape, as an unreadable recording would be.
"""

from __future__ import annotations

from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

__all__ = ["transcribe_form"]


def transcribe_form(content_type: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """The status and JSON body answering one transcription request."""
    if not content_type.lower().startswith("multipart/form-data"):
        return 400, _error("the request must be multipart/form-data with a 'file' part")
    form = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode("latin-1") + body)
    parts = {part.get_param("name", header="content-disposition"): part for part in form.iter_parts()} if isinstance(form, Message) else {}
    recording = parts.get("file")
    if recording is None or parts.get("model") is None:
        return 400, _error("the form needs a 'file' and a 'model'")
    payload = recording.get_payload(decode=True)
    try:
        said = payload.decode("utf-8").strip() if isinstance(payload, bytes) else ""
    except UnicodeDecodeError:
        return 400, _error("the scripted provider hears only recordings whose bytes are UTF-8 text")
    return 200, {"text": said}


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": "file", "code": None}}
