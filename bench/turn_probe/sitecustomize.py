"""A probe of where a turn's time goes, loaded into a daemon by ``bench/turn_timeline.py``.

Python imports ``sitecustomize`` at start from ``PYTHONPATH``; this one does nothing unless
``HERMES_TURN_PROBE`` names a file. Then it wraps the turn's parts in the daemon's process (each call's wall
time, and how many are in flight), adds a trio ``Instrument`` (each task step, each task's wait in the run
queue, each sleep of the loop with what the sessions were waiting on meanwhile) and writes it all as JSON to
that file when ``trio.run`` ends. It costs the loop about a tenth of its CPU: read its shares, not its
absolute milliseconds.
"""

from __future__ import annotations

import os

if os.environ.get("HERMES_TURN_PROBE"):
    import atexit
    import collections
    import functools
    import json
    import sys
    import time
    from typing import Any

    import trio

    _OUT = os.environ["HERMES_TURN_PROBE"]
    _now = time.perf_counter
    #: Per part: [calls, seconds].
    _TOTALS: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    _IN_FLIGHT: collections.Counter[str] = collections.Counter()
    #: (start, seconds, sessions in a turn, waiting on the model, on their shell, on the store) per sleep.
    _SLEEPS: list[tuple[float, float, int, int, int, int]] = []
    #: (start, end) of every turn.
    _TURNS: list[tuple[float, float]] = []

    def _add(name: str, seconds: float) -> None:
        total = _TOTALS[name]
        total[0] += 1
        total[1] += seconds

    def _timed(owner: Any, attribute: str, name: str, *, turns: bool = False) -> None:
        """Wrap the coroutine method ``owner.attribute``: its wall time and calls in flight, as ``name``."""
        original = getattr(owner, attribute)

        @functools.wraps(original)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = _now()
            _IN_FLIGHT[name] += 1
            try:
                return await original(*args, **kwargs)
            finally:
                _IN_FLIGHT[name] -= 1
                end = _now()
                _add(name, end - start)
                if turns:
                    _TURNS.append((start, end))

        setattr(owner, attribute, wrapper)

    class _Loop(trio.abc.Instrument):
        """Task steps, run-queue waits and the loop's sleeps."""

        def __init__(self) -> None:
            self._scheduled: dict[trio.lowlevel.Task, float] = {}
            self._step = self._sleep = 0.0

        def before_io_wait(self, timeout: float) -> None:
            self._sleep = _now()

        def after_io_wait(self, timeout: float) -> None:
            if timeout <= 0:
                return  # a poll between batches, not a sleep
            seconds = _now() - self._sleep
            _add("loop.slept", seconds)
            waiting = _IN_FLIGHT
            _SLEEPS.append((self._sleep, seconds, waiting["turn"], waiting["turn.model_call"],
                            waiting["shell.started"] + waiting["shell.exit"], waiting["store.write"]))

        def task_scheduled(self, task: trio.lowlevel.Task) -> None:
            self._scheduled[task] = _now()

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            self._step = _now()
            scheduled = self._scheduled.pop(task, None)
            if scheduled is not None:
                _add("loop.run_queue_wait", self._step - scheduled)

        def after_task_step(self, task: trio.lowlevel.Task) -> None:
            _add("loop.task_step", _now() - self._step)

        def after_run(self) -> None:
            _dump()

    def _dump() -> None:
        with open(_OUT, "w", encoding="utf-8") as out:
            json.dump({"totals": _TOTALS, "sleeps": _SLEEPS, "turns": _TURNS}, out)

    def _run(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), _Loop()]
        return _trio_run(*args, **kwargs)

    atexit.register(_dump)
    _trio_run = trio.run
    # Replacing trio.run for the daemon's one call to it is the point; its generic signature cannot say so.
    trio.run = _run  # type: ignore[assignment]
    # The tree the daemon runs from is its working directory, ahead of any editable install.
    sys.path.insert(0, os.getcwd())
    from actors.session import actor as _actor
    from actors.session import turn as _turn
    from store.sql import writer as _writer
    from tools.jail import resident as _resident

    _timed(_actor.SessionActor, "_run_turn", "turn", turns=True)
    _timed(_turn.TurnJob, "_stream_reply", "turn.model_call")
    _timed(_turn.TurnJob, "_persist", "turn.commit")
    _timed(_turn.TurnJob, "_run_tools", "turn.tool_calls")
    _timed(_actor.SessionActor, "_save_finished_turn", "turn.closing_save")
    _timed(_writer.Writer, "submit", "store.write")
    _timed(_resident.ResidentShell, "_run", "shell.start_command")
    _timed(_resident.ResidentShell, "_answer", "shell.started")
    _timed(_resident.ResidentProcess, "wait", "shell.exit")
