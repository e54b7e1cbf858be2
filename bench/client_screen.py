"""Benchmark of the interactive client on screen; prints its figures.

    .venv/bin/python bench/client_screen.py [--chunks 300] [--markdown-tokens 10000] [--chunk-delay 0.002] [--starts 10]

A real daemon, the scripted provider and ``hermes-actors chat`` in a pty read
through ``pyte`` (the tests' :class:`PtyTerminal`), all on this machine:

- latency: the provider streams one token every 20 ms (50 chunks/s); a second
  connection attached to the same session (a plain socket client in this
  process) timestamps each TextDelta as it arrives, and the pty reader
  timestamps the moment the token is first on the emulated screen. The
  difference is what the client adds (decode, render, the prompt's redraw);
- CPU: the client's user+system CPU (from ``/proc``) while it renders a
  markdown answer of N tokens (headings, paragraphs, lists, code blocks,
  tables), against the wall time of the turn;
- start: ``chat`` spawned to its idle prompt on screen, the daemon running.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from messages import control as c  # noqa: E402
from tests.client.pty_terminal import PtyTerminal  # noqa: E402
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess  # noqa: E402

_TICKS = os.sysconf("SC_CLK_TCK")


def _idle(text: str) -> bool:
    return "· /help" in text.splitlines()[-1]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _open(daemon: DaemonProcess, provider: ScriptedProviderProcess, columns: int, lines: int) -> PtyTerminal:
    terminal = PtyTerminal(daemon.home, "chat", *provider.chat_flags(), columns=columns, lines=lines)
    terminal.wait_for(lambda t: "attached to" in t and _idle(t), what="the prompt")
    return terminal


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def latency(daemon: DaemonProcess, provider: ScriptedProviderProcess, chunks: int) -> None:
    """Chunk arrival (a reference socket client) to on screen (the pty), at 50 chunks/s."""
    terminal = _open(daemon, provider, 200, 50)
    session_id = re.search(r"attached to (\w+)", terminal.text()).group(1)  # type: ignore[union-attr]  # no match fails the bench here, as it should
    arrived: dict[str, float] = {}
    with daemon.client(timeout=60) as reference:
        reference.request_raw(c.Attach(reference.next_id(), session_id, None))

        def receive() -> None:
            while True:
                event = reference.receive_raw()
                if event.get("type") == "TextDelta":
                    for token in re.findall(r"tok\d+", event["text"]):
                        arrived.setdefault(token, time.monotonic())
                if event.get("type") == "TurnFinished":
                    return

        listener = threading.Thread(target=receive, daemon=True)
        listener.start()
        provider.push({"text": " ".join(f"tok{n}" for n in range(chunks)), "chunk_delay": 0.02})
        start = len(terminal.chunks)
        terminal.emulate = False  # replayed below: the reader only timestamps while we measure
        terminal.type("stream\r")
        listener.join(chunks * 0.02 + 30)
        deadline = time.monotonic() + 30
        while "in ·".encode() not in b"".join(data for _, data in terminal.chunks[start:]):
            assert time.monotonic() < deadline, "the client never showed the turn's footer"
            time.sleep(0.05)
    # Replay the pty's bytes into a fresh screen, noting when each token first shows.
    import pyte

    screen = pyte.Screen(200, 50)
    stream = pyte.ByteStream(screen)
    for _, data in terminal.chunks[:start]:
        stream.feed(data)
    shown: dict[str, float] = {}
    for at, data in terminal.chunks[start:]:
        stream.feed(data)
        for token in re.findall(r"tok\d+", "".join(screen.display)):
            shown.setdefault(token, at)
    terminal.close()
    delays = [1000 * (shown[t] - arrived[t]) for t in arrived if t in shown]
    print(f"latency at 50 chunks/s ({len(delays)} of {chunks} chunks): median {statistics.median(delays):.1f} ms, "
          f"p99 {_percentile(delays, 0.99):.1f} ms, max {max(delays):.1f} ms")


def _markdown(tokens: int) -> str:
    parts: list[str] = []
    count = 0
    section = 0
    while count < tokens:
        section += 1
        parts += [
            f"## Section {section}", "",
            " ".join(f"word{n}" for n in range(60)) + " with **bold** and `code`.", "",
            "- first point of the list", "- second point, a little longer", "", "```python",
            *(f"value_{n} = compute({n}, factor={n * 2})" for n in range(8)), "```", "",
            "| name | value |", "| --- | --- |", *(f"| row{n} | {n * 3} |" for n in range(5)), "",
        ]
        count += 160
    return "\n".join(parts) + "\n"


def cpu(daemon: DaemonProcess, provider: ScriptedProviderProcess, tokens: int, chunk_delay: float) -> None:
    """The client's CPU while rendering a markdown answer of ``tokens`` tokens, a chunk every ``chunk_delay`` s."""
    terminal = _open(daemon, provider, 120, 40)
    text = _markdown(tokens)
    chunk_count = tokens  # about one token a chunk, as models stream
    provider.push({"text": text, "chunks": chunk_count, "chunk_delay": chunk_delay})
    before = _cpu_seconds(terminal.process.pid)
    started = time.monotonic()
    terminal.type("render\r")
    terminal.wait_for(lambda t: "in ·" in t and _idle(t), timeout=300, what="the end of the answer")
    wall = time.monotonic() - started
    used = _cpu_seconds(terminal.process.pid) - before
    terminal.close()
    print(f"CPU rendering a {tokens}-token markdown answer ({len(text)} chars, {chunk_count} chunks, "
          f"one every {1000 * chunk_delay:g} ms): "
          f"{used:.2f} s CPU over {wall:.2f} s wall ({100 * used / wall:.0f}% of a core), "
          f"{1e6 * used / chunk_count:.0f} µs per chunk")


def start(daemon: DaemonProcess, provider: ScriptedProviderProcess, runs: int) -> None:
    """``chat`` spawned to its idle prompt on screen, with the daemon running."""
    times: list[float] = []
    for _ in range(runs):
        began = time.monotonic()
        terminal = _open(daemon, provider, 100, 30)
        times.append(1000 * (time.monotonic() - began))
        terminal.type("\x04")
        terminal.wait_exit()
        terminal.close()
    print(f"chat to the attached prompt ({runs} runs): median {statistics.median(times):.0f} ms, "
          f"min {min(times):.0f} ms, max {max(times):.0f} ms")


def main() -> None:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--markdown-tokens", type=int, default=10_000)
    parser.add_argument("--chunk-delay", type=float, default=0.002, help="seconds between markdown chunks")
    parser.add_argument("--starts", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        daemon = DaemonProcess(Path(base) / "home").start()
        provider = ScriptedProviderProcess()
        try:
            start(daemon, provider, args.starts)
            latency(daemon, provider, args.chunks)
            cpu(daemon, provider, args.markdown_tokens, args.chunk_delay)
        finally:
            provider.stop()
            daemon.stop()


if __name__ == "__main__":
    main()
