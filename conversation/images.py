"""Images a user sent, as image content of their message for a model that can see.

The files were fetched by a messaging platform into the session's workspace; each is read, checked to be
an image by its first bytes (not its name) and sent as a ``data:`` URL, in the Chat Completions shape
that the Anthropic and Responses adapters convert. Blocking: run in a thread.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence

from messages.chat import Content, ImagePart, TextPart

__all__ = ["MAX_IMAGES", "MAX_IMAGE_BYTES", "image_content", "sees_images"]

#: The largest image sent as content (the providers refuse larger ones; Anthropic's limit is 5 MB).
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: Images per message.
MAX_IMAGES = 8
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
#: Model families that take images, for ``model.vision: auto`` (matched in the model's name).
_SEEING = re.compile(r"gpt-4o|gpt-4\.1|gpt-5|o3|o4|claude|gemini|pixtral|llava|-vl|vision|grok-4", re.IGNORECASE)


def sees_images(setting: str, model: str) -> bool:
    """Whether ``model`` gets images as content under ``model.vision`` = ``setting``."""
    return setting == "on" or (setting == "auto" and bool(_SEEING.search(model)))


def _media_type(head: bytes) -> str | None:
    for signature, media_type in _SIGNATURES:
        if head.startswith(signature):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_content(text: str, paths: Sequence[str]) -> Content:
    """The message's content: ``text`` alone when no path is a readable image within the limits, else
    the text part followed by an image part per image."""
    parts: list[ImagePart] = []
    for path in list(paths)[:MAX_IMAGES]:
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_IMAGE_BYTES + 1)
        except OSError:
            continue
        media_type = _media_type(data[:16])
        if media_type is None or len(data) > MAX_IMAGE_BYTES:
            continue
        url = f"data:{media_type};base64,{base64.b64encode(data).decode()}"
        parts.append(ImagePart(url))
    return (TextPart(text), *parts) if parts else text
