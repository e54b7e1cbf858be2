"""Write a Hermes Agent 0.19.0 home, made by Hermes's own code, for the ``import-hermes`` tests.

    HERMES_HOME=/tmp/out /path/to/hermes-venv/bin/python docs/hermes_pin/hermes_home.py tests/fixtures/hermes_0_19/home

Run it with a Python that has ``hermes-agent==0.19.0`` installed (``pin.py``'s throwaway virtualenv, or
any other) and ``HERMES_HOME`` pointing at the output directory. Sessions go through Hermes's
``SessionDB`` (so ``state.db`` has its real schema), memories through its ``MemoryStore``, a skill
through its ``skill_manage`` handler; ``config.yaml`` is the user's file of ``tests/fixtures/hermes_config.yaml``.
The tests only read what this wrote (committed, a few hundred kilobytes at most): CI never runs Hermes.
The texts hold the hostile pieces the tests look for: markup, a script tag, a credential-shaped string.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
USER_CONFIG = HERE.parents[1] / "tests" / "fixtures" / "hermes_config.yaml"
T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC: fixed times, so the fixture is the same on every run


def _sessions(home: Path) -> None:
    from hermes_state import SessionDB

    db = SessionDB(home / "state.db")
    db.create_session("20260101_000000_aaaa01", "cli", model="anthropic/claude-sonnet-4.6", cwd="/home/u/project")
    db.set_session_title("20260101_000000_aaaa01", "fix the <b>parser</b>")
    call = {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": json.dumps({"command": "cat notes.txt"})}}
    for role, content, extra in (
        ("user", "Why does the parser fail on <script>alert('u')</script>?", {}),
        ("assistant", "Let me look at the notes.", {"tool_calls": [call]}),
        ("tool", '{"output": "<script>alert(\'tool\')</script>\\nOPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx0123456789", "exit_code": 0}',
         {"tool_call_id": "call_1", "tool_name": "terminal"}),
        ("assistant", "The notes hold a script tag; the parser is fine.", {"finish_reason": "stop"}),
    ):
        db.append_message("20260101_000000_aaaa01", role, content, **extra)
    db.update_token_counts("20260101_000000_aaaa01", input_tokens=1200, output_tokens=80)
    db.end_session("20260101_000000_aaaa01", "user_exit")
    # A Telegram chat, still open, with a subagent session under it.
    db.create_session("20260102_090000_bbbb02", "telegram", model="gpt-4.1", user_id="42")
    db.append_message("20260102_090000_bbbb02", "user", "remind me what zanzibar means")
    db.append_message("20260102_090000_bbbb02", "assistant", "Zanzibar is an archipelago off Tanzania.")
    db.create_session("20260102_090100_cccc03", "subagent", model="gpt-4.1", parent_session_id="20260102_090000_bbbb02")
    db.append_message("20260102_090100_cccc03", "user", "look it up")
    db.append_message("20260102_090100_cccc03", "assistant", "done")
    db.close()
    # Fixed times: Hermes stamps rows with the clock.
    conn = sqlite3.connect(home / "state.db")
    with conn:
        for offset, (sid,) in enumerate(conn.execute("SELECT id FROM sessions ORDER BY id").fetchall()):
            conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (T0 + offset * 86400, sid))
        conn.execute("UPDATE sessions SET ended_at = ? WHERE ended_at IS NOT NULL", (T0 + 600,))
        conn.execute("UPDATE messages SET timestamp = ? + id * 10", (T0,))
    conn.execute("VACUUM")
    conn.close()


def _memories() -> None:
    from tools.memory_tool import MemoryStore

    store = MemoryStore()
    store.load_from_disk()
    store.add("memory", "The project builds with `make`; tests run with pytest -q.")
    store.add("memory", "The user's server is at 10.0.0.5 <admin panel on :8080>.")
    store.add("user", "Prefers short answers; writes British English.")


def _skill(home: Path) -> None:
    skill = home / "skills" / "devops" / "deploy-notes"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy-notes\ndescription: How this user deploys the web app.\n---\n\n"
        "# Deploy notes\n\n1. Run `make release`.\n2. Push the tag.\n",
        encoding="utf-8",
    )
    (skill / "references").mkdir(exist_ok=True)
    (skill / "references" / "hosts.md").write_text("web-1, web-2\n", encoding="utf-8")


def main(out: Path) -> None:
    """Write the home into ``out`` (it must be ``HERMES_HOME``)."""
    home = Path(os.environ["HERMES_HOME"]).resolve()
    if home != out.resolve():
        raise SystemExit(f"HERMES_HOME ({home}) must be the output directory ({out})")
    home.mkdir(parents=True, exist_ok=True)
    _sessions(home)
    _memories()
    _skill(home)
    shutil.copyfile(USER_CONFIG, home / "config.yaml")
    (home / "SOUL.md").write_text("You are Ada, a terse and careful engineer.\n", encoding="utf-8")
    (home / ".env").write_text(
        "# Hermes keys\nOPENROUTER_API_KEY=sk-or-v1-fixture0000000000000000000000000000\nTELEGRAM_BOT_TOKEN='123:abc'\n",
        encoding="utf-8",
    )
    for leftover in ("state.db-wal", "state.db-shm"):
        (home / leftover).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(Path(sys.argv[1]))
