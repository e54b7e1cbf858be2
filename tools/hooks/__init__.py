"""Hooks: the user's own code run on the agent's events (Hermes's ``hooks:`` and plugins' hooks).

- ``wire``: what a hook is given and what its answer means (Hermes's shapes).
- ``runner``: running commands and callables within their timeouts; :class:`HookRunner`, which the
  sessions fire.
"""

from tools.hooks.runner import NO_HOOKS, Hook, HookFailed, HookRunner, PythonCallable, hooks_from_config, import_callable
from tools.hooks.wire import DEFAULT_BLOCK_MESSAGE, block_message, context_of

__all__ = [
    "DEFAULT_BLOCK_MESSAGE",
    "NO_HOOKS",
    "Hook",
    "HookFailed",
    "HookRunner",
    "PythonCallable",
    "block_message",
    "context_of",
    "hooks_from_config",
    "import_callable",
]
