"""Store benchmarks: committed messages/s through the single writer, and search latency over 1,000,000 messages.

Run: .venv/bin/python bench/bench_store.py [--messages 1000000] [--db /tmp/hermes_actors_bench_store.db]

The big database is generated once (synthetic Zipf-distributed text with some
CJK, 10,000 sessions) and reused while it exists. Queries go through
``SqliteSessionStore.search``, the path the tool uses (ranking, per-session
grouping, snippets included).
"""

from __future__ import annotations

import argparse
import random
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from config.store import StoreConfig
from store import SessionMeta, SqliteSessionStore
from store.sqlite.indexing import index_pending
from store.sqlite.schema import open_writer

SYLLABLES = "ka ro mi tes lan dor vek sil po nu gar fen tri ble cos mar quin dal zo hep ust rin vol sha".split()
CJK = "東京 大阪 会議 設計 資料 明日 今日 問題 解決 確認 北京 上海 数据 服务 部署 測試".split()


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    """Synthetic words; their order is their Zipf rank (the first is the most frequent)."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate(path: Path, total: int) -> None:
    """Write ``total`` messages in 10,000 sessions straight into a fresh database (both FTS indexes via triggers)."""
    rng = random.Random(42)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    cum = [0.0]
    for w in weights:
        cum.append(cum[-1] + w)
    cum = cum[1:]
    conn = open_writer(path, busy_timeout_seconds=30, synchronous="normal")
    sessions = 10_000
    per_session = total // sessions
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO sessions (id, source, started_at, last_active, message_count) VALUES (?, 'cli', ?, ?, ?)",
        [(f"s{i:05d}", 1.6e9 + i * 3600, 1.6e9 + i * 3600, per_session) for i in range(sessions)],
    )
    conn.execute("COMMIT")
    roles = ("user", "assistant", "tool")
    batch: list[tuple[object, ...]] = []
    for n in range(sessions * per_session):
        sid = f"s{n // per_session:05d}"
        text = rng.choices(words, cum_weights=cum, k=rng.randint(8, 40))
        if n % 97 == 0:
            text.insert(rng.randrange(len(text)), rng.choice(CJK) + rng.choice(CJK))
        if n % 100_003 == 0:
            text.append("zebrafish")
        if n % 101 == 0:
            text.append("kubernetes")
        batch.append((sid, roles[n % 3], " ".join(text), 1.6e9 + n))
        if len(batch) == 50_000:
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)", batch)
            conn.execute("COMMIT")
            batch.clear()
            print(f"  generated {n + 1:,} messages ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    if batch:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)", batch)
        conn.execute("COMMIT")
    # Indexed as the store would have by the time anyone searched (store.sqlite.indexing).
    conn.execute("BEGIN")
    while index_pending(conn, limit=100_000):
        pass
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA optimize")
    conn.close()


async def append_rate(store: Any, tasks: int, per_task: int, prefix: str = "") -> tuple[float, float]:
    """(committed messages/s, mean append latency ms) of ``tasks`` concurrent appenders on an open store
    (their sessions named ``{prefix}w{n}``)."""
    for t in range(tasks):
        await store.create_session(SessionMeta(id=f"{prefix}w{t}"))
    latencies: list[float] = [0.0]

    async def appender(t: int) -> None:
        for i in range(per_task):
            began = time.perf_counter()
            await store.append(f"{prefix}w{t}", [{"role": "user", "content": f"message {i} of task {t} " * 4}])
            latencies.append(time.perf_counter() - began)

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for t in range(tasks):
            nursery.start_soon(appender, t)
    elapsed = time.perf_counter() - start
    return tasks * per_task / max(elapsed, 1e-9), statistics.mean(latencies[1:] or latencies) * 1000


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def write_throughput(tasks: int, per_task: int, synchronous: str) -> tuple[float, int, float, float]:
    """(committed messages/s, transactions, mean append latency ms, process CPU µs per append) for ``tasks``
    concurrent appenders."""
    with tempfile.TemporaryDirectory() as tmp:
        config = StoreConfig(synchronous=synchronous)
        async with SqliteSessionStore.open(Path(tmp) / "state.db", config) as store:
            before = store.statistics().transactions
            cpu = _process_cpu()
            rate, latency = await append_rate(store, tasks, per_task)
            cpu_per_append = (_process_cpu() - cpu) / (tasks * (per_task + 1)) * 1e6
            return rate, store.statistics().transactions - before - tasks, latency, cpu_per_append


async def transcript_write(records: int) -> float:
    """Milliseconds to store one execute_code run's ``records`` transcript records (one store call)."""
    record = {"kind": "sandbox_tool_call", "tool": "read_file", "args_bytes": 20, "duration_seconds": 0.0005,
              "ok": True, "error": None}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        async with SqliteSessionStore.open(Path(tmp) / "state.db") as store:
            await store.create_session(SessionMeta(id="s1"))
            start = time.perf_counter()
            await store.record_transcript("s1", [record] * records)
            return (time.perf_counter() - start) * 1000


