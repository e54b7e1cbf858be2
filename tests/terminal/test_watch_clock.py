"""watch_patterns with a real process on a mock clock: the 15 s windows and the breaker.

The clock never moves by itself (``mock_clock``: rate 0, no autojump); the test moves it
with ``jump``. The process echoes what the test submits to its stdin, so each match is
produced exactly when the test wants it, and the test waits for its output by spinning
on checkpoints (bounded in real time), never by sleeping.
"""

from __future__ import annotations

from tests.jail.fixtures import Jails

import time
from collections.abc import Callable
from pathlib import Path

import trio
import trio.testing

from config.terminal import BackgroundConfig
from tools.background import BackgroundSpec, ProcessNotification, ProcessRecord, ProcessTable, run_background_process

ECHO = 'while read -r line; do echo "$line"; done'


async def _until(predicate: Callable[[], bool], real_seconds: float = 5.0) -> None:
    deadline = time.monotonic() + real_seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await trio.lowlevel.checkpoint()


class _Echo:
    """One echoing background process with its notifications."""

    def __init__(self, table: ProcessTable, record: ProcessRecord) -> None:
        self.table = table
        self.record = record
        self.notes: list[ProcessNotification] = []
        self._sent = 0

    async def say(self, *lines: str) -> None:
        """Submit ``lines`` and wait until the process has echoed them and they were read."""
        await self.record.write("".join(f"{line}\n" for line in lines))
        self._sent += sum(len(line) + 1 for line in lines)
        await _until(lambda: self.record.output.total_chars >= self._sent)


async def _start(
    jails: Jails, nursery: trio.Nursery, tmp_path: Path, table: ProcessTable, patterns: tuple[str, ...]
) -> _Echo:
    spec = BackgroundSpec(
        command=ECHO, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"}, watch_patterns=patterns,
        kill_grace_seconds=0.2, jail=jails.jail(tmp_path),
    )  # fmt: skip
    record = table.create(spec)
    echo = _Echo(table, record)
    await nursery.start(run_background_process, spec, record, echo.notes.append)
    return echo


class TestWatchOnMockClock:
    """Windows and the breaker follow trio's clock, checked against a live process."""

    async def test_window_suppression_and_promotion(
        self, jails: Jails, tmp_path: Path, mock_clock: trio.testing.MockClock, nursery: trio.Nursery
    ) -> None:
        echo = await _start(jails, nursery, tmp_path, ProcessTable(), ("ERR",))
        await echo.say("ERR one", "fine")
        assert [(n.kind, n.output) for n in echo.notes] == [("watch", "ERR one")]
        await echo.say("ERR two")
        mock_clock.jump(14.9)
        await echo.say("ERR three")
        assert len(echo.notes) == 1  # still inside the first 15 s window
        mock_clock.jump(0.2)
        await echo.say("ERR four")
        assert (echo.notes[-1].output, echo.notes[-1].suppressed) == ("ERR four", 2)
        await echo.say("ERR five")  # second window suppressed
        mock_clock.jump(15)
        await echo.say("ERR six")
        await echo.say("ERR seven")  # third consecutive suppressed window: the watch gives up
        assert [n.kind for n in echo.notes] == ["watch", "watch", "watch", "watch_disabled"]
        mock_clock.jump(100)
        await echo.say("ERR eight")
        assert len(echo.notes) == 4
        echo.record.close_stdin()
        await echo.record.wait_finished()
        assert echo.notes[-1].kind == "completed" and echo.notes[-1].output.endswith("ERR eight\n")

    async def test_breaker_silences_all_processes_for_30_seconds(
        self, jails: Jails, tmp_path: Path, mock_clock: trio.testing.MockClock, nursery: trio.Nursery
    ) -> None:
        table = ProcessTable(BackgroundConfig(breaker_max_events=3))
        echoes = [await _start(jails, nursery, tmp_path, table, ("HIT",)) for _ in range(5)]
        for echo in echoes[:4]:
            await echo.say("HIT")
        assert [len(echo.notes) for echo in echoes] == [1, 1, 1, 0, 0]  # the 4th event trips it
        mock_clock.jump(29.9)
        await echoes[4].say("HIT in the silence")
        assert echoes[4].notes == []
        mock_clock.jump(0.2)
        await echoes[3].say("HIT after the silence")
        assert [n.output for n in echoes[3].notes] == ["HIT after the silence"]
        assert (table.breaker.trips, table.breaker.dropped) == (1, 2)
        for echo in echoes:
            echo.record.kill()
