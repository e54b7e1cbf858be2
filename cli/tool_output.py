"""A tool's result as a person reads it: its output lines and, for a command, the exit code.

Tool results are text, often a JSON object (``{"output": ..., "exit_code": ...}``
for a command). Events carry only a one-line preview, cut at a fixed length,
so the JSON may be unfinished; the full result is in the store (``/show N``).
"""

from __future__ import annotations

import json
import re
import signal

__all__ = ["ReadableResult", "read_result"]

_OUTPUT = re.compile(r'"(?:output|stdout|content|result)":\s*"((?:[^"\\]|\\.)*)')
_CUT = "…"
_EXIT = re.compile(r'"(?:exit_code|returncode)":\s*(-?\d+)')
# A shell reports a child that a signal ended as 128 + the signal's number; a process's own status is
# minus the number. Either way the person reads which signal, not the arithmetic.
_SHELL_SIGNAL_BASE = 128


class ReadableResult:
    """The readable parts of a tool result's text, as the terminal shows them.

    Args:
        lines: the output, line by line.
        exit_code: a command's exit code (None when the tool has none).
        cut: the text was a preview cut short (the store has the rest).
    """

    def __init__(self, lines: list[str], exit_code: int | None, cut: bool = False) -> None:
        self.lines = lines
        self.exit_code = exit_code
        self.cut = cut

    @property
    def failed(self) -> bool:
        """Whether the command ended badly: a nonzero exit code, or a signal."""
        return self.exit_code not in (None, 0)

    def ending(self) -> str:
        """How the command ended, as a tool line says it: ``exit 2``, ``killed by SIGTERM``, or ``""`` (no command)."""
        code = self.exit_code
        if code is None:
            return ""
        number = -code if code < 0 else code - _SHELL_SIGNAL_BASE if _SHELL_SIGNAL_BASE < code <= _SHELL_SIGNAL_BASE + 64 else 0
        if number <= 0:
            return f"exit {code}"
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"


def read_result(text: str) -> ReadableResult:
    """The output lines and exit code of a result (a whole one, or a preview cut anywhere)."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        output = next((data[key] for key in ("output", "stdout", "content", "result") if isinstance(data.get(key), str)), None)
        code = data.get("exit_code", data.get("returncode"))
        body = output if output is not None else json.dumps(data, ensure_ascii=False, indent=1)
        if data.get("error"):
            body = f"{body}\nerror: {data['error']}".strip()
        return ReadableResult(body.strip("\n").splitlines(), code if isinstance(code, int) else None)
    match = _OUTPUT.search(text)
    exit_match = _EXIT.search(text)
    exit_code = int(exit_match.group(1)) if exit_match else None
    cut = text.endswith(_CUT)  # how a preview is cut
    if match is None:
        return ReadableResult(text.strip("\n").splitlines(), exit_code, cut)
    try:
        output = json.loads(f'"{match.group(1).rstrip(chr(92))}"')
    except ValueError:
        output = match.group(1)
    return ReadableResult(output.strip("\n").splitlines(), exit_code, cut)
