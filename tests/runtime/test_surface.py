"""The runtime's public face: exactly the names it promises, each one real."""

from __future__ import annotations

import actors
import supervisor
from messages import paths


class TestActorsFace:
    """``actors`` exports its promised names and nothing it cannot resolve."""

    def test_every_export_resolves(self) -> None:
        """Each name in ``__all__`` resolves; supervision is ``supervisor``'s, not re-exported here."""
        for name in actors.__all__:
            assert getattr(actors, name) is not None, name
        assert not {"ChildSpec", "Supervisor", "open_actor_system"} & set(actors.__all__)
        for name in ("ChildSpec", "Supervisor", "SupervisorHandle", "ActorSystem", "open_actor_system"):
            assert name in supervisor.__all__, name

    def test_surface_is_pinned(self) -> None:
        """Adding or dropping a public name is a deliberate change to this list."""
        assert sorted(actors.__all__) == sorted([
            "Actor", "ActorBase", "ActorError", "ActorFailed", "ActorHandle", "ActorNotFound", "ActorRegistry", "Envelope", "FailureHandler", "InterruptScope", "Job", "JobStopped", "MailboxClosed",
            "MailboxFull", "NoReply", "Rejected", "Reply", "RestartIntensityExceeded", "SpawnFailed", "error_record",
        ])

    def test_unknown_name_is_an_attribute_error(self) -> None:
        """A name the face does not have raises AttributeError, as a module should."""
        try:
            actors.NoSuchThing  # noqa: B018
        except AttributeError as exc:
            assert "NoSuchThing" in str(exc)
        else:
            raise AssertionError("expected AttributeError")


class TestPaths:
    """One helper builds and reads actor paths."""

    def test_session_paths_round_trip(self) -> None:
        """A session's path is under the sessions supervisor; descendants map back to its id."""
        assert paths.session_path("ab12") == "sessions/session:ab12"
        assert paths.session_id_of("sessions/session:ab12/turn/tool:c1") == "ab12"
        assert paths.session_id_of("sessions") is None
        assert paths.session_id_of("store") is None
        assert paths.child_path("", "sessions") == "sessions"


class TestLightImport:
    """The command line loads no runtime: ``cli`` and ``control`` import neither Trio nor ``actors``."""

    def test_cli_import_loads_no_trio(self) -> None:
        """A fresh interpreter that imports the CLI's entry point has not imported trio or the runtime."""
        import subprocess
        import sys

        code = (
            "import sys, cli, cli.main, control.client;"
            " print(sorted(m for m in ('trio', 'actors', 'supervisor') if m in sys.modules))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.strip() == "[]"
