"""The approval policies (manual, smart, off), --yolo, cron_mode, and the permanent allow list in config.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from config.loader import load_config
from tools.approval_allowlist import AllowListError, PermanentAllows, add_to_config_file
from tools.approval_policy import ApprovalPolicy, parse_rating
from tools.context import ApprovalAnswer, ApprovalRequest

REQUEST = ApprovalRequest(command="systemctl restart nginx", description="stop or disable a system service", tool="terminal")


class _User:
    """Records what it is asked and answers ``decision``."""

    def __init__(self, decision: str = "once") -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        return ApprovalAnswer(self.decision, "the user")  # type: ignore[arg-type]  # the fake's decision is one of the answer's literals


def _rater(reply: str | Exception):
    async def rate(command: str) -> str:
        if isinstance(reply, Exception):
            raise reply
        return reply

    return rate


class TestPolicy:
    """Each mode and toggle decides as Hermes's policies do, and says who decided."""

    async def test_manual_asks(self) -> None:
        user = _User("session")
        assert ApprovalAnswer("session", "the user") == await ApprovalPolicy().decide(REQUEST, user)
        assert [REQUEST] == user.asked

    async def test_off_approves_without_asking(self) -> None:
        user = _User("deny")
        answer = await ApprovalPolicy(mode="off").decide(REQUEST, user)
        assert ("once", "approvals.mode: off") == (answer.decision, answer.decided_by)
        assert [] == user.asked

    @pytest.mark.parametrize(
        ("reply", "decision", "asked"),
        [
            ("LOW", "once", False),
            ("Rating: low risk, routine.", "once", False),
            ("DANGEROUS", "deny", False),
            ("uncertain", "deny", True),
            ("I am not sure what this does", "deny", True),
            (RuntimeError("aux model down"), "deny", True),
        ],
    )
    async def test_smart_follows_the_rating_and_asks_when_unsure(self, reply: str | Exception, decision: str, asked: bool) -> None:
        user = _User("deny")
        answer = await ApprovalPolicy(mode="smart", rate=_rater(reply)).decide(REQUEST, user)
        assert decision == answer.decision
        assert asked == bool(user.asked)
        if not asked:
            assert answer.decided_by.startswith("approvals.mode: smart")

    async def test_yolo_approves_even_in_a_session_nobody_can_answer(self) -> None:
        answer = await ApprovalPolicy(interactive=False, yolo=True).decide(REQUEST, _User("deny"))
        assert "once" == answer.decision and "--yolo" in answer.decided_by

    @pytest.mark.parametrize(("cron_mode", "decision"), [("deny", "deny"), ("approve", "once")])
    async def test_cron_sessions_follow_cron_mode(self, cron_mode: str, decision: str) -> None:
        user = _User("once")
        answer = await ApprovalPolicy(source="cron", cron_mode=cron_mode).decide(REQUEST, user)
        assert decision == answer.decision and f"approvals.cron_mode: {cron_mode}" in answer.decided_by
        assert [] == user.asked

    async def test_non_interactive_is_denied_without_asking(self) -> None:
        user = _User("once")
        answer = await ApprovalPolicy(interactive=False).decide(REQUEST, user)
        assert "deny" == answer.decision and [] == user.asked

    def test_rating_parse(self) -> None:
        assert "dangerous" == parse_rating("**DANGEROUS** - deletes data")
        assert "low" == parse_rating("LOW")
        assert "uncertain" == parse_rating("")

    @pytest.mark.parametrize("reply", ["This is not LOW risk", "LOW, or maybe DANGEROUS", "I would say low"])
    def test_no_approval_out_of_hedged_prose(self, reply: str) -> None:
        """Only a reply that opens with its one rating counts: "not LOW" approves nothing."""
        assert "uncertain" == parse_rating(reply)


class TestAllowList:
    """``always`` keys are saved in config.yaml without disturbing the rest of the file, and load back."""

    def test_appends_a_section_and_keeps_comments(self, tmp_path: Path) -> None:
        path = tmp_path / "config.yaml"
        path.write_text("# my settings\nmodel:\n  default: gpt-x  # the usual one\n")
        add_to_config_file(path, ["systemctl"])
        text = path.read_text()
        assert text.startswith("# my settings\nmodel:\n  default: gpt-x  # the usual one\n")
        assert ("systemctl",) == load_config(tmp_path).approvals.allow

    def test_updates_an_existing_section_in_place(self, tmp_path: Path) -> None:
        path = tmp_path / "config.yaml"
        path.write_text("approvals:\n  mode: smart\n  allow: [mkfs]\n\n# web search\nweb:\n  backend: none\n")
        add_to_config_file(path, ["mkfs", "sql_drop"])
        text = path.read_text()
        assert text.endswith("\n# web search\nweb:\n  backend: none\n")
        data = yaml.safe_load(text)
        assert {"mode": "smart", "allow": ["mkfs", "sql_drop"]} == data["approvals"]
        assert "none" == load_config(tmp_path).web.backend

    def test_a_file_that_is_not_a_mapping_is_an_error_and_left_alone(self, tmp_path: Path) -> None:
        path = tmp_path / "config.yaml"
        path.write_text("- just\n- a list\n")
        with pytest.raises(AllowListError):
            add_to_config_file(path, ["mkfs"])
        assert "- just\n- a list\n" == path.read_text()

    async def test_add_saves_only_new_keys(self, tmp_path: Path) -> None:
        path = tmp_path / "config.yaml"
        allows = PermanentAllows(["mkfs"], path)
        await allows.add(["mkfs"])
        assert not path.exists()
        await allows.add(["mkfs", "systemctl"])
        assert ["mkfs", "systemctl"] == allows.snapshot()
        assert ("systemctl",) == load_config(tmp_path).approvals.allow
