"""The `hermes-actors` command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hermes-actors` console script."""
    print("hermes-actors: no commands yet", file=sys.stderr)
    return 2
