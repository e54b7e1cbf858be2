"""A compression makes the session forget its read counts: the summarised file is sent in full again."""

from __future__ import annotations

import json
from pathlib import Path

from config.loader import Config
from config.providers import ModelConfig
from config.recovery import RetryConfig
from messages.events import StatusUpdate
from tests.session.harness import open_harness, run_turn

SUMMARY = "## Active Task\nRead the big files.\n## Completed Actions\nRead files 0-3."


def read_call(i: int, call_id: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "read_file", "arguments": {"path": f"big{i}.txt"}}]}


class TestReadsAfterCompression:
    """A file read before a compression, read again after it, comes back whole, not as 'unchanged'."""

    async def test_reread_after_compression_is_full(self, tmp_path: Path) -> None:
        # As in test_compression: the threshold is first crossed by the second call of the fifth turn.
        config = Config(model=ModelConfig(context_length=23_600), retry=RetryConfig(max_retries=0))
        async with open_harness(tmp_path, config) as h:
            for i in range(5):
                (h.workdir / f"big{i}.txt").write_text("\n".join(f"line {i}-{n} " + "x" * 60 for n in range(120)))
            handle, events_in, _ = await h.start_session()
            for i in range(4):
                h.provider.push(read_call(i, f"r{i}"), {"text": f"read {i}"})
                await run_turn(handle, events_in, f"read big{i}.txt")
            h.provider.push(read_call(4, "r4"), {"text": SUMMARY}, {"text": "all read"})
            _, events = await run_turn(handle, events_in, "read big4.txt")
            assert any(isinstance(e, StatusUpdate) and e.kind == "compressing" for e in events)
            h.provider.push(read_call(0, "again"), {"text": "done"})
            await run_turn(handle, events_in, "read big0.txt once more")
            reply = json.loads(h.provider.requests[-1].body["messages"][-1]["content"])
            assert "1|line 0-0 " in reply["content"] and "status" not in reply
