"""The session package's public names stay importable, and its neighbours use only them."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import actors.session
import actors.subagent

SESSION_FACE = {
    # The front doors (control socket, HTTP API) serve a session's checkpoints through these.
    "CheckpointOutcome", "CheckpointsOff", "RestoreWhileBusy", "serve_checkpoints",
    # The skills curator asks a model as a session would (its auxiliary routing), outside any session.
    "SessionModel",
    "CallContext", "DelegateFactory", "DelegateTask", "EventHub", "NoTurnRunning", "ParentSession", "SessionActor",
    "SessionBusy", "TURN_NAME",
    "SessionDeps", "SessionNotFound", "SessionOptions", "SessionService", "SessionSpec", "SessionState",
    "SessionsSupervisor", "Subscription", "SubscriptionClosed", "TooManyRunningTurns", "build_subagent_prompt",
    "new_session_id",
}


class TestPublicSurface:
    """Every name a package exports in __all__ exists."""

    @pytest.mark.parametrize("module", ["actors.session", "conversation.compression", "conversation.prompt", "actors.subagent"])
    def test_all_resolves(self, module: str) -> None:
        package = importlib.import_module(module)
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert missing == []
        assert len(package.__all__) == len(set(package.__all__))


class TestSessionFace:
    """The session package exports exactly its face, and the subagents import nothing else of it."""

    def test_face_is_exactly_this(self) -> None:
        """A name added to or dropped from the face is a decision, made here too."""
        assert set(actors.session.__all__) == SESSION_FACE

    def test_subagent_imports_only_the_face(self) -> None:
        """No module of actors.subagent imports a module inside actors.session."""
        reaching_in = []
        for path in Path(actors.subagent.__file__).parent.glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                reaching_in += [f"{path.name}: {name}" for name in names if name.startswith("actors.session.")]
        assert reaching_in == []
