"""A page's JavaScript dialogs (``alert``, ``confirm``, ``prompt``, ``beforeunload``) as the tools show them.

A dialog stops its page: until it is answered the page runs no script and answers no DevTools command
about its content. Under ``browser.dialog_policy: must_respond`` (Hermes's default) the browser holds it
for the model, which sees it in ``pending_dialogs`` and answers it with ``browser_dialog``; one left
unanswered for ``browser.dialog_timeout_s`` is dismissed. The other policies answer it at once. Answered
dialogs stay a while in ``recent_dialogs``, saying who closed them.
"""

from __future__ import annotations

from typing import Any

import attrs

from tools.redact import redact_secrets

__all__ = ["DIALOGS_KEPT", "ClosedDialog", "Dialog"]

#: Closed dialogs remembered, the oldest forgotten first (as Hermes).
DIALOGS_KEPT = 20


@attrs.frozen
class Dialog:
    """A dialog a page opened and nobody answered yet.

    Attributes:
        id: ``d-N``, numbered per browser; ``browser_dialog``'s ``dialog_id``.
        type: ``alert``, ``confirm``, ``prompt`` or ``beforeunload``.
        message: what the page asks.
        default_prompt: a prompt's default answer.
        opened_at: wall-clock seconds (``time.time()``).
        session_id: the page's DevTools session, which answers it.
        frame_id: the frame that opened it.
    """

    id: str
    type: str
    message: str
    default_prompt: str
    opened_at: float
    session_id: str
    frame_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """What the model sees (secrets in the page's text redacted)."""
        return {
            "id": self.id, "type": self.type, "message": redact_secrets(self.message),
            "default_prompt": redact_secrets(self.default_prompt), "opened_at": self.opened_at, "frame_id": self.frame_id,
        }  # fmt: skip


@attrs.frozen
class ClosedDialog:
    """A dialog that was answered: ``closed_by`` is ``agent`` (browser_dialog), ``auto_policy``,
    ``watchdog`` (``browser.dialog_timeout_s`` passed) or ``page`` (it went away by itself)."""

    dialog: Dialog
    closed_at: float
    closed_by: str

    def to_dict(self) -> dict[str, Any]:
        """What the model sees."""
        shown = self.dialog.to_dict()
        del shown["default_prompt"]
        return {**shown, "closed_at": self.closed_at, "closed_by": self.closed_by}
