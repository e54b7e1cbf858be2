"""Rule mode: a deterministic scripted 'model' for the demo (filled in below)."""
from __future__ import annotations

from typing import Any

from .steps import Step


def rule_step(path: str, body: dict[str, Any]) -> Step:
    """The reply the rules give to this request."""
    return Step(text="[scripted model] hello")
