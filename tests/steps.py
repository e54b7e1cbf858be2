"""Counting scheduler steps of chosen tasks, for tests that bound the event loop's work."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import trio


class TaskSteps(trio.abc.Instrument):
    """Counts the steps of the tasks ``matches`` accepts."""

    def __init__(self, matches: Callable[[trio.lowlevel.Task], bool]) -> None:
        self.matches = matches
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if self.matches(task):
            self.count += 1


@contextmanager
def counted_steps(matches: Callable[[trio.lowlevel.Task], bool]) -> Iterator[TaskSteps]:
    """Count the steps of the matching tasks while the block runs."""
    steps = TaskSteps(matches)
    trio.lowlevel.add_instrument(steps)
    try:
        yield steps
    finally:
        trio.lowlevel.remove_instrument(steps)


def steps_of_current_task() -> Callable[[trio.lowlevel.Task], bool]:
    """A matcher for the calling task alone."""
    current = trio.lowlevel.current_task()
    return lambda task: task is current
