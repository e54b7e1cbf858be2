"""Refuse edits that would write the redaction marker over a real secret.

The model only ever sees a file through :func:`tools.redact.redact_secrets`, so a secret in the file
reaches it as ``[REDACTED]``. Writing back what it saw would replace the key with the marker and lose
it. An edit is refused when the new content holds the marker while a secret of the old content is
gone from it (or the marker is added to a file that holds a secret). The marker in a new file, or
marker text the file already held, is fine.
"""

from __future__ import annotations

import re
from typing import Final

from tools.errors import ToolInputError
from tools.redact import REDACTED, redact_secrets

__all__ = ["MarkerOverSecret", "check_no_marker_over_secret", "hidden_secrets"]

# Beyond this many markers in one file the pieces are not matched up; every marker counts as a secret.
_MAX_MARKERS: Final = 500


class MarkerOverSecret(ToolInputError):
    """An edit would replace a secret in the file with the redaction marker."""


def hidden_secrets(text: str) -> frozenset[str]:
    """The secret values of ``text`` that a redacted read showed as the marker (none when it has none).

    The redacted text is ``text`` with some pieces replaced by the marker; matching the pieces between
    the markers back against ``text`` finds what each marker stands for.
    """
    seen = redact_secrets(text)
    if seen == text:
        return frozenset()
    pieces = seen.split(REDACTED)
    if len(pieces) > _MAX_MARKERS:
        return frozenset({text})
    # Each marker stands for the marker text itself (already in the file) or a non-empty secret.
    pattern = f"({re.escape(REDACTED)}|.+?)".join(re.escape(piece) for piece in pieces)
    match = re.fullmatch(pattern, text, re.DOTALL)
    if match is None:  # redaction changed more than whole pieces: treat the whole file as secret
        return frozenset({text})
    return frozenset(value for value in match.groups() if value != REDACTED)


def check_no_marker_over_secret(old: str, new: str, path: str) -> None:
    """Refuse replacing ``old`` by ``new`` in ``path`` when a secret of ``old`` could become the marker.

    With a secret in ``old``, ``new`` may hold the marker only as often as ``old`` held the marker text
    itself, and only while every secret of ``old`` is still in it. Counting keeps the rule sound where
    matching the marker back to its secret is ambiguous (a secret's text repeated around it).

    Raises:
        MarkerOverSecret: ``new`` holds the marker and a secret of ``old`` may be lost to it.
    """
    if REDACTED not in new:
        return
    secrets = hidden_secrets(old)
    if not secrets:
        return
    if new.count(REDACTED) > old.count(REDACTED) or any(secret not in new for secret in secrets):
        raise MarkerOverSecret(
            f"Refused: {path} holds a secret that you were shown as {REDACTED}, and this edit writes the "
            f"marker {REDACTED} into the file, which would put the marker where the real value was and "
            "destroy it. Leave the secret's line alone: edit around it with patch (an old_string that does "
            f"not include the redacted part, and no {REDACTED} in new_string), or ask the user to change "
            "the secret themselves."
        )
