"""What ``web_extract`` hands back of a long page: a head and tail window, the whole text saved to a file.

As in Hermes Agent, a page within its character budget comes back whole. A longer one comes back as
its beginning and its end, with a note between them naming the file that holds the full text and the
``read_file`` call that pages through the part left out. The files live in the session's private
temp directory (``/tmp/web_extract`` inside the jail), which goes with the session; at most
:data:`MAX_SAVED_PAGES` are kept, the oldest removed first.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Final

from tools.jail.policy import JailPolicy

__all__ = ["MAX_SAVED_PAGES", "TAIL_SHARE", "window_page"]

MAX_SAVED_PAGES: Final = 50
# The tail's share of the budget: the end of a page (conclusions, references) is often what is wanted.
TAIL_SHARE: Final = 0.25
_DIRECTORY: Final = "web_extract"


def window_page(policy: JailPolicy, url: str, content: str, budget: int) -> tuple[str, str | None]:
    """``content`` cut to ``budget`` characters around a note, and the path (as the model sees it) of the
    saved full text; ``(content, None)`` when it fits. Blocking: call it in a worker thread.

    Raises:
        OSError: the full text could not be saved (the caller reports the page as cut without a file).
    """
    if len(content) <= budget:
        return content, None
    tail_chars = int(budget * TAIL_SHARE)
    head, tail = content[: budget - tail_chars], content[len(content) - tail_chars :]
    saved = _save(Path(policy.tmp_dir) / _DIRECTORY, url, content)
    shown = policy.jail_path(str(saved))
    first_line = head.count("\n") + 1
    omitted_lines = content.count("\n") - head.count("\n") - tail.count("\n")
    note = (
        f"\n\n[... {len(content) - len(head) - len(tail):,} characters (about {max(omitted_lines, 1):,} lines) "
        f"left out here. The full page ({len(content):,} characters) is saved at {shown}; read the missing "
        f"part with read_file(path={shown!r}, offset={first_line}) ...]\n\n"
    )
    return head + note + tail, shown


def _save(directory: Path, url: str, content: str) -> Path:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:16] + ".md"
    path = directory / name
    temporary = path.with_suffix(".tmp")
    temporary.write_text(content, encoding="utf-8")
    os.replace(temporary, path)
    _prune(directory)
    return path


def _prune(directory: Path) -> None:
    pages = sorted(directory.glob("*.md"), key=lambda page: page.stat().st_mtime_ns)
    for stale in pages[: max(0, len(pages) - MAX_SAVED_PAGES)]:
        stale.unlink(missing_ok=True)
