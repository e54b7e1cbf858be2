"""The ``hermes-actors`` command line: a Trio-free client of the daemon's control socket.

- ``main``: the parser and the entry point (the console script and ``python -m cli``).
- ``autostart``: connect, or start a daemon first (the client itself is ``control.client``).
- ``commands``: the one-request commands (tree, ps, inspect, kill, sessions ...) and
  ``render``: their text and ``--json`` forms (schema in ``README.md`` here).
- ``attach`` and ``attach_view``: ``chat`` and ``attach``, the interactive client; ``attach_input``: its
  prompt and the terminal's modes; ``live_text``: what of a stream may be committed above the prompt;
  ``slash``: its commands; ``tool_output`` and ``turn_figures``: tool results, usage and the turn footer.
- ``one_shot``: ``chat -q``; ``confirm``: the question a destructive command asks first.
- ``demo``: a guided run against the scripted provider.

Only :func:`main` is imported here; the rest is loaded by the command that needs it, so
``hermes-actors tree`` starts fast.
"""

from cli.main import main

__all__ = ["main"]
