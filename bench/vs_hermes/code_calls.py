"""The execute_code rows of the side-by-side benchmark: the calls a script makes, and the rows that time them.

Standard library only: ``fake_model.py`` builds the scripts (:func:`script`) the drivers ask for (:func:`marker`), and
``run.py`` takes its execute_code rows from :func:`code_rows`. Each row runs one ``execute_code`` call whose
script makes a few warm-up calls and then times ``--calls`` calls of one kind, on both programs, in the
configuration users get (not pinned to a core); ``run.py --pin`` adds a pinned column for every row.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The script: its first line's wall-clock time, then the mean time of ``count`` calls (after three warm-ups).
SCRIPT = """\
import itertools
import time
print("FIRST", repr(time.time()), flush=True)
import hermes_tools
calls = itertools.count()
def call():
    return {call}
for _ in range({warm_ups}):
    call()
start = time.perf_counter()
for _ in range({count}):
    last = call()
print("PERCALL_US", (time.perf_counter() - start) / {count} * 1e6, flush=True)
print("LAST", repr(last)[:300], flush=True)
"""

#: Calls a script makes before it starts timing.
_WARM_UPS = 3

#: One call of each kind (an expression, its result printed for the last call); ``{path}`` is the path
#: :func:`prepare` made for it, ``{start}`` the number of calls of this kind the session made before the script
#: (:func:`marker`).
CALLS = {
    # A tool the sandbox does not offer: refused before dispatch.
    "refused": 'hermes_tools._call("delegate_task", {{"goal": "x"}})',
    # An empty path: dispatched, and fails at once in the tool's own checks.
    "fail": "hermes_tools.write_file('', 'x')",
    # A window (read) or limit (search) no earlier call of the session asked for, the script before this one's
    # included: Hermes refuses a read of a region it has read before, unchanged ("BLOCKED: ... this exact
    # region"), and hermes-actors answers it "unchanged"; Hermes blocks the fourth identical search in a row.
    # Either would time a refusal, not a read or a search. A read window is 64 lines of 16 bytes (1 KB); after
    # every offset of the file, the next windows are a line longer.
    "read": "hermes_tools.read_file({path!r}, offset=1 + (n := {start} + next(calls)) % {windows}, limit=64 + n // {windows})",
    "write": "hermes_tools.write_file({path!r} + '/written.txt', 'data')",
    "search": "hermes_tools.search_files('needle', path={path!r}, limit=50 + {start} + next(calls))",
}
#: Lines of the file the read row reads: windows of 64 lines start at its lines 1 to 449.
_READ_LINES = 512

#: Calls per script for each kind: a dispatched kind stays within the 50 calls both programs allow a script
#: (3 warm-ups + 40); refused calls do not count towards it, and more of them make a steadier mean.
_COUNTS = {"refused": 500, "fail": 40, "read": 40, "write": 40, "search": 40}
_NAMES = {
    "refused": "a call refused before dispatch",
    "fail": "a dispatched call that fails at once (write_file(''))",
    "read": "a successful read_file of up to 1 KB (a new window each call)",
    "write": "a successful write_file of 4 bytes",
    "search": "a successful search_files in 5 small files (a new limit each call)",
}

Row = tuple[str, str, Callable[[dict[str, Any]], float], bool, list[str]]


def prepare(work: Path) -> dict[str, Path]:
    """The files the calls use, made under ``work``: the path each kind is given."""
    read = work / "one-kb.txt"
    read.write_text("".join(f"line {number:04d} xxxxx\n" for number in range(_READ_LINES)))  # lines of 16 bytes
    written = work / "written"
    written.mkdir()
    tree = work / "search-tree"
    tree.mkdir()
    for number in range(5):
        (tree / f"file{number}.txt").write_text("hay\n" * 20 + ("needle\n" if number == 2 else ""))
    return {"refused": work, "fail": work, "read": read, "write": written, "search": tree}


def script(kind: str, path: str, count: int, start: int = 0) -> str:
    """The script timing ``count`` calls of ``kind`` on ``path``, the session having made ``start`` of them before."""
    call = CALLS[kind].format(path=path, start=start, windows=_READ_LINES - 64 + 1)
    return SCRIPT.format(call=call, count=count, warm_ups=_WARM_UPS)


def marker(kind: str, count: int, path: str, script_number: int) -> str:
    """The fake model's marker asking for the ``script_number``-th script (from 0) of a session's ``count`` calls
    of ``kind`` (with its warm-ups, each script's calls follow the calls of those before it)."""
    return f"[[bench code={count} kind={kind} path={path} start={script_number * (count + _WARM_UPS)}]]"


def per_call_us(run: dict[str, Any]) -> float:
    """The median over a run's scripts of the mean microseconds per call."""
    return statistics.median(x["per_call_us"] for x in run["code_results"])


def first_line_ms(run: dict[str, Any]) -> float:
    """The median over a run's scripts of the milliseconds from the tool call to the script's first line."""
    return statistics.median(x["first_line_ms"] for x in run["code_results"])


def code_rows(paths: dict[str, Path]) -> list[Row]:
    """(name, workload, figure from a run, higher is better, driver arguments) for every execute_code row."""
    table: list[Row] = []
    for kind, name in _NAMES.items():
        args = ["--kind", kind, "--calls", str(_COUNTS[kind]), "--rounds", "2", "--path", str(paths[kind])]
        table.append((f"execute_code: {name} (us per call)", "code", per_call_us, False, args))
    args = ["--kind", "refused", "--calls", "10", "--rounds", "3", "--path", str(paths["refused"])]
    table.append(("execute_code: tool call -> script's first line (ms)", "code", first_line_ms, False, args))
    return table
