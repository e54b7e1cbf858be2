"""``process:proc_<id>`` actors: background commands a session's terminal
started. They belong to the session, not to the turn, so they outlive it;
stopping one (``hermes-actors kill``, the process tool, the session ending)
stops its whole process group."""

from __future__ import annotations

from typing import Any

from actors import Actor
from messages.supervision import ActorState
from tools.background import BackgroundSpec, ProcessRecord, run_background_process
from tools.background._runner import Notify

__all__ = ["ProcessActor"]


class ProcessActor(Actor[Any]):
    """Runs one background command until it exits or is stopped."""

    kind = "process"
    mailbox_capacity = 1

    def __init__(self, spec: BackgroundSpec, record: ProcessRecord, notify: Notify) -> None:
        super().__init__()
        self.spec = spec
        self.record = record
        self.notify = notify

    def snapshot_details(self) -> dict[str, Any]:
        info = self.record.info()
        return {"pid": info.pid, "status": info.status.value, "command": self.spec.command[:120]}

    async def on_start(self) -> None:
        assert self._nursery is not None
        await self._nursery.start(run_background_process, self.spec, self.record, self.notify)

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        self.activity = self.spec.command[:80]
        await self.record.wait_finished()
