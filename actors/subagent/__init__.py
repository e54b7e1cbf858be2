"""The subagents' face: delegate_task as child sessions.

- :func:`register_delegate_task` puts the tool in a registry (its description states the live limits);
- :func:`delegate_capability` is a session's :data:`~actors.session.DelegateFactory`: given to a
  :class:`~actors.session.SessionSpec`, it lets that session's turns delegate.
"""

from __future__ import annotations

from actors.subagent.delegate import delegate_capability
from actors.subagent.tool import register_delegate_task

__all__ = ["delegate_capability", "register_delegate_task"]
