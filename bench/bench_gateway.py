"""The Telegram bot's figures, through the fake Bot API; prints them.

    .venv/bin/python bench/bench_gateway.py [--messages 50] [--chats 1000]

Four processes on the machine's cores: the scripted provider (one-call answers), a real daemon with
``platforms.telegram`` pointed at the fake Bot API (``tests/platform/telegram_fake.py``, a thread of this
process), and this driver. Figures:

- message in → reply out: from the update being available to ``getUpdates`` to the reply's
  ``sendMessage`` arriving at the fake, one message at a time, p50 and p95; the scripted model's own
  time (measured straight, the same number of times) is subtracted;
- ``--chats`` chats each sending one message at once: replies/s until the last reply, and the daemon's
  resident memory per chat (its sessions stay live).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_api  # noqa: E402

from tests.platform.telegram_fake import TOKEN, FakeTelegram, fake_telegram  # noqa: E402

OWNER = 1001


def _daemon(base: Path, provider_url: str, fake: FakeTelegram) -> subprocess.Popen[bytes]:
    home = base / "home"
    home.mkdir(mode=0o700)
    config = {
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider_url, "api_mode": "chat_completions"},
        "daemon": {"max_running_turns": 5000, "hibernate_after_seconds": 3600},
        "platforms": {"telegram": {"enabled": True, "base_url": fake.url, "allow_from": [OWNER], "poll_timeout": 1}},
    }
    (home / "config.yaml").write_text(json.dumps(config))
    env = dict(os.environ, HERMES_ACTORS_HOME=str(home), TELEGRAM_BOT_TOKEN=TOKEN)
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "daemon"], env=env, cwd=bench_api.REPO,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _model_ms(provider_url: str, count: int) -> list[float]:
    samples = []
    body = {"model": "scripted-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx2.Client(timeout=30) as client:
        for _ in range(count):
            started = time.perf_counter()
            with client.stream("POST", f"{provider_url}/chat/completions", json=body) as response:
                for _chunk in response.iter_bytes():
                    pass
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--chats", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gw-") as tmp, fake_telegram() as fake:
        base = Path(tmp)
        provider, url = bench_api._start_provider(base, args.messages * 2 + args.chats + 10)
        daemon = _daemon(base, url, fake)
        try:
            deadline = time.monotonic() + 30
            while "getUpdates" not in fake.calls:
                assert time.monotonic() < deadline, "the bot never polled"
                time.sleep(0.05)
            model = _model_ms(url, args.messages)
            latencies = []
            cpu_before = bench_api._cpu_seconds(daemon.pid)
            for n in range(args.messages):
                started = time.perf_counter()
                fake.push(500, OWNER, f"question {n}")
                fake.wait_for_texts(500, n + 1)
                latencies.append((time.perf_counter() - started) * 1000)
            cpu_ms = 1000 * (bench_api._cpu_seconds(daemon.pid) - cpu_before) / args.messages
            before = _rss_kb(daemon.pid)
            started = time.perf_counter()
            for chat in range(args.chats):
                fake.push(10_000 + chat, OWNER, "hello")
            for chat in range(args.chats):
                fake.wait_for_texts(10_000 + chat, 1, timeout=300)
            wall = time.perf_counter() - started
            per_chat = (_rss_kb(daemon.pid) - before) / args.chats
        finally:
            bench_api._stop(daemon, provider)
    p50, p95 = statistics.median(latencies), bench_api._percentile(latencies, 0.95)
    print(f"telegram bot through the fake Bot API, {os.cpu_count()} cores")
    print(f"  message in -> reply out, {args.messages} sequential: p50 {p50:.1f} ms, p95 {p95:.1f} ms "
          f"(the model straight: p50 {statistics.median(model):.1f} ms); added p50 {p50 - statistics.median(model):.1f} ms")
    print(f"  daemon CPU per message (a turn, the follower, the reply): {cpu_ms:.1f} ms")
    print(f"  {args.chats} chats at once: {args.chats / wall:.1f} replies/s ({wall:.1f} s), "
          f"daemon memory {per_chat:.1f} KB per live chat")


if __name__ == "__main__":
    main()
