"""Benchmarks of the session's pure libraries; prints its figures.

The per-turn cost the session actor pays in these libraries (target: a small part of the 1 ms
framework budget per turn):

- check_alternation over a 200-message history;
- ToolCallValidator.validate of a 3-call response, and guardrail before/after for those 3 calls;
- the streaming memory-context scrubber over 1 MB of text in 20-character deltas;
- one compression pass over a 300-message history (summariser stubbed: the model call is not ours);
- system prompt assembly with a context file and a SOUL.md (once per session);
- the typed history at its boundaries: a Chat Completions body built from a 200-message history (every
  provider call), and 200 stored messages typed on load (once per wake).

Run: .venv/bin/python bench/bench_session_libs.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from conversation.compression import ContextCompressor
from conversation.fencing import StreamingContextScrubber
from conversation.guardrails import ToolCallGuardrailController
from conversation.history import check_alternation
from conversation.prompt import PromptSpec, assemble_system_prompt
from conversation.validation import ToolCallValidator
from config.session import CompressionConfig, GuardrailsConfig
from messages.chat import AssistantMessage, ChatMessage, ToolCall, messages_from_dicts
from providers.chat_completions import build_chat_kwargs
from providers.metadata import rough_tokens
from providers.types import ChatRequest


def _dict_history(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a benchmark."}]
    for n in range(rounds):
        messages += [
            {"role": "user", "content": f"request {n}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{n}", "type": "function", "function": {"name": "terminal", "arguments": json.dumps({"command": f"make {n}"})}}
            ]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps({"output": f"line {n}\n" * 80, "exit_code": 0})},
            {"role": "assistant", "content": f"done {n}"},
        ]
    return messages


def _history(rounds: int) -> list[ChatMessage]:
    return messages_from_dicts(_dict_history(rounds))


def _median_us(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def bench_per_turn() -> None:
    history = _history(50)
    print(f"check_alternation, {len(history)} messages: {_median_us(lambda: check_alternation(history), 300):.1f} µs")
    validator = ToolCallValidator(["terminal", "read_file", "search_files", "write_file"])
    response = AssistantMessage(None, tuple(
        ToolCall(f"x{i}", name, json.dumps({"path": f"f{i}.py"})) for i, name in enumerate(["read_file", "search_files", "terminal"])
    ))
    print(f"validate 3 tool calls: {_median_us(lambda: validator.validate(response), 1000):.1f} µs")
    guard = ToolCallGuardrailController(GuardrailsConfig(), {"read_file", "search_files"}.__contains__)

    def guard_batch() -> None:
        for i, name in enumerate(["read_file", "search_files", "terminal"]):
            guard.before_call(name, {"path": f"f{i}.py"})
            guard.after_call(name, {"path": f"f{i}.py"}, "result text", failed=False)

    print(f"guardrails before+after for 3 calls: {_median_us(guard_batch, 1000):.1f} µs")


def bench_scrubber() -> None:
    text = ("Some streamed words and a <memory-context>recalled</memory-context> block. " * 14_000)[:1_000_000]
    deltas = [text[i : i + 20] for i in range(0, len(text), 20)]

    def run() -> None:
        scrubber = StreamingContextScrubber()
        for delta in deltas:
            scrubber.feed(delta)
        scrubber.flush()

    seconds = _median_us(run, 5) / 1e6
    print(f"scrubber, 1 MB in 20-char deltas: {seconds * 1000:.0f} ms ({len(deltas) / seconds / 1e6:.2f} M deltas/s)")


def bench_compression() -> None:
    history = _history(75)

    async def summarize(messages: list[ChatMessage], instructions: str) -> str:
        return "## Active Task\nrequest 74"

    def run() -> None:
        compressor = ContextCompressor(CompressionConfig(), context_length=32_000, summarize=summarize, estimate_tokens=rough_tokens)
        result = trio.run(compressor.compress, history)
        assert result.tokens_after < result.tokens_before

    print(f"compression pass, {len(history)} messages (summariser stubbed): {_median_us(run, 20) / 1000:.2f} ms")


def bench_boundaries() -> None:
    history = _history(50)
    request = ChatRequest(messages=history, tools=[], model="gpt-4o")
    print(f"provider boundary: Chat Completions body from {len(history)} typed messages: "
          f"{_median_us(lambda: build_chat_kwargs(request), 300):.1f} µs")
    stored = _dict_history(50)
    print(f"store boundary: {len(stored)} stored messages typed on load: {_median_us(lambda: messages_from_dicts(stored), 300):.1f} µs")


def bench_prompt() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        (root / "AGENTS.md").write_text("Use tabs.\n" * 3000)
        (root / "SOUL.md").write_text("You are a benchmark persona.")
        spec = PromptSpec(home=root, cwd=root, model="gpt-5", tool_names={"memory", "session_search"})
        print(f"system prompt assembly (30 KB AGENTS.md, SOUL.md): {_median_us(lambda: assemble_system_prompt(spec), 200):.0f} µs")


def main() -> None:
    """Run every benchmark and print one line per figure."""
    bench_per_turn()
    bench_boundaries()
    bench_scrubber()
    bench_compression()
    bench_prompt()


if __name__ == "__main__":
    main()
