"""A user's file fetched from its platform into the session's workspace, size-capped."""

from __future__ import annotations

from pathlib import Path

import httpx2
import trio

from actors.platform.outbound import DeliveryFailed

__all__ = ["DownloadFailed", "download_to"]


class DownloadFailed(DeliveryFailed):
    """A file was not fetched (the platform refused, or it is over the cap); nothing is kept of it."""


async def download_to(client: httpx2.AsyncClient, url: str, destination: Path, limit: int) -> int:
    """Stream ``url`` into ``destination``, stopping past ``limit`` bytes; its size.

    The URL may hold a token (Telegram's file paths do): errors name the failure's kind only.

    Raises:
        DownloadFailed: an answer other than 200, no answer, or more than ``limit`` bytes.
    """
    size = 0
    try:
        async with client.stream("GET", url, timeout=120.0) as response:
            if response.status_code != 200:
                raise DownloadFailed(f"download: HTTP {response.status_code}")
            with await trio.to_thread.run_sync(destination.open, "wb") as out:
                async for piece in response.aiter_bytes():
                    size += len(piece)
                    if size > limit:
                        raise DownloadFailed(f"download: the file is over {limit:,} bytes")
                    await trio.to_thread.run_sync(out.write, piece)
    except httpx2.HTTPError as exc:
        await trio.to_thread.run_sync(lambda: destination.unlink(missing_ok=True))
        raise DownloadFailed(f"download: no answer ({type(exc).__name__})") from None
    except BaseException:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(lambda: destination.unlink(missing_ok=True))
        raise
    return size
