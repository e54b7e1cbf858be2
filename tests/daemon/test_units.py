"""The daemon's small parts on their own: logging, locks, paths, configuration."""

from __future__ import annotations

import io
import logging
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import typing

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from control.errors import DaemonAlreadyRunning
from control.lock import FileLock, InstanceLock
from actors.platform.daemon.logs import OneLineFormatter, RedactingFilter, SafeStream
from actors.platform.daemon.cluster.hosts.paths import HostPaths
from control.paths import DaemonPaths, ensure_private_dir
from control.client import encode_request
from config.daemon import DaemonConfig
from cli.render import ps_rows
from messages import control as c
from messages.codec import Codec
from messages.sockets import MAX_SOCKET_PATH_BYTES, peer_uid
from tests.strategies import message_strategy

CLIENT_CODEC: Codec[object] = Codec(c.ClientMessage)
SECRET = "sk-proj-abcdefghijklmnop1234567890"


class _Broken(io.StringIO):
    def write(self, data: str) -> int:
        raise OSError(5, "Input/output error")

    def flush(self) -> None:
        raise ValueError("I/O operation on closed file")


def _logger(stream: io.StringIO | SafeStream) -> logging.Logger:
    logger = logging.getLogger(f"test.daemon.{id(stream)}")
    logger.propagate = False
    handler = logging.StreamHandler(stream)  # type: ignore[arg-type]  # a SafeStream writes as a text stream does
    handler.setFormatter(OneLineFormatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter())
    logger.addHandler(handler)
    return logger


class TestLogging:
    """Log lines are single, redacted, and never crash on a vanished stream."""

    def test_phone_numbers_masked(self) -> None:
        """A Signal or WhatsApp user's number is logged as Hermes logs it: its start and last four digits."""
        out = io.StringIO()
        _logger(out).warning("refused a message from user %s in chat %s (issue #12345678, +x)", "+15551234567", "+4930123456")
        line = out.getvalue()
        assert "+15551234567" not in line and "+4930123456" not in line
        assert "+155****4567" in line and "+493****3456" in line and "#12345678" in line

    def test_secrets_redacted_in_message_and_exception(self) -> None:
        """A key in the arguments or in an exception's text never reaches the stream."""
        out = io.StringIO()
        logger = _logger(out)
        try:
            raise RuntimeError(f"auth failed for key {SECRET}\nsecond line")
        except RuntimeError as exc:
            logger.error("calling with %s", SECRET, exc_info=exc)
        text = out.getvalue()
        assert SECRET not in text
        assert "[REDACTED]" in text
        assert text.count("\n") == 1  # one line per event
        assert "RuntimeError" in text

    def test_safe_stream_swallows_broken_pipes(self) -> None:
        """Writing to a closed or broken stream is dropped without raising."""
        logger = _logger(SafeStream(_Broken()))
        logger.error("still alive")  # must not raise
        stream = SafeStream(_Broken())
        assert stream.write("abc") == 3
        stream.flush()


class TestLocks:
    """One holder at a time; the second daemon learns who holds it."""

    def test_second_instance_refused_with_pid(self, tmp_path: Path) -> None:
        """A second InstanceLock on the same file raises DaemonAlreadyRunning naming the holder's pid."""
        first = InstanceLock(tmp_path / "daemon.lock", tmp_path)
        first.take()
        try:
            with pytest.raises(DaemonAlreadyRunning, match=r"pid \d+") as refused:
                InstanceLock(tmp_path / "daemon.lock", tmp_path).take()
            assert refused.value.pid is not None
        finally:
            first.release()
        again = InstanceLock(tmp_path / "daemon.lock", tmp_path)
        again.take()
        again.release()

    def test_file_lock_nowait(self, tmp_path: Path) -> None:
        """acquire_nowait fails while another holder has it and succeeds after release."""
        one, two = FileLock(tmp_path / "x.lock"), FileLock(tmp_path / "x.lock")
        assert one.acquire_nowait()
        assert not two.acquire_nowait()
        one.release()
        assert two.acquire_nowait()
        two.release()
        assert stat.S_IMODE((tmp_path / "x.lock").stat().st_mode) == 0o600


