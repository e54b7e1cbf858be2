"""Dangerous-command detection and the approval paths through the ToolContext."""

from __future__ import annotations

from tests.jail.fixtures import Jails

from pathlib import Path

import pytest
import trio

from config.terminal import ApprovalsConfig
from tests.terminal.helpers import call, make_ctx, make_tools
from tools.approval import ALWAYS_ASK_KEY, ApprovalBook, SessionApprovals, authorize_command, find_dangers
from tools.context import ApprovalRequest

DANGEROUS = [
    ("rm -rf build", "rm"),
    ("cd x && rm file", "rm"),
    ("find . -name '*.o' | xargs rm", "rm"),
    ("find . -exec rm {} \\;", "rm"),
    ("x=$(rm a)", "rm"),
    ("sudo /bin/rm a", "rm"),
    ("rmdir empty", "rmdir"),
    ("cp a b", "cp"),
    ("install -m 755 tool /usr/local/bin", "install"),
    ("FOO=1 mv a b", "mv"),
    ("sed -i 's/a/b/' f", "sed_in_place"),
    ("sed -ni 's/a/b/p' f", "sed_in_place"),
    ("truncate -s 0 log", "truncate"),
    ("dd if=/dev/zero of=disk.img", "dd"),
    ("shred secrets.txt", "shred"),
    ("git reset --hard", "git_reset"),
    ("git clean -fdx", "git_clean"),
    ("git checkout -- .", "git_checkout"),
    ("echo hi > notes.txt", "overwrite_redirect"),
    ("cat a >| b", "overwrite_redirect"),
    ("make &> build.log", "overwrite_redirect"),
    ('bash -c "rm -rf tmp"', "rm"),
]

SAFE = [
    "ls -la",
    "git status",
    "git log --oneline",
    "pip install requests",
    "npm install",
    "echo rm is a command",
    "echo hi >> notes.txt",
    "make 2>&1 | tail",
    "cat x 2>/dev/null",
    "grep -r 'a -> b' .",
    "sed -n '1,5p' file",
    "firmware --version",
    "",
]

ALWAYS_ASK = ["rm -rf /", "rm -rf ~", "sudo rm -r -f /", "/bin/rm -fr ~/", "rm -R $HOME", 'bash -c "rm -rf ~"', "rm --recursive /*"]


class TestDetection:
    """The seeds' destructive patterns are found in command position, and only there."""

    @pytest.mark.parametrize(("command", "key"), DANGEROUS)
    def test_dangerous(self, command: str, key: str) -> None:
        assert key in [match.key for match in find_dangers(command)]

    @pytest.mark.parametrize("command", SAFE)
    def test_safe(self, command: str) -> None:
        assert find_dangers(command) == []

    @pytest.mark.parametrize("command", ALWAYS_ASK)
    def test_recursive_delete_of_root_or_home_always_asks(self, command: str) -> None:
        assert any(match.always_ask for match in find_dangers(command))

    def test_recursive_delete_elsewhere_is_ordinary(self) -> None:
        assert not any(match.always_ask for match in find_dangers("rm -rf ./build ~/project/tmp"))


def _answer(decision: str, seen: list[ApprovalRequest]):
    def approver(request: ApprovalRequest) -> str:
        seen.append(request)
        return decision

    return approver


class TestAuthorize:
    """Approve once, for the session, deny, time out, and always-ask paths."""

    async def test_once_asks_again_next_time(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", seen))
        approvals = SessionApprovals()
        for _ in range(2):
            outcome = await authorize_command("rm a", ctx, approvals, ApprovalsConfig())
            assert outcome.allowed and outcome.decided_by == "once"
        assert len(seen) == 2
        assert seen[0].tool == "terminal" and seen[0].command == "rm a"

    async def test_session_approval_is_remembered_per_pattern(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("session", seen))
        approvals = SessionApprovals()
        assert (await authorize_command("rm a", ctx, approvals, ApprovalsConfig())).decided_by == "session_granted"
        assert (await authorize_command("rm b", ctx, approvals, ApprovalsConfig())).decided_by == "session"
        assert (await authorize_command("mv a b", ctx, approvals, ApprovalsConfig())).decided_by == "session_granted"
        assert [r.command for r in seen] == ["rm a", "mv a b"]
        assert approvals.snapshot() == ["mv", "rm"]

    async def test_always_ask_even_after_session_approval(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("session", seen))
        approvals = SessionApprovals(["rm", ALWAYS_ASK_KEY])
        assert approvals.snapshot() == ["rm"]
        for _ in range(2):
            outcome = await authorize_command("rm -rf ~", ctx, approvals, ApprovalsConfig())
            assert outcome.allowed
        assert len(seen) == 2
        assert "always asks" in seen[0].description

    async def test_deny(self, jails: Jails, tmp_path: Path) -> None:
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", []))
        outcome = await authorize_command("shred x", ctx, SessionApprovals(), ApprovalsConfig())
        assert not outcome.allowed
        assert "The user denied it" in outcome.denial_message("shred x")

    async def test_unanswered_request_times_out_to_deny(self, jails: Jails, tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
        async def never(request: ApprovalRequest) -> str:
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        ctx = make_ctx(jails, tmp_path, approver=never)
        start = trio.current_time()
        outcome = await authorize_command("rm a", ctx, SessionApprovals(), ApprovalsConfig(timeout_seconds=300))
        assert trio.current_time() - start == pytest.approx(300)
        assert outcome.decided_by == "timeout" and not outcome.allowed

    async def test_non_interactive_is_denied_without_asking(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", seen), interactive=False)
        outcome = await authorize_command("rm a", ctx, SessionApprovals(), ApprovalsConfig())
        assert outcome.decided_by == "unattended" and seen == []

    async def test_safe_command_never_asks(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", seen))
        assert (await authorize_command("ls", ctx, SessionApprovals(), ApprovalsConfig())).allowed
        assert seen == []


class TestTerminalApprovals:
    """The terminal tool runs approved commands and reports denials the model can act on."""

    async def test_denied_command_does_not_run(self, jails: Jails, tmp_path: Path) -> None:
        tools = make_tools()
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", []))
        (tmp_path / "keep.txt").write_text("x")
        result = await call(tools, ctx, command="rm keep.txt")
        assert result["status"] == "denied"
        assert "Do not retry" in result["error"]
        assert (tmp_path / "keep.txt").exists()

    async def test_approved_command_runs_and_session_approval_sticks(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        tools = make_tools()
        ctx = make_ctx(jails, tmp_path, approver=_answer("session", seen))
        (tmp_path / "a").write_text("x")
        (tmp_path / "b").write_text("x")
        assert (await call(tools, ctx, command="rm a"))["exit_code"] == 0
        assert (await call(tools, ctx, command="rm b"))["exit_code"] == 0
        assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
        assert len(seen) == 1
        assert tools.approvals.for_session(ctx.session_id).snapshot() == ["rm"]

    def test_book_restore_and_forget(self) -> None:
        book = ApprovalBook()
        book.restore("s1", ["rm", "mv"])
        assert book.for_session("s1").snapshot() == ["mv", "rm"]
        book.forget("s1")
        assert book.for_session("s1").snapshot() == []
