"""``search_files``: find lines by regex or files by glob under a directory, as Hermes Agent's tool does.

Content search pages through matching lines (``output_mode='content'``, with ``context`` lines
around each), the files that match (``files_only``) or a count per file (``count``); a file-name
search lists the newest files first. ``offset`` and ``limit`` page through any of them.

Two engines give the same answers: ripgrep when it is installed (``_ripgrep``), otherwise a Python
walk in a worker thread (``_walk``). Both feed one collector (``_collect``), which pages and shapes
the result. The session's sandbox policy applies to both: a root it hides is refused, and the paths
it hides under the root are left out of the walk itself. Found lines are redacted, each judged with
the lines around it (:mod:`tools.redact_lines`): a line of a private key's body is redacted even when
its ``BEGIN`` line is not among the lines shown.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from tools.errors import ToolInputError
from tools.files._guard import read_target
from tools.jail.policy import JailPolicy
from tools.results import ToolResult
from tools.search._collect import OutputMode, SearchResult, Target
from tools.search._ripgrep import find_ripgrep, search_with_ripgrep
from tools.search._walk import DEFAULT_LIMIT, IGNORED_DIRS, search_with_python

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import Handler

__all__ = [
    "IGNORED_DIRS",
    "SEARCH_FILES_SCHEMA",
    "SearchResult",
    "find_ripgrep",
    "make_search_handler",
    "search_with_python",
    "search_with_ripgrep",
]

MAX_LIMIT: Final = 1_000
MAX_CONTEXT: Final = 50
# As for read_file: the third identical search in a row (no other tool in between) is warned about, the fourth refused.
REPEAT_WARN_AT: Final = 3
_TARGETS: Final = ("content", "files")
_OUTPUT_MODES: Final = ("content", "files_only", "count")

SEARCH_FILES_SCHEMA: Final[dict[str, Any]] = {
    "name": "search_files",
    "description": (
        "Search under a directory instead of grep/rg/find/ls in the terminal. target='content' (default): lines "
        "matching the regex `pattern`, optionally only in files matching `file_glob` (e.g. '*.py'); "
        "output_mode='content' gives the lines with their numbers (plus `context` lines around each), "
        "'files_only' the files that match, 'count' the matches per file. target='files': files whose name "
        "matches the glob `pattern` (e.g. '*.md', 'test_*'), newest first. Skips .git, hidden, binary and "
        "dependency directories. Page with offset/limit; a truncated result gives the next offset."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regex (content) or file-name glob (files)."},
            "target": {"type": "string", "enum": list(_TARGETS), "default": "content"},
            "path": {"type": "string", "description": "Directory (or file) to search.", "default": "."},
            "file_glob": {"type": "string", "description": "Only search files whose name matches this glob."},
            "limit": {
                "type": "integer",
                "description": f"Maximum number of results to return (at most {MAX_LIMIT:,}).",
                "default": DEFAULT_LIMIT,
            },
            "offset": {"type": "integer", "description": "Skip this many results (to page).", "default": 0},
            "output_mode": {
                "type": "string",
                "enum": list(_OUTPUT_MODES),
                "description": "For target='content': matching lines, the files that match, or counts per file.",
                "default": "content",
            },
            "context": {
                "type": "integer",
                "description": f"Lines shown before and after each match (content mode; at most {MAX_CONTEXT}).",
                "default": 0,
            },
        },
        "required": ["pattern"],
    },
}


def _clamped(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"'{name}' must be an integer, got {value!r}.")
    return max(low, min(value, high))


def make_search_handler(rg_path: str | None = None, *, use_ripgrep: bool = True) -> Handler:
    """Build the ``search_files`` handler.

    Args:
        rg_path: the ripgrep binary; :func:`find_ripgrep` when None.
        use_ripgrep: False forces the Python walk.
    """
    rg = (rg_path or find_ripgrep()) if use_ripgrep else None

    async def search_files_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Tool handler for ``search_files``: a root the policy hides is refused, hidden paths under it skipped.

        Raises:
            ToolInputError: a missing or refused root, or a pattern the engine rejects.
        """
        shown = args.get("path") or "."
        target: Target = args.get("target", "content")
        output_mode: OutputMode = args.get("output_mode", "content")
        limit = _clamped(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        paging: dict[str, Any] = {
            "offset": _clamped(args, "offset", 0, 0, 10**9),
            "output_mode": output_mode,
            "context": _clamped(args, "context", 0, 0, MAX_CONTEXT),
        }
        pattern, file_glob = args["pattern"], args.get("file_glob")
        if not pattern:
            raise ToolInputError("'pattern' is empty: give a regex (target='content') or a glob (target='files').")
        root = Path((await trio.to_thread.run_sync(read_target, ctx, shown)).host)
        in_a_row = ctx.file_reads.note_search((str(root), pattern, target, file_glob, limit, *paging.values()))
        if in_a_row > REPEAT_WARN_AT:
            raise ToolInputError(
                f"Refused: this is the same search {in_a_row} times in a row, with nothing done in between. "
                "You already have its results; act on them, or search for something else."
            )
        if rg is not None:
            result = await search_with_ripgrep(rg, root, pattern, target, file_glob, limit, shown, ctx.jail, **paging)
        else:
            result = await _search_in_thread(root, pattern, target, file_glob, limit, shown, ctx.jail.policy, paging)
        answer = result.tool_result()
        if in_a_row == REPEAT_WARN_AT:
            answer = ToolResult({**answer.payload, "_warning": (
                f"You have run this same search {in_a_row} times in a row. Use its results; one more identical "
                "search will be refused."
            )})
        return answer

    return search_files_handler


async def _search_in_thread(
    root: Path, pattern: str, target: Target, file_glob: str | None, limit: int, shown: str, policy: JailPolicy,
    paging: dict[str, Any],
) -> SearchResult:
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(
            lambda: search_with_python(root, pattern, target, file_glob, limit, shown, stop, policy, **paging),
            abandon_on_cancel=True,
        )
    finally:
        # On cancellation the thread is abandoned; tell it to stop walking.
        stop.set()