class TestPaths:
    """Where the daemon's files go."""

    def test_short_home_uses_run_socket(self, tmp_path: Path) -> None:
        """A short home gets run/control.sock."""
        paths = DaemonPaths(Path("/tmp/h"))
        assert paths.socket == Path("/tmp/h/run/control.sock")

    def test_long_home_falls_back(self) -> None:
        """A home too deep gets a short path that depends only on the home."""
        deep = Path("/tmp/" + "d" * 120)
        paths = DaemonPaths(deep)
        assert paths.socket == paths.fallback_socket == DaemonPaths(deep).fallback_socket
        assert len(bytes(paths.socket)) <= MAX_SOCKET_PATH_BYTES
        assert paths.socket != DaemonPaths(Path("/tmp/" + "e" * 120)).socket

    @pytest.mark.parametrize("recorded", ["ours", "another user's", "a symlink to ours", "none"])
    def test_deep_homes_sockets_are_where_the_record_says(self, tmp_path: Path, recorded: str) -> None:
        """A deep home's control and host sockets are in the per-user directory its record names while
        that is a private directory of ours; else where a first start would make one."""
        paths = DaemonPaths(tmp_path / ("d" * 120))
        default = paths.fallback_socket.parent
        (mine := tmp_path / "mine").mkdir(mode=0o700)
        paths.run_dir.mkdir(parents=True)
        if recorded == "another user's":
            os.chown(mine, 4242, 4242)
        elif recorded == "a symlink to ours":
            os.symlink(mine, tmp_path / "link")
            mine = tmp_path / "link"
        if recorded != "none":
            paths.user_dir_record.write_text(f"{mine}\n")
        expected = mine if recorded == "ours" else default
        assert paths.socket == expected / f"{paths.home_digest}.sock"
        assert HostPaths(paths.home, 3).socket == expected / f"{paths.home_digest}-host-3.sock"

    def test_private_dir(self, tmp_path: Path) -> None:
        """ensure_private_dir creates 0700 and tightens a looser existing directory."""
        loose = tmp_path / "loose"
        loose.mkdir(mode=0o755)
        ensure_private_dir(loose)
        assert stat.S_IMODE(loose.stat().st_mode) == 0o700


class TestDaemonConfig:
    """The ``daemon`` section's defaults and validation."""

    def test_defaults(self) -> None:
        """Defaults are the documented ones."""
        config = DaemonConfig()
        assert attrs.astuple(config) == (600.0, 64, 1024 * 1024, 1000, 10.0, 256, 256, 10.0, None, None, 1)

    def test_hosts_auto_is_one_per_core(self) -> None:
        """``daemon.hosts: auto`` runs one session host per core."""
        assert DaemonConfig(hosts="auto").hosts == max(1, os.cpu_count() or 1)

    @pytest.mark.parametrize(
        "field, value",
        [("max_running_turns", 0), ("max_frame_bytes", 10), ("shutdown_timeout_seconds", -1), ("subscriber_buffer", "many"),
         ("max_connections", 0), ("frame_timeout_seconds", 0), ("cluster_listen", "nowhere"),
         ("cluster_listen", "host:port"), ("cluster_listen", ":80"), ("cluster_listen", "h:70000"),
         ("cluster_advertise", "nowhere"), ("hosts", 0), ("hosts", 65), ("hosts", "many"), ("hosts", 1.5)],
    )
    def test_bad_values_refused(self, field: str, value: object) -> None:
        """Out-of-range or mistyped values are errors."""
        with pytest.raises((ValueError, TypeError)):
            DaemonConfig(**{field: value})


class TestLightEncoder:
    """The CLI's cattrs-free request encoder writes exactly what the codec reads."""

    @pytest.mark.parametrize("cls", typing.get_args(c.ClientMessage), ids=lambda cls: cls.__name__)
    @given(data=st.data())
    @settings(max_examples=20, deadline=None)
    def test_round_trip(self, cls: type, data: st.DataObject) -> None:
        """decode(encode_request(m)) == m for every client message."""
        message = data.draw(message_strategy(cls))
        assert CLIENT_CODEC.decode(encode_request(message)) == message


