"""Cron in a real daemon: jobs added, run as cron sessions, listed, paused, removed, kept across a restart."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


def _start(home: Path, provider: ScriptedProviderProcess, **sections: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    (home / "config.yaml").write_text(
        json.dumps({"model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url}, **sections})
    )
    return DaemonProcess(home).start()


def _cron(home: Path, *args: str) -> Any:
    result = run_cli(home, "cron", *args, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def _wait_for_run(home: Path, job_id: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _cron(home, "status", job_id)["jobs"][0]
        if job["last_status"] is not None and not job["running"]:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never finished a run")


class TestCron:
    """The commands, a run through a real session, and the jobs' life across a restart."""

    def test_add_run_now_list_pause_remove_and_restart(self, home: Path, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = _start(home, provider)
        try:
            added = _cron(
                home, "add", "--schedule", "0 9 * * 1-5", "--prompt", "Summarise the inbox.", "--name", "inbox",
                "--skills", "git-commit-hygiene",
            )
            job = added["jobs"][0]
            assert job["name"] == "inbox" and job["state"] == "active" and job["next_run"]
            provider.push({"text": "Three new mails, none urgent."})
            assert _cron(home, "run-now", job["id"])["jobs"][0]["running"] is True
            ran = _wait_for_run(home, job["id"])
            assert ran["last_status"] == "ok" and ran["last_output"] == "Three new mails, none urgent."
            asked = provider.requests()[-1]["body"]
            assert asked["messages"][-1] == {"role": "user", "content": (
                "Before you start, load these skills with skill_view and follow them: git-commit-hygiene.\n\n"
                "Summarise the inbox."
            )}
            assert "running as a scheduled job" in asked["messages"][0]["content"]  # the cron platform hint
            assert not any(t["function"]["name"] == "clarify" for t in asked.get("tools", []))  # no one to ask
            sessions = json.loads(run_cli(home, "sessions", "list", "--json").stdout)
            assert any(s["source"] == "cron" for s in sessions["sessions"]), sessions
            paused = _cron(home, "pause", job["id"])["jobs"][0]
            assert paused["state"] == "paused" and paused["next_run"] is None
            assert "cron" in run_cli(home, "tree").stdout
        finally:
            daemon.stop()
        daemon = DaemonProcess(home).start()
        try:
            kept = _cron(home, "list")["jobs"]
            assert [(j["id"], j["state"], j["last_status"]) for j in kept] == [(job["id"], "paused", "ok")]
            assert _cron(home, "resume", job["id"])["jobs"][0]["next_run"]
            _cron(home, "remove", job["id"])
            assert _cron(home, "list")["jobs"] == []
        finally:
            daemon.stop()

    def test_bad_requests_are_clear_errors(self, daemon: DaemonProcess) -> None:
        for args, status, expected in (
            (("add", "--schedule", "every fortnight", "--prompt", "x"), 1, "a number and a unit"),
            (("add", "--schedule", "every 1h", "--prompt", "x", "--deliver", "telegram::1"), 1, "PLATFORM[:CHAT[:THREAD]]"),
            (("add", "--schedule", "every 1h", "--prompt", "x", "--deliver", "myspace:foo"), 1,
             "'myspace' is not a messaging platform here (telegram, discord, slack, matrix, mattermost, signal, email, whatsapp)"),
            (("add", "--schedule", "every 1h", "--prompt", "x", "--deliver", "nowhere:123"), 1, "'nowhere' is not a messaging"),
            (("add", "--schedule", "every 1h", "--prompt", "x", "--deliver", "telegram:abc"), 1, "chat or thread is a number"),
            (("pause", "cron-000000000000"), 2, "no cron job"),
        ):
            result = run_cli(daemon.home, "cron", *args)
            assert result.returncode == status, result.stdout + result.stderr
            assert expected in result.stderr, result.stdout + result.stderr
        assert _cron(daemon.home, "list")["jobs"] == []


class TestWhatTheUserIsTold:
    """A paused job does not run now; an answer that was not delivered is a failed run, not "ok"."""

    def test_run_now_on_a_paused_job(self, daemon: DaemonProcess) -> None:
        job = _cron(daemon.home, "add", "--schedule", "every 1h", "--prompt", "x")["jobs"][0]
        _cron(daemon.home, "pause", job["id"])
        result = run_cli(daemon.home, "cron", "run-now", job["id"])
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"job {job['id']} is paused: resume it first" in result.stderr
        assert _cron(daemon.home, "status", job["id"])["jobs"][0]["last_status"] is None  # it did not run

    def test_an_undelivered_answer_is_a_failure(self, home: Path, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = _start(home, provider)  # no messaging platform is configured
        try:
            job = _cron(home, "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "telegram:42")["jobs"][0]
            provider.push({"text": "the answer"})
            _cron(home, "run-now", job["id"])
            ran = _wait_for_run(home, job["id"])
            assert ran["last_status"] == "failed", ran
            assert ran["last_error"].startswith("the answer was not delivered to telegram:42: "), ran
            shown = run_cli(home, "cron", "status", job["id"])
            assert "last: failed" in shown.stdout and "not delivered" in shown.stdout
        finally:
            daemon.stop()


class TestInterrupt:
    """A run is a session like any other: interrupting it ends the run, reported as failed."""

    def test_an_interrupted_run_fails(self, home: Path, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = _start(home, provider, sandbox={"mode": "full-access"})
        try:
            job = _cron(home, "add", "--schedule", "every 1d", "--prompt", "Run the long check.")["jobs"][0]
            provider.push({"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "sleep 120", "timeout": 300}}]})
            _cron(home, "run-now", job["id"])
            deadline, session = time.monotonic() + 30, None
            while session is None:
                assert time.monotonic() < deadline, "the run's session never showed"
                live = json.loads(run_cli(home, "sessions", "list", "--json").stdout)["sessions"]
                session = next((s["id"] for s in live if s["source"] == "cron" and s["ended_at"] is None), None)
                time.sleep(0.1)
            deadline = time.monotonic() + 30
            while "tool:t1" not in run_cli(home, "tree").stdout:
                assert time.monotonic() < deadline, "the run's tool call never started"
                time.sleep(0.1)
            assert run_cli(home, "interrupt", session).returncode == 0
            ran = _wait_for_run(home, job["id"])
            assert ran["last_status"] == "failed" and "interrupted" in ran["last_error"], ran
        finally:
            daemon.stop()


class TestBudgets:
    """A job's own token budget ends its run's turn; the run is reported failed, with what it said."""

    def test_a_token_budget(self, home: Path, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = _start(home, provider, sandbox={"mode": "full-access"})
        try:
            job = _cron(home, "add", "--schedule", "every 1d", "--prompt", "Loop.", "--token-budget", "1")["jobs"][0]
            provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "true"}}]},
                {"text": "Stopped early: the budget ran out."},
            )
            _cron(home, "run-now", job["id"])
            ran = _wait_for_run(home, job["id"])
            assert ran["last_status"] == "failed" and "budget" in ran["last_error"], ran
            assert "Stopped early" in ran["last_error"]
        finally:
            daemon.stop()

    def test_budgets_must_be_positive(self, daemon: DaemonProcess) -> None:
        result = run_cli(daemon.home, "cron", "add", "--schedule", "every 1h", "--prompt", "x", "--token-budget", "0")
        assert result.returncode == 1 and "must be positive" in result.stderr


class TestCronjobTool:
    """The model schedules jobs through ``cronjob``, behind the approval of a dangerous command."""

    def _tool_turn(self, home: Path, provider: ScriptedProviderProcess, args: dict[str, Any]) -> dict[str, Any]:
        provider.reset()
        provider.push({"tool_calls": [{"id": "c1", "name": "cronjob", "arguments": args}]}, {"text": "done"})
        result = run_cli(home, "chat", "-q", "schedule it", timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        tool_messages = [m for m in provider.requests()[-1]["body"]["messages"] if m.get("role") == "tool"]
        return json.loads(tool_messages[-1]["content"])

    def test_approved_creates_a_job(self, home: Path, provider: ScriptedProviderProcess) -> None:
        daemon = _start(home, provider, approvals={"mode": "off"})
        try:
            answer = self._tool_turn(home, provider, {
                "action": "create", "schedule": "every 1d", "prompt": "Check the backups.", "name": "backups",
            })
            assert answer["success"] is True and answer["job"]["name"] == "backups", answer
            assert [j["name"] for j in _cron(home, "list")["jobs"]] == ["backups"]
            listed = self._tool_turn(home, provider, {"action": "list"})
            assert [j["job_id"] for j in listed["jobs"]] == [answer["job_id"]] and listed["count"] == 1
        finally:
            daemon.stop()

    def test_update_run_and_scripts(self, home: Path, provider: ScriptedProviderProcess) -> None:
        """Hermes's update and run, and a job's script: run jailed (the daemon's home and secrets out of
        its sight), its output the run's context, or, with no_agent, the whole answer."""
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        (home / "config.yaml").write_text(json.dumps({
            "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
            "approvals": {"mode": "off"},
        }))
        (home / "scripts").mkdir()
        (home / "scripts/probe.sh").write_text(
            f"test -e {home}/config.yaml && echo home-visible || echo home-hidden\necho variable:${{HX_PROBE_API_TOKEN:-unset}}\n"
        )
        (home / "scripts/disk.py").write_text("print('disk at 91%')\n")
        daemon = DaemonProcess(home)
        daemon.extra_env = {"HX_PROBE_API_TOKEN": "hx-probe-secret-7d1e"}
        daemon.start()
        try:
            created = self._tool_turn(home, provider, {
                "action": "create", "schedule": "every 1d", "name": "probe", "script": "probe.sh", "no_agent": True,
            })
            job_id = created["job_id"]
            assert created["job"]["no_agent"] is True and created["repeat"] == "forever", created
            ran = self._tool_turn(home, provider, {"action": "run", "job_id": job_id})
            assert ran["success"] is True and ran["job"]["running"] is True, ran
            assert _wait_for_run(home, job_id)["last_output"] == "home-hidden\nvariable:unset"
            updated = self._tool_turn(home, provider, {
                "action": "update", "job_id": job_id, "no_agent": False, "script": "disk.py",
                "prompt": "Report the disk.", "schedule": "every 2h", "repeat": 3,
            })
            assert (updated["job"]["schedule"], updated["job"]["repeat"], updated["job"]["script"]) == ("every 2h", "1/3", "disk.py")
            provider.push({"text": "The disk is nearly full."})
            _cron(home, "run-now", job_id)
            deadline = time.monotonic() + 30
            while _cron(home, "status", job_id)["jobs"][0]["last_output"] != "The disk is nearly full.":
                assert time.monotonic() < deadline, "the agent run never finished"
                time.sleep(0.1)
            asked = provider.requests()[-1]["body"]["messages"][-1]["content"]
            assert "## Script output" in asked and "disk at 91%" in asked and asked.endswith("Report the disk."), asked
            for args, needle in (
                ({"action": "update", "job_id": job_id, "script": "../config.yaml"}, "outside"),
                ({"action": "create", "schedule": "every 1d", "prompt": "x", "script": "/etc/passwd"}, "path under"),
                ({"action": "run", "job_id": "cron-nope"}, "Call action='list'"),
                ({"action": "create", "schedule": "every 1d", "prompt": "x", "enabled_toolsets": ["nope"]}, "unknown toolset"),
            ):
                assert needle in self._tool_turn(home, provider, args)["error"], args
            paused = self._tool_turn(home, provider, {"action": "pause", "job_id": "probe"})  # by name, as Hermes takes it
            assert (paused["job"]["job_id"], paused["job"]["state"]) == (job_id, "paused"), paused
            removed = self._tool_turn(home, provider, {"action": "remove", "job_id": job_id})
            assert removed["removed_job"]["id"] == job_id and _cron(home, "list")["jobs"] == []
        finally:
            daemon.stop()

    def test_nobody_to_approve_means_no_job(self, home: Path, provider: ScriptedProviderProcess) -> None:
        daemon = _start(home, provider, approvals={"timeout": 1})
        try:
            answer = self._tool_turn(home, provider, {"action": "create", "schedule": "every 1d", "prompt": "x"})
            assert "denied" in answer["error"], answer
            assert _cron(home, "list")["jobs"] == []
        finally:
            daemon.stop()


class TestApprovals:
    """A job's own approvals setting answers its runs' dangerous commands; without one, cron_mode does."""

    def test_a_job_that_may_and_one_that_may_not(self, home: Path, provider: ScriptedProviderProcess, tmp_path: Path) -> None:
        provider.reset()
        # full-access: the targets lie outside the jail's writable roots, which would stop rm on its own.
        daemon = _start(home, provider, sandbox={"mode": "full-access"})
        kept, removed = tmp_path / "kept", tmp_path / "removed"
        kept.mkdir()
        removed.mkdir()
        try:
            for target, extra in ((kept, ()), (removed, ("--approvals", "approve"))):
                job = _cron(home, "add", "--schedule", "every 1d", "--prompt", "Clean up.", *extra)["jobs"][0]
                assert job["approvals"] == (extra[1] if extra else None)
                provider.push(
                    {"tool_calls": [{"id": "rm", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                    {"text": "Cleaned."},
                )
                _cron(home, "run-now", job["id"])
                assert _wait_for_run(home, job["id"])["last_status"] == "ok"
            assert kept.exists() and not removed.exists()
            denied = [m for m in provider.requests()[1]["body"]["messages"] if m["role"] == "tool"][0]["content"]
            assert "cron_mode" in denied, denied
            assert run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--approvals", "maybe").returncode != 0
        finally:
            daemon.stop()