QUERIES = [
    ("rare word", "zebrafish"),
    ("medium word", "kubernetes"),
    ("two words AND", "kubernetes zebrafish"),
    ("prefix", "kuber*"),
    ("phrase without exact hit (fallback)", '"kubernetes zebrafish"'),
    ("substring via trigram", "bernete"),
    ("CJK 4 chars (trigram)", "東京会議"),
    ("CJK 2 chars (scan, newest first)", "会議"),
]


def matching(path: Path, query: str) -> str:
    """How many messages the query matches, for the label."""
    conn = sqlite3.connect(path)
    try:
        table = "messages_tri" if query in ("bernete", "東京会議") else "messages_fts"
        if query == "会議":
            count = conn.execute("SELECT count(*) FROM messages WHERE content LIKE '%会議%'").fetchone()[0]
        else:
            count = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (query,)).fetchone()[0]
    finally:
        conn.close()
    return f"{count:,} hits"


async def read_latency(store: SqliteSessionStore, runs: int) -> None:
    """load() (resume) and read_session() of 100-message sessions in the big database."""
    for label, read in (("load (resume, 100 messages)", store.load), ("read_session (20 + 10)", store.read_session)):
        times = []
        for i in range(runs):
            began = time.perf_counter()
            await read(f"s{(i * 7919) % 10_000:05d}")
            times.append((time.perf_counter() - began) * 1000)
        times.sort()
        print(f"  {label:<32} median {statistics.median(times):6.2f} ms  max {times[-1]:6.2f} ms")


async def search_latency(path: Path, runs: int) -> None:
    """Print read and search latencies over the big database."""
    async with SqliteSessionStore.open(path) as store:
        await read_latency(store, runs)
        # Words of the synthetic vocabulary at several frequencies.
        rng = random.Random(42)
        words = vocabulary(rng)
        queries = [*QUERIES, ("frequent word", words[3]), ("very frequent word", words[0])]
        queries.append(("with current-session exclusion", "kubernetes"))
        for label, query in queries:
            current = "s00001" if "exclusion" in label else None
            await store.search(query, current_session_id=current)  # warm the page cache
            times = []
            hits = 0
            for _ in range(runs):
                began = time.perf_counter()
                found = await store.search(query, current_session_id=current)
                times.append((time.perf_counter() - began) * 1000)
                hits = len(found)
            times.sort()
            p95 = times[int(len(times) * 0.95) - 1]
            print(
                f"  {label:<32} {query!r:<24} {matching(path, query) if current is None else '':>14}"
                f"  median {statistics.median(times):6.1f} ms  p95 {p95:6.1f} ms  max {times[-1]:6.1f} ms"
                f"  ({hits} sessions)"
            )


async def main() -> None:
    """Run both benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, default=Path("/tmp/hermes_actors_bench_store.db"))
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--skip-writes", action="store_true", help="only the search benchmark")
    args = parser.parse_args()

    print("store: committed messages/s (one message per append, each append waits for its COMMIT)")
    write_runs = [(1, 2000, "normal"), (100, 200, "normal"), (100, 200, "full"), (1000, 20, "normal")]
    if args.skip_writes:
        write_runs = []
    for tasks, per_task, sync in write_runs:
        rate, transactions, latency, cpu = await write_throughput(tasks, per_task, sync)
        print(
            f"  {tasks:>4} concurrent appenders, synchronous={sync:<6}: {rate:9,.0f} messages/s"
            f"  ({tasks * per_task:,} appends in {transactions:,} transactions, mean append {latency:.2f} ms,"
            f" CPU {cpu:.0f} µs per append)"
        )

    for records in ([] if args.skip_writes else [50, 1000]):
        print(f"store: an execute_code run's transcript, {records:,} records in one write: "
              f"{await transcript_write(records):.1f} ms")  # fmt: skip

    if not args.db.exists():
        print(f"store: generating {args.messages:,} messages into {args.db} (once; reused afterwards)")
        started = time.perf_counter()
        partial = args.db.with_suffix(".partial")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{partial}{suffix}").unlink(missing_ok=True)
        generate(partial, args.messages)
        partial.rename(args.db)
        print(f"  generated in {time.perf_counter() - started:.0f} s, {args.db.stat().st_size / 1e6:,.0f} MB")
    print(f"store: reads and search over {args.messages:,} messages ({args.runs} runs each, via SqliteSessionStore)")
    await search_latency(args.db, args.runs)


if __name__ == "__main__":
    trio.run(main)
