"""The approval gate of the terminal tool: once, session, always, deny, timeouts, hardline refusals."""

from __future__ import annotations

from tests.jail.fixtures import Jails

from pathlib import Path

import pytest
import trio

from config.terminal import ApprovalsConfig
from tests.terminal.helpers import call, make_ctx, make_tools
from tools.approval import ApprovalBook, authorize_command
from tools.approval_allowlist import PermanentAllows
from tools.context import ApprovalRequest

def _answer(decision: str, seen: list[ApprovalRequest]):
    def approver(request: ApprovalRequest) -> str:
        seen.append(request)
        return decision

    return approver


class TestAuthorize:
    """Approve once, for the session, always, deny, time out, and hardline refusals."""

    async def test_once_asks_again_next_time(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", seen))
        book = ApprovalBook()
        for _ in range(2):
            outcome = await authorize_command("rm -r a", ctx, book, ApprovalsConfig())
            assert outcome.allowed and outcome.decided_by == "the user"
        assert len(seen) == 2
        assert seen[0].tool == "terminal" and seen[0].command == "rm -r a"

    async def test_session_approval_is_remembered_per_pattern(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("session", seen))
        book = ApprovalBook()
        assert (await authorize_command("rm -r a", ctx, book, ApprovalsConfig())).decided_by == "the user"
        remembered = await authorize_command("rm -rf b", ctx, book, ApprovalsConfig())
        assert remembered.decided_by == "an earlier approval for this session"
        assert (await authorize_command("chmod 777 f", ctx, book, ApprovalsConfig())).allowed
        assert [r.command for r in seen] == ["rm -r a", "chmod 777 f"]
        assert book.for_session(ctx.session_id).snapshot() == ["chmod_world_writable", "recursive_delete"]

    async def test_always_is_kept_for_every_session_and_saved(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        config_path = tmp_path / "config.yaml"
        book = ApprovalBook(PermanentAllows((), config_path))
        ctx = make_ctx(jails, tmp_path, approver=_answer("always", seen))
        assert (await authorize_command("systemctl restart nginx", ctx, book, ApprovalsConfig())).allowed
        ctx.session_id = "another"
        outcome = await authorize_command("systemctl stop nginx", ctx, book, ApprovalsConfig())
        assert outcome.allowed and outcome.decided_by == "approvals.allow in config.yaml"
        assert len(seen) == 1
        assert "approvals:\n  allow:\n  - systemctl\n" == config_path.read_text()

    async def test_deny_says_who_denied(self, jails: Jails, tmp_path: Path) -> None:
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", []))
        outcome = await authorize_command("git reset --hard", ctx, ApprovalBook(), ApprovalsConfig())
        assert not outcome.allowed
        assert "It was denied by the user." in outcome.denial_message()

    @pytest.mark.parametrize("answer", ["once", "session", "always"])
    async def test_hardline_is_refused_without_asking(self, jails: Jails, tmp_path: Path, answer: str) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer(answer, seen))
        book = ApprovalBook(PermanentAllows(["recursive_delete", "delete_root_path"]))
        book.restore(ctx.session_id, ["recursive_delete", "delete_root_path"])
        outcome = await authorize_command("rm -rf /", ctx, book, ApprovalsConfig())
        assert not outcome.allowed and seen == []
        assert "hardline blocklist" in outcome.denial_message()

    async def test_unanswered_request_times_out_to_deny(self, jails: Jails, tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
        async def never(request: ApprovalRequest) -> str:
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        ctx = make_ctx(jails, tmp_path, approver=never)
        start = trio.current_time()
        outcome = await authorize_command("rm -r a", ctx, ApprovalBook(), ApprovalsConfig(timeout=300))
        assert trio.current_time() - start == pytest.approx(300)
        assert not outcome.allowed and "no answer within 300 s" in outcome.denial_message()

    async def test_non_interactive_is_denied_without_asking(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", seen), interactive=False)
        outcome = await authorize_command("rm -r a", ctx, ApprovalBook(), ApprovalsConfig())
        assert not outcome.allowed and seen == []

    @pytest.mark.parametrize("command", ["ls", "cp a b", "mv a b", "echo x > f", "install -m 755 a b"])
    async def test_ordinary_command_never_asks(self, jails: Jails, tmp_path: Path, command: str) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", seen))
        assert (await authorize_command(command, ctx, ApprovalBook(), ApprovalsConfig())).allowed
        assert seen == []


class TestNeverRun:
    """``approvals.deny`` globs and ``sudo -S`` are refused before the session's policy (--yolo, mode: off) is asked."""

    @pytest.mark.parametrize(
        "command", ["git push --force origin main", "GIT PUSH -f", 'g"i"t push origin', "bash -c 'git push'", "cd x && git push", "(git push)"]
    )
    async def test_a_deny_glob_refuses_every_spelling(self, jails: Jails, tmp_path: Path, command: str) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", seen))  # "once" for everything: as --yolo
        config = ApprovalsConfig(deny=["git push*"])
        outcome = await authorize_command(command, ctx, ApprovalBook(), config)
        assert not outcome.allowed and seen == []
        assert "approvals.deny" in outcome.denial_message() and "git push" in outcome.denial_message()

    async def test_a_deny_glob_wins_over_a_permanent_allow(self, jails: Jails, tmp_path: Path) -> None:
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", []))
        book = ApprovalBook(PermanentAllows(["recursive_delete"]))
        outcome = await authorize_command("rm -rf build", ctx, book, ApprovalsConfig(deny=["rm -rf *"]))
        assert not outcome.allowed and outcome.deny_rule == "rm -rf *"

    async def test_a_command_no_glob_matches_goes_on(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", seen))
        config = ApprovalsConfig(deny=["git push*"])
        assert (await authorize_command("git status", ctx, ApprovalBook(), config)).allowed
        assert (await authorize_command("echo 'git push later'", ctx, ApprovalBook(), config)).allowed
        assert not (await authorize_command("git reset --hard", ctx, ApprovalBook(), config)).allowed
        assert len(seen) == 1 and seen[0].command == "git reset --hard"

    @pytest.mark.parametrize("command", ["echo hunter2 | sudo -S apt install x", "sudo -S -k whoami"])
    async def test_sudo_stdin_is_refused(self, jails: Jails, tmp_path: Path, command: str) -> None:
        seen: list[ApprovalRequest] = []
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", seen))
        outcome = await authorize_command(command, ctx, ApprovalBook(), ApprovalsConfig())
        assert not outcome.allowed and seen == [] and outcome.sudo_stdin
        assert "sudo -S" in outcome.denial_message()

    async def test_the_tool_reports_a_deny_rule_and_runs_nothing(self, jails: Jails, tmp_path: Path) -> None:
        tools = make_tools(approvals=ApprovalsConfig(deny=["touch *"]))
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", []))
        result = await call(tools, ctx, command="touch made.txt")
        assert result["status"] == "denied" and "approvals.deny" in result["error"]
        assert not (tmp_path / "made.txt").exists()


class TestTerminalApprovals:
    """The terminal tool runs approved commands and reports denials the model can act on."""

    async def test_denied_command_does_not_run(self, jails: Jails, tmp_path: Path) -> None:
        tools = make_tools()
        ctx = make_ctx(jails, tmp_path, approver=_answer("deny", []))
        (tmp_path / "keep.txt").write_text("x")
        result = await call(tools, ctx, command="rm -r keep.txt")
        assert result["status"] == "denied"
        assert "Do not retry" in result["error"]
        assert (tmp_path / "keep.txt").exists()

    async def test_approved_command_runs_and_session_approval_sticks(self, jails: Jails, tmp_path: Path) -> None:
        seen: list[ApprovalRequest] = []
        tools = make_tools()
        ctx = make_ctx(jails, tmp_path, approver=_answer("session", seen))
        (tmp_path / "a").write_text("x")
        (tmp_path / "b").write_text("x")
        assert (await call(tools, ctx, command="rm -r a"))["exit_code"] == 0
        assert (await call(tools, ctx, command="rm -r b"))["exit_code"] == 0
        assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
        assert len(seen) == 1
        assert tools.approvals.for_session(ctx.session_id).snapshot() == ["recursive_delete"]

    async def test_hardline_command_is_a_tool_error_and_does_not_run(self, jails: Jails, tmp_path: Path) -> None:
        tools = make_tools()
        ctx = make_ctx(jails, tmp_path, approver=_answer("once", []))
        result = await call(tools, ctx, command=":(){ :|:& };:")
        assert result["status"] == "denied"
        assert "never run" in result["error"] and "fork bomb" in result["error"]

    @pytest.mark.parametrize("command", ["shutdown -h now", "reboot", "init 0", "systemctl reboot", "kill -1", "rm -rf /etc"])
    async def test_powering_off_and_wiping_are_refused_whatever_the_answer(
        self, hostile_jails: Jails, tmp_path: Path, command: str
    ) -> None:
        seen: list[ApprovalRequest] = []
        tools = make_tools()
        ctx = make_ctx(hostile_jails, tmp_path, approver=_answer("always", seen))
        result = await call(tools, ctx, command=command)
        assert result["status"] == "denied" and "hardline blocklist" in result["error"] and seen == []

    def test_book_restore_and_forget(self) -> None:
        book = ApprovalBook()
        book.restore("s1", ["rm", "mv"])
        assert book.for_session("s1").snapshot() == ["mv", "rm"]
        book.forget("s1")
        assert book.for_session("s1").snapshot() == []
