"""Input that is not UTF-8 (an argument, a piped line, a typed line) never crashes or hangs the client.

Each bad byte of text becomes U+FFFD with one warning line; a current directory that is not UTF-8,
whose bytes matter, is refused in one line with exit status 2.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_screen import is_idle, stored_session
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli_bytes

#: What the scripted model answers to a message holding "no tools".
PLAIN_ANSWER = "plain answer to: "
REPLACED = "\ufffd"


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "not valid UTF-8" in line]


class TestArgumentNotUtf8:
    """An argument holding bytes that are not UTF-8 reaches the daemon with each bad byte replaced, and one warning."""

    def test_chat_query(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`chat -q $'\\xff\\xfe no tools'`: the turn runs on '\ufffd\ufffd no tools' and completes."""
        provider.reset()
        result = run_cli_bytes(shared_daemon.home, "chat", "-q", b"\xff\xfe no tools", *provider.chat_flags(), timeout=90)
        stdout, stderr = result.stdout.decode(), result.stderr.decode()
        assert result.returncode == 0, stderr
        assert "Traceback" not in stderr
        assert [f"hermes-actors: warning: the query argument is not valid UTF-8; each bad byte was replaced with U+FFFD ({REPLACED})"] == _warnings(stderr)
        assert f"{PLAIN_ANSWER}{REPLACED}{REPLACED} no tools" in stdout

    def test_steer_text(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`steer SESSION $'\\xff ...'` reaches the daemon (which refuses it: no turn runs), one warning, no traceback."""
        session_id = stored_session(shared_daemon, provider)
        result = run_cli_bytes(shared_daemon.home, "steer", session_id, b"\xff look there")
        stderr = result.stderr.decode()
        assert "Traceback" not in stderr
        assert 1 == len(_warnings(stderr)), stderr
        assert "no turn to steer" in stderr
        assert 1 == result.returncode

    def test_local_file_path_keeps_its_bytes(self, shared_daemon: DaemonProcess, tmp_path: Path) -> None:
        """`skills create NAME --from-file PATH` with a path that is not UTF-8 reads that very file."""
        directory = os.path.join(os.fsencode(tmp_path), b"\xff")
        os.mkdir(directory)
        skill = os.path.join(directory, b"SKILL.md")
        with open(skill, "wb") as file:
            file.write(b"---\nname: bytes-path-skill\ndescription: read from a path that is not UTF-8\n---\nBody.\n")
        result = run_cli_bytes(shared_daemon.home, "skills", "create", "bytes-path-skill", "--from-file", skill)
        assert result.returncode == 0, result.stderr.decode()
        assert [] == _warnings(result.stderr.decode())

    def test_working_directory_refused(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path
    ) -> None:
        """`chat -q` from a directory whose name is not UTF-8: one line naming it, exit status 2, no session."""
        directory = os.path.join(os.fsencode(tmp_path), b"\xff")
        os.mkdir(directory)
        result = run_cli_bytes(shared_daemon.home, "chat", "-q", "no tools", *provider.chat_flags(), cwd=directory)
        stderr = result.stderr.decode()
        assert 2 == result.returncode, stderr
        shown = repr(os.fsdecode(directory))  # escaped: '.../\\udcff'
        assert [f"hermes-actors: the cwd {shown} is not valid UTF-8, so it cannot be sent to the daemon"] == stderr.splitlines()


class TestPipedLineNotUtf8:
    """A piped line holding bytes that are not UTF-8 is sent with each replaced; the client goes on and exits at EOF."""

    def test_bad_line_then_good_line(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`printf 'no tools \\xff here\\nno tools again\\n' | chat`: two answers, one warning, exit 0."""
        provider.reset()
        script = b"no tools \xff here\nno tools again\n"
        result = run_cli_bytes(shared_daemon.home, "chat", *provider.chat_flags(), stdin=script, timeout=30)
        stdout, stderr = result.stdout.decode(), result.stderr.decode()
        assert result.returncode == 0, stderr
        assert "Traceback" not in stderr
        assert 1 == len(_warnings(stderr)), stderr
        answers = re.findall(f"{PLAIN_ANSWER}(.*)", stdout)
        assert [f"no tools {REPLACED} here", "no tools again"] == answers


class TestTypedLineNotUtf8:
    """A line typed (pasted) on the terminal holding bytes that are not UTF-8 is sent with each replaced."""

    def test_typed_bad_byte(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The prompt gets `no tools \\xff typed`: the session answers it and the client stays attached."""
        provider.reset()
        with PtyTerminal(shared_daemon.home, "chat", *provider.chat_flags(), columns=200) as terminal:
            terminal.wait_for(lambda text: "attached to" in text and is_idle(text), what="the attach banner")
            os.write(terminal.master, b"no tools \xff typed\r")
            text = terminal.wait_for(
                lambda t: f"{PLAIN_ANSWER}no tools {REPLACED} typed" in t and is_idle(t), what="the answer"
            )
            assert "not valid UTF-8" in text
            assert terminal.process.poll() is None


class TestSkillFileNotUtf8:
    """A SKILL.md that is not UTF-8 is refused in one line (exit status 2), never stored with bytes replaced."""

    SKILL = b"---\nname: bad-bytes\ndescription: a byte \xff that is not UTF-8\n---\nBody.\n"

    def test_from_stdin(self, home: Path) -> None:
        result = run_cli_bytes(home, "skills", "create", "bad-bytes", "--from-file", "-", stdin=self.SKILL)
        expected = "hermes-actors: standard input is not valid UTF-8 (byte 0xff at offset 40); a SKILL.md must be UTF-8"
        assert (2, [expected]) == (result.returncode, result.stderr.decode().splitlines())
        assert not (home / "skills").exists()

    def test_from_file(self, home: Path, tmp_path: Path) -> None:
        skill = tmp_path / "SKILL.md"
        skill.write_bytes(self.SKILL)
        result = run_cli_bytes(home, "skills", "create", "bad-bytes", "--from-file", str(skill))
        assert 2 == result.returncode
        assert [f"hermes-actors: {str(skill)!r} is not valid UTF-8 (byte 0xff at offset 40); a SKILL.md must be UTF-8"] == result.stderr.decode().splitlines()
