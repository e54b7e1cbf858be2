"""Posting request bodies we built ourselves through the SDKs' low-level ``post``.

Our request bodies are plain JSON already (converted at the boundary), so the
SDKs' per-call ``async_transform`` of them, which walks every message of the
history against TypedDicts, is pure cost: it grew to most of a turn's CPU on
long conversations. ``client.post`` is the SDKs' documented way to call an
endpoint with a raw body; it keeps everything else (auth, headers, errors,
the SDK's own stream classes).

The body is encoded here, once, and handed over as ``content``: given a
``body``, the SDKs copy it (Anthropic's walks the whole tree) and encode it
again, and the recovery layer used to encode it a third time to check it for
lone surrogates. An encoding failure is that check: :class:`UnencodableRequest`
tells the recovery layer to repair the history and try again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from messages.raw_json import encode_spliced

from .errors import UnencodableRequest

__all__ = ["encode_body", "post_stream"]

# The SDKs' own settings (compact, UTF-8, no NaN); no circular check: our bodies are trees.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False).encode


def encode_body(body: dict[str, Any]) -> bytes:
    """``body`` as the UTF-8 JSON the provider receives; its top-level
    :class:`~messages.raw_json.RawJson` values (tool definitions encoded once) are spliced in.

    Raises:
        UnencodableRequest: a lone surrogate, a ``bytes`` value or a NaN is in it.
    """
    try:
        return encode_spliced(body, _ENCODE).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError) as exc:
        raise UnencodableRequest(f"the request cannot be sent as JSON: {exc}") from exc


async def post_stream(
    client: Any, path: str, body: dict[str, Any], *, cast_to: type, stream_cls: type, headers: Mapping[str, Any] | None = None
) -> Any:
    """POST ``body`` to ``path`` and return the SDK's async stream of events.

    Raises:
        UnencodableRequest: ``body`` cannot be encoded (before anything is sent).
    """
    options: dict[str, Any] = {"headers": dict(headers)} if headers else {}
    return await client.post(
        path, content=encode_body(body), cast_to=cast_to, stream=True, stream_cls=stream_cls, options=options
    )