class TestFastImports:
    """Commands that only talk to the daemon import neither Trio nor the provider SDKs."""

    def test_client_side_modules(self) -> None:
        """The CLI's client-side modules leave trio, openai and anthropic unimported."""
        code = (
            "import sys\n"
            "import cli, cli.commands, cli.attach, control.client\n"
            "heavy = sorted(m for m in ('trio', 'openai', 'anthropic', 'cattrs', 'httpx2') if m in sys.modules)\n"
            "print(','.join(heavy))\n"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert result.stdout.strip() == ""

    def test_chat_leaves_the_config_schema_unimported(self) -> None:
        """``chat``'s way to its prompt loads neither the config schema nor a YAML parser (a clean
        config.yaml is checked once, by the first client that finds it changed)."""
        code = (
            "import sys\n"
            "import cli.main, cli.attach\n"
            "print(','.join(sorted(m for m in ('config.loader', 'yaml') if m in sys.modules)))\n"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert result.stdout.strip() == ""


class TestPeerCredentials:
    """The control socket learns a peer's uid from the kernel."""

    def test_peer_uid_is_ours(self) -> None:
        """Over a real Unix socket pair the peer's uid is our own."""
        left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with left, right:
            assert peer_uid(left) == os.getuid()


class TestMessageNames:
    """Each message name means one thing: the control requests are named apart from the session's own."""

    def test_control_and_session_messages_share_no_name(self) -> None:
        """No class of messages.session is also a class of messages.control."""
        from messages import session as s

        assert set(c.__all__) & set(s.__all__) == set()

    def test_session_requests_follow_one_scheme(self) -> None:
        """The requests the daemon turns into session messages are named <Verb>Session..."""
        named = {cls.__name__ for cls in c.ClientMessage.__args__}
        assert {"InterruptSession", "SteerSession", "CompressSession", "ResetSessionTools", "AnswerSessionRequest"} <= named


class TestPsRows:
    """ps shows one row per session; a subagent (a session named subagent:<n>) counts under its parent."""

    def test_subagent_counted_and_listed(self) -> None:
        """A session with a turn, a tool and one subagent gives two rows, the parent counting one subagent."""
        def node(path: str, kind: str, *children: dict, **details: object) -> dict:
            snapshot = {"path": path, "kind": kind, "state": "busy", "activity": "", "started_at": 0.0, "details": details}
            return {"snapshot": snapshot, "children": list(children)}

        parent = "sessions/session:ab12"
        child = node(f"{parent}/turn/tool:c1/subagent:0", "session", session_id="cd34")
        tree = node("", "supervisor", node("sessions", "sessions", node(
            parent, "session", node(f"{parent}/turn", "turn", node(f"{parent}/turn/tool:c1", "tool", child)), session_id="ab12",
        )))
        rows = ps_rows(tree, now=1.0)
        assert [(row["session_id"], row["subagents"], row["turn_running"]) for row in rows] == [("ab12", 1, True), ("cd34", 0, False)]
        assert rows[0]["tools"] == [f"{parent}/turn/tool:c1"]


class TestSessionsTableCost:
    """`sessions list` shows each session's estimated cost, "n/a" (never $0) when its model has no price."""

    @staticmethod
    def _row(cost: float, tokens: int) -> str:
        from cli.render import format_sessions
        from messages.session_records import SessionSummary

        info = SessionSummary(
            id="abc", title="t", source="cli", model="m", cwd="/", parent_session_id=None, started_at=0.0,
            last_active=0.0, ended_at=None, end_reason=None, message_count=2, tool_call_count=0,
            tokens_in=tokens, tokens_out=tokens, cost=cost,
        )
        header, row = format_sessions([info]).splitlines()
        assert "COST" in header
        return row

    def test_priced(self) -> None:
        assert " $0.0057 " in self._row(0.0057, 100)
        assert " $12.50 " in self._row(12.5, 100)

    def test_unpriced_model_is_not_free(self) -> None:
        assert " n/a " in self._row(0.0, 100)

    def test_nothing_spent(self) -> None:
        assert " $0 " in self._row(0.0, 0)
