"""The attach client's line for the learning loop's news."""

from __future__ import annotations

import io

from rich.console import Console

from cli.attach_view import EventView


class TestLearningLine:
    """A review's change is shown as its own line, a warning keeps its tag."""

    def test_learning_and_warning(self) -> None:
        """The learning line is the text alone; other status kinds keep their [kind] tag."""
        out = io.StringIO()
        view = EventView(Console(file=out, force_terminal=False), "s1")
        text = '💾 memory updated by review: user profile added: "Prefers tabs" (why: said so)'
        view.show({"type": "StatusUpdate", "kind": "learning", "text": text, "path": "sessions/session:s1", "seq": 1})
        view.show({"type": "StatusUpdate", "kind": "warning", "text": "careful", "path": "sessions/session:s1", "seq": 2})
        assert out.getvalue().splitlines() == [text, "[warning] careful"]
