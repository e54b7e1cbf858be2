"""A real tool registry of small test tools, dispatched the way the session does it."""

from __future__ import annotations

from typing import Any

import attrs
import trio

from tests.jail.fixtures import host_pid
from tools.context import ToolContext
from tools.dispatch import dispatch
from tools.parallel import ToolConcurrencyGate
from tools.errors import ToolError
from tools.registry import ToolRegistry
from tools.results import ToolReply, ToolResult
from tools.testing import LocalToolContext


def _schema(**properties: Any) -> dict[str, Any]:
    return {"description": "test tool", "parameters": {"type": "object", "properties": properties}}


_ANY = {}
_STR = {"type": "string"}
_INT = {"type": "integer"}


@attrs.define
class Concurrency:
    """Counts calls running at once."""

    current: int = 0
    peak: int = 0

    def enter(self) -> None:
        self.current += 1
        self.peak = max(self.peak, self.current)

    def leave(self) -> None:
        self.current -= 1


@attrs.define
class ToolBench:
    """A registry + LocalToolContext + gate, with tools whose behaviour the tests can observe."""

    ctx: LocalToolContext
    delay: float = 0.2
    registry: ToolRegistry = attrs.field(factory=ToolRegistry)
    running: Concurrency = attrs.field(factory=Concurrency)
    calls: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    gate: ToolConcurrencyGate = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.gate = ToolConcurrencyGate(self.registry, limit=8)
        reg = self.registry.register
        reg("read_file", "file", _schema(path=_STR, offset=_INT, limit=_INT), self._read_file,
            parallel_safe=True, path_scoped="path")  # fmt: skip
        reg("write_file", "file", _schema(path=_STR, content=_STR), self._write_file, path_scoped="path")
        reg("web_extract", "web", _schema(urls={"type": "array"}), self._web_extract, parallel_safe=True)
        reg("web_search", "web", _schema(query=_STR, limit=_INT), self._web_search, parallel_safe=True,
            max_result_size_chars=10_000_000)  # fmt: skip
        reg("terminal", "terminal", _schema(command=_STR, timeout=_INT, workdir=_STR), self._terminal)
        reg("patch", "file", _schema(path=_STR, old_string=_STR, new_string=_STR), self._patch)
        reg("search_files", "file", _schema(pattern=_STR), self._search_files, parallel_safe=True)

    @property
    def jailed(self) -> bool:
        """Whether the context's processes run in a jail."""
        return self.ctx.jail.policy.jailed

    @property
    def enabled(self) -> frozenset[str]:
        """Every registered tool, as the session's enabled set."""
        return frozenset(self.registry.names()) | {"execute_code", "memory"}

    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolReply:
        """The session's tool-execution path, reduced to dispatch."""
        self.calls.append((name, args))
        return await dispatch(self.registry, name, args, self.ctx)

    async def _slow(self, payload: dict[str, Any]) -> ToolResult:
        self.running.enter()
        try:
            await trio.sleep(self.delay)
        finally:
            self.running.leave()
        return ToolResult(payload)

    async def _read_file(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._slow({"content": f"contents of {args['path']}", "path": args["path"]})

    async def _write_file(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._slow({"written": args["path"]})

    async def _web_extract(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._slow({"results": [{"url": u, "content": f"page {u}"} for u in args["urls"]]})

    async def _web_search(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        # limit = kilobytes of payload: the "large responses" row.
        return ToolResult({"data": "x" * (1024 * args.get("limit", 1))})

    async def _terminal(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult({"output": args["command"], "exit_code": 0, "args": sorted(args)})

    async def _patch(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise RuntimeError("disk on fire with key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")

    async def _search_files(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise ToolError(f"no such directory for {args['pattern']}")


PRINT_PIDS = (
    "def hx_pids(*pids):\n"
    "    import os\n"
    "    def start(p):\n"
    "        with open(f'/proc/{p}/stat') as stat:\n"
    "            return stat.read().rsplit(')', 1)[1].split()[19]\n"
    "    print(' '.join(f'{p}:{os.readlink(f\"/proc/{p}/ns/pid\")}:{start(p)}' for p in pids), flush=True)\n"
)
"""Script code defining ``hx_pids(*pids)``: prints each pid with its PID namespace and start time, for
:func:`host_pids`."""


def host_pids(line: str) -> list[int]:
    """The host pids of a line printed by ``hx_pids`` (0 for one that is gone)."""
    found = []
    for item in line.split():
        pid, rest = item.split(":", 1)
        namespace, start = rest.rsplit(":", 1)
        found.append(host_pid(int(pid), namespace, start))
    return found


def pid_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except FileNotFoundError:
        return False
    return data[data.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")

