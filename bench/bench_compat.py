"""How close this project is to Hermes Agent 0.19.0 on paper: config keys and tool schemas; prints its figures.

- the config-keys table of ``docs/HERMES_COMPAT.md`` against the keys pinned from Hermes's wheel: how many
  Hermes keys there are, how many rows of each status, how many defaults agree;
- the shared tools' parameters against Hermes's pinned schemas: how many parameters compared, how many
  differ, and how many of those are declared differences (``tests/fixtures/hermes_schema_differences.json``).

Run: .venv/bin/python bench/bench_compat.py
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docs.compat_table import COMPAT, hermes_defaults, our_defaults, parse_rows, read_as, same_default  # noqa: E402
from tests.tools.test_hermes_schema_drift import DIFFERENCES, HERMES, OURS, SHARED_TOOLS, drift  # noqa: E402


def _leaf_parameters(schema: dict, path: str = "") -> list[str]:
    """The dotted names of every parameter, nested ones included."""
    names: list[str] = []
    for name, sub in schema.get("properties", {}).items():
        where = f"{path}.{name}" if path else name
        names += [where, *_leaf_parameters(sub, where), *_leaf_parameters(sub.get("items", {}), f"{where}.items")]
    return names


def main() -> None:
    """Print the figures."""
    hermes, ours = hermes_defaults(), our_defaults()
    rows = parse_rows(COMPAT.read_text(encoding="utf-8"))
    statuses = collections.Counter(row.status.split(";")[0].strip() for row in rows)
    shared = [row.key for row in rows if row.key in hermes and read_as(row.key) in ours]
    agreeing = sum(same_default(hermes[key], ours[read_as(key)]) for key in shared)
    print(f"Hermes 0.19.0 config keys pinned: {len(hermes)}; rows in the table: {len(rows)}")
    for status, count in statuses.most_common():
        print(f"  {status:<32} {count}")
    print(f"keys both projects have, default agreeing: {agreeing} of {len(shared)}")
    compared = sum(len(_leaf_parameters(HERMES[tool]["parameters"])) for tool in SHARED_TOOLS)
    differences = {tool: list(drift(HERMES[tool]["parameters"], OURS[tool]["parameters"])) for tool in sorted(SHARED_TOOLS)}
    declared = sum(len(DIFFERENCES.get(tool, {})) for tool in SHARED_TOOLS)
    print(f"shared tools: {len(SHARED_TOOLS)}; Hermes parameters compared: {compared}; "
          f"differences found: {sum(map(len, differences.values()))}; declared on purpose: {declared}")
    print(json.dumps({tool: found for tool, found in differences.items() if found}, indent=1))


if __name__ == "__main__":
    main()
