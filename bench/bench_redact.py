"""Benchmark of secret redaction: µs per 100 KB of tool output, the project's table against detect-secrets.

Four corpora of 100 KB each: clean prose, source code (this repository's own),
log output with a few secrets, and dense secrets (every line one).  For each:
``redact_secrets`` on the text, ``redact_tool_result`` on the text as a tool's
JSON result (what dispatch runs), and detect-secrets 1.5 (every plugin, line by
line, then the secrets it found replaced) when it is installed, with how many
of the corpus's secrets each one missed.

Run: .venv/bin/python bench/bench_redact.py   (pip install detect-secrets==1.5.0 for the comparison)
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake secrets live with the tests

from tests.tools.secret_samples import KINDS, Sample, make_sample  # noqa: E402
from tools.redact import REDACTED, redact_secrets, redact_tool_result  # noqa: E402

SIZE = 100_000
WORDS = (
    "the session keeps its history in the store and every tool call passes through one dispatcher which "
    "validates arguments runs the handler and caps what comes back so that the model reads a bounded result "
    "while the operator watches progress lines scroll past in the attached client"
).split()


def prose(rng: random.Random) -> tuple[str, list[Sample]]:
    """Sentences of ordinary words, no secret."""
    lines = []
    while sum(map(len, lines)) < SIZE:
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 20))).capitalize() + ".")
    return "\n".join(lines)[:SIZE], []


def code(rng: random.Random) -> tuple[str, list[Sample]]:
    """The project's own Python source (keys, tokens and passwords as names, never as values)."""
    sources = sorted((ROOT / "tools").rglob("*.py")) + sorted((ROOT / "actors").rglob("*.py"))
    return "".join(path.read_text() for path in sources)[:SIZE], []


def log(rng: random.Random) -> tuple[str, list[Sample]]:
    """Build-log lines with one secret in about every 200 lines."""
    lines: list[str] = []
    samples: list[Sample] = []
    while sum(map(len, lines)) < SIZE:
        if len(lines) % 200 == 199:
            sample = make_sample(rng.choice(KINDS), rng)
            samples.append(sample)
            lines.append(sample.line)
        else:
            lines.append(f"2026-11-23T14:{rng.randrange(60):02}:00Z INFO step {len(lines)}: compiled module_{rng.randrange(999)}.o in 0.{rng.randrange(99)}s")
    return "\n".join(lines), samples


def dense(rng: random.Random) -> tuple[str, list[Sample]]:
    """A secret on every line."""
    samples: list[Sample] = []
    while sum(len(s.line) + 1 for s in samples) < SIZE:
        samples.append(make_sample(rng.choice(KINDS), rng))
    return "\n".join(s.line for s in samples), samples


def detect_secrets_redactor() -> Callable[[str], str] | None:
    """detect-secrets used as a redactor: scan each line with every plugin, replace what it found."""
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def redact(text: str) -> str:
        with default_settings():
            lines = []
            for line in text.split("\n"):
                for found in scan_line(line):
                    if found.secret_value:
                        line = line.replace(found.secret_value, REDACTED)
                lines.append(line)
        return "\n".join(lines)

    return redact


def per_100kb(fn: Callable[[str], str], text: str, budget: float = 1.5) -> float:
    """Median µs per 100 KB over repeated runs within ``budget`` seconds (at least 5)."""
    samples: list[float] = []
    deadline = time.perf_counter() + budget
    while len(samples) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn(text)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6 * SIZE / len(text)


def missed(fn: Callable[[str], str], text: str, samples: list[Sample]) -> int:
    redacted = fn(text)
    return sum(1 for sample in samples if sample.secret in redacted)


def main() -> None:
    rng = random.Random(2026)
    library = detect_secrets_redactor()
    print(f"{'corpus':<8} {'secrets':>7} {'table µs':>10} {'as result µs':>13} {'missed':>7}"
          f" {'detect-secrets µs':>18} {'missed':>7}")
    for build in (prose, code, log, dense):
        text, samples = build(rng)
        as_result = json.dumps({"output": text}, ensure_ascii=False)
        table = per_100kb(redact_secrets, text)
        result = per_100kb(redact_tool_result, as_result)
        row = f"{build.__name__:<8} {len(samples):>7} {table:>10,.0f} {result:>13,.0f} {missed(redact_secrets, text, samples):>7}"
        if library is not None:
            row += f" {per_100kb(library, text, budget=3.0):>18,.0f} {missed(library, text, samples):>7}"
        else:
            row += f" {'not installed':>18}"
        print(row)


if __name__ == "__main__":
    main()
