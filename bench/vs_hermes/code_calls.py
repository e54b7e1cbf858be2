"""The execute_code rows of the side-by-side benchmark: the calls a script makes, and the rows that time them.

Standard library only: ``fake_model.py`` builds the scripts from :data:`CALLS` and :data:`SCRIPT`, and
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
for _ in range(3):
    call()
start = time.perf_counter()
for _ in range({count}):
    last = call()
print("PERCALL_US", (time.perf_counter() - start) / {count} * 1e6, flush=True)
print("LAST", repr(last)[:300], flush=True)
"""

#: One call of each kind (an expression, its result printed for the last call); ``{path}`` is the path
#: :func:`prepare` made for it.
CALLS = {
    # A tool the sandbox does not offer: refused before dispatch.
    "refused": 'hermes_tools._call("delegate_task", {{"goal": "x"}})',
    # An empty path: dispatched, and fails at once in the tool's own checks.
    "fail": "hermes_tools.write_file('', 'x')",
    # A new window (read) or limit (search) each call: Hermes refuses a read of a region it has read before,
    # unchanged ("BLOCKED: ... this exact region"), and hermes-actors answers it "unchanged"; Hermes blocks
    # the fourth identical search in a row. Either would time a refusal, not a read or a search.
    "read": "hermes_tools.read_file({path!r}, offset=1 + next(calls))",
    "write": "hermes_tools.write_file({path!r} + '/written.txt', 'data')",
    "search": "hermes_tools.search_files('needle', path={path!r}, limit=50 + next(calls))",
}

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
    read.write_text("".join(f"line {number:04d} xxxxx\n" for number in range(64)))  # 64 lines of 16 bytes
    written = work / "written"
    written.mkdir()
    tree = work / "search-tree"
    tree.mkdir()
    for number in range(5):
        (tree / f"file{number}.txt").write_text("hay\n" * 20 + ("needle\n" if number == 2 else ""))
    return {"refused": work, "fail": work, "read": read, "write": written, "search": tree}


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
