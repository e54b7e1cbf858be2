"""The interactive client's input side: the prompt (and the live region above it) and the terminal's modes.

The prompt runs on its own thread. Everything else writes through a stdout
proxy that prints above the prompt; only whole lines are written there (see
:mod:`cli.live_text`), and what is still streaming is drawn by
the prompt itself, above ``>``. When the client ends for any reason the main
thread stops the prompt, waits for it to put the terminal back, and restores
the modes saved at the start as a last resort.
"""

from __future__ import annotations

import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.live_text import live_rows
from control.errors import EXIT_FAILURE

if TYPE_CHECKING:
    from cli.attach import Attachment

__all__ = ["PromptInput", "TerminalModes"]

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: A second Ctrl-C at an idle prompt within this many seconds leaves.
DOUBLE_CTRL_C_SECONDS = 2.0
#: Rows the prompt, the toolbar and a margin keep free of the live region.
_RESERVED_ROWS = 4
#: How long the proxy gathers writes before printing them above the prompt (the default is 0.2 s).
_PROXY_GATHER_SECONDS = 0.002
#: At most this often the prompt (and the live text above it) is redrawn: a fast stream costs no more.
_MIN_REDRAW_SECONDS = 0.01
#: How long leaving waits for the prompt to hand the terminal back.
_STOP_TIMEOUT_SECONDS = 3.0


class TerminalModes:
    """The terminal's modes (echo, canonical input, ...) as saved, to be put back whatever happens."""

    def __init__(self, fd: int | None, attributes: list[Any] | None) -> None:
        self._fd = fd
        self._attributes = attributes

    @classmethod
    def save(cls) -> TerminalModes:
        """The modes of stdin now (nothing to restore when stdin is not a terminal)."""
        if not sys.stdin.isatty():
            return cls(None, None)
        fd = sys.stdin.fileno()
        return cls(fd, termios.tcgetattr(fd))

    def restore(self) -> None:
        """Put the saved modes back."""
        if self._fd is not None and self._attributes is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._attributes)


class PromptInput:
    """The prompt of an interactive attachment, on its own thread.

    Args:
        attachment: the client it sends through and reads state from.
        home: the daemon's home; the input history is kept in ``home/cli_history``.
    """

    def __init__(self, attachment: Attachment, home: Path) -> None:
        self.attachment = attachment
        self.history_path = home / "cli_history"
        self._app: Any = None
        self._thread: threading.Thread | None = None
        self._last_ctrl_c = 0.0

    def redraw(self) -> None:
        """Draw the prompt again soon (the live text changed); safe from any thread."""
        app = self._app
        if app is not None and app.is_running:
            app.invalidate()

    def run(self) -> None:
        """Read lines until the client ends (the input thread's body); a failure here ends the client."""
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - whatever broke, the main thread must restore the terminal and say so
            self.attachment.leave(f"the client failed: {exc}", EXIT_FAILURE)

    def _run(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        self._thread = threading.current_thread()
        attachment = self.attachment
        self.history_path.parent.mkdir(parents=True, exist_ok=True)
        session: Any = PromptSession(
            history=FileHistory(str(self.history_path)), enable_history_search=True, erase_when_done=True
        )
        self._app = session.app
        self._app.min_redraw_interval = _MIN_REDRAW_SECONDS
        session.default_buffer.accept_handler = self._accept
        with _stdout_above_prompt():
            # One prompt runs for the whole attachment; it ends only for Ctrl-C (then starts again) or to leave.
            while not attachment.done.is_set():
                try:
                    session.prompt(self._message, bottom_toolbar=self._toolbar, refresh_interval=0.1)
                except KeyboardInterrupt:
                    self._ctrl_c()
                except EOFError:
                    if not attachment.done.is_set():
                        attachment.detach()
                    return

    def _accept(self, buffer: Any) -> bool:
        """Enter: act on the line and keep the prompt running, its input cleared (False: not kept).

        A prompt that ended at every line and started again left a moment with no prompt running, in
        which the events the main thread printed went straight to the terminal while the next prompt
        drew itself: under load the two interleaved and garbled the screen.
        """
        self.attachment.command(buffer.text)
        return False

    def stop(self) -> None:
        """End the prompt (from the main thread) and wait until it has put the terminal back."""
        app = self._app
        if app is not None and app.is_running and app.loop is not None:
            app.loop.call_soon_threadsafe(_exit_quietly, app)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_STOP_TIMEOUT_SECONDS)

    def _ctrl_c(self) -> None:
        attachment = self.attachment
        if attachment.view.turn_running:
            attachment.interrupt()
            return
        now = time.monotonic()
        if now - self._last_ctrl_c < DOUBLE_CTRL_C_SECONDS:
            attachment.detach("left with Ctrl-C")
            return
        self._last_ctrl_c = now
        attachment.view.line("(Ctrl-C again to leave; Ctrl-D detaches)", style="dim")

    def _message(self) -> str:
        view = self.attachment.view
        prompt = "answer> " if view.pending else "> "
        live = view.live_text()
        if not live:
            return prompt
        size = self._app.output.get_size()
        rows = live_rows(live, size.columns, size.rows - _RESERVED_ROWS)
        return "\n".join(rows) + "\n" + prompt

    def _toolbar(self) -> str:
        attachment = self.attachment
        view = attachment.view
        yolo = " ⚠ YOLO ·" if attachment.yolo else ""
        if not view.turn_running:
            return f"{yolo} session {attachment.session_id} · /help"
        frame = _SPINNER[int(time.monotonic() * 10) % len(_SPINNER)]
        tools = " · ".join(f"{name} {seconds:.0f}s" for name, seconds in view.running_tools())
        return f"{yolo} {frame} {tools or view.activity or 'working'} · Ctrl-C interrupts"


def _exit_quietly(app: Any) -> None:
    """End a running prompt as if Ctrl-D was pressed (it may have ended by itself meanwhile)."""
    if app.is_running and not app.future.done():
        app.exit(exception=EOFError)


@contextmanager
def _stdout_above_prompt() -> Iterator[None]:
    """Route stdout and stderr through prompt_toolkit's proxy, which prints above the prompt."""
    from prompt_toolkit.patch_stdout import StdoutProxy

    proxy = StdoutProxy(raw=True, sleep_between_writes=_PROXY_GATHER_SECONDS)
    original = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = proxy
    try:
        yield
    finally:
        sys.stdout, sys.stderr = original
        proxy.close()
