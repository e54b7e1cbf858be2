"""Refuse edits that would write the redaction marker over a real secret.

The model only ever sees a file through :func:`tools.redact.redact_secrets`, so a secret in the file
reaches it as ``[REDACTED]``. Writing back what it saw would replace the key with the marker and lose
it. An edit is refused when the new content holds the marker while a secret of the old content is
gone from it. The marker in a new file, or marker text the file already held, is fine.
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
    pattern = "(.*?)".join(re.escape(piece) for piece in pieces)
    match = re.fullmatch(pattern, text, re.DOTALL)
    if match is None:  # redaction changed more than whole pieces: treat the whole file as secret
        return frozenset({text})
    return frozenset(value for value in match.groups() if value != REDACTED)


def check_no_marker_over_secret(old: str, new: str, path: str) -> None:
    """Refuse replacing ``old`` by ``new`` in ``path`` when a secret of ``old`` would become the marker.

    Raises:
        MarkerOverSecret: ``new`` holds the marker and a secret of ``old`` is missing from it.
    """
    if REDACTED not in new:
        return
    if any(secret not in new for secret in hidden_secrets(old)):
        raise MarkerOverSecret(
            f"Refused: {path} holds a secret that you were shown as {REDACTED}, and this edit would write "
            f"the marker {REDACTED} over the real value, destroying it. Leave the secret's line alone: "
            "edit around it with patch (an old_string that does not include the redacted part), or ask "
            "the user to change the secret themselves."
        )
