"""The messaging platforms' figures (issue 40), each through its fake against a real daemon; prints them.

    .venv/bin/python bench/bench_platforms.py [--messages 20] [--rounds 3] [--chats 20] [--only telegram,slack]

For each platform (telegram, discord, slack, matrix, mattermost, signal, whatsapp, email): the scripted
provider (rule mode; every message asks for "no tools", so a turn is one model call), a real daemon started
the way that platform's daemon tests start it (``tests/daemon/test_<platform>.py``'s ``_start``: the
platform's section as a user writes it, with the tests' short reconnect timers), the platform's fake
(``tests/platform/<platform>_fake.py``) in threads of this process, and this driver. Figures:

- event -> answer sent: from the fake making the user's message available to the daemon (a poll's answer, a
  socket event, a webhook POST, an IMAP delivery) to the answer's send arriving at the fake, one message at
  a time, p50 and p95 (the email fake is polled every 50 ms, so its figure is up to 50 ms coarse);
- daemon CPU per answered message (user + system, from /proc) over all of them, one at a time and at once;
- ``--chats`` chats each sending one message at once, ``--rounds`` times: messages answered per second
  until the last answer, median of the rounds; an answer that never reaches the fake (nothing new for
  20 s) is counted as lost, and the daemon's first warnings are printed under the platform's line (the
  fakes listen with socketserver's backlog of 5, which twenty answers at once overflow: the daemon's
  transport sends again what the kernel reset before the fake took it); an answer beyond one per message
  is counted as doubled;
- a voice note (Telegram, ``stt`` pointed at the scripted provider's ``/v1/audio/transcriptions``): the
  median time and daemon CPU a voice note adds over the same words typed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_api  # noqa: E402

from tests.daemon import test_discord, test_email, test_matrix, test_mattermost, test_signal, test_slack, test_whatsapp  # noqa: E402
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess  # noqa: E402
from tests.daemon.platform_helpers import wait_connected  # noqa: E402
from tests.daemon.telegram_daemon import OWNER as TELEGRAM_OWNER  # noqa: E402
from tests.daemon.telegram_daemon import start_bot, wait  # noqa: E402
from tests.platform.discord_fake import fake_discord  # noqa: E402
from tests.platform.email_fake import FakeMail, serving_mail, user_mail  # noqa: E402
from tests.platform.matrix_fake import fake_matrix  # noqa: E402
from tests.platform.mattermost_fake import fake_mattermost  # noqa: E402
from tests.platform.signal_fake import fake_signal  # noqa: E402
from tests.platform.slack_fake import fake_slack  # noqa: E402
from tests.platform.telegram_fake import fake_telegram  # noqa: E402
from tests.platform.whatsapp_fake import event, fake_graph, post_event, text  # noqa: E402

#: The scripted provider's rules answer a message asking for "no tools" in one plain reply.
ASK = "no tools please, question {n}"


@dataclass
class Bot:
    """One platform's daemon and how this driver talks to it: ``send(chat, words)`` makes a user's message
    available, ``answers(chat)`` counts what the bot sent to that chat, ``wait(predicate, timeout)`` blocks
    until the predicate holds (on the fake's condition where it has one)."""

    daemon: DaemonProcess
    send: Callable[[int, str], None]
    answers: Callable[[int], int]
    wait: Callable[[Callable[[], bool], float], None]


def _condition_wait(fake: Any) -> Callable[[Callable[[], bool], float], None]:
    return lambda predicate, timeout: fake.wait_until(predicate, "the answers", timeout)


def _poll_wait(predicate: Callable[[], bool], timeout: float) -> None:
    wait(predicate, "the answers", timeout)


@contextmanager
def _telegram(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    with fake_telegram() as fake:
        daemon = start_bot(home, provider, fake)
        try:
            wait(lambda: "getUpdates" in fake.calls, "the bot to poll")
            yield Bot(daemon, lambda chat, words: fake.push(500 + chat, TELEGRAM_OWNER, words),
                      lambda chat: len(fake.texts_to_locked(500 + chat)), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _discord(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    with fake_discord() as fake:
        daemon = test_discord._start(home, provider, fake)
        try:
            wait_connected(home, "discord")
            channel = [f"3000000000000{n:05d}" for n in range(chats)]
            yield Bot(daemon, lambda chat, words: fake.push_message(channel[chat], test_discord.OWNER, words),
                      lambda chat: len(fake.texts_to(channel[chat])), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _slack(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    with fake_slack() as fake:
        daemon = test_slack._start(home, provider, fake)
        try:
            wait_connected(home, "slack")
            channel = [f"DCHAT{n:05d}" for n in range(chats)]
            yield Bot(daemon, lambda chat, words: fake.push_message(channel[chat], test_slack.OWNER, words),
                      lambda chat: len(fake.texts_to(channel[chat])), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _matrix(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    with fake_matrix() as fake:
        room = [f"!chat{n}:fake.test" for n in range(chats)]
        for name in room:
            fake.add_room(name, 2)
        daemon = test_matrix._start(home, provider, fake)
        try:
            wait_connected(home, "matrix")
            yield Bot(daemon, lambda chat, words: fake.push_message(room[chat], test_matrix.OWNER, words),
                      lambda chat: len(fake.texts_to(room[chat])), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _mattermost(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    with fake_mattermost() as fake:
        daemon = test_mattermost._start(home, provider, fake)
        try:
            wait_connected(home, "mattermost")
            channel = [f"dm{n:024d}" for n in range(chats)]
            yield Bot(daemon, lambda chat, words: fake.push_post(channel[chat], test_mattermost.OWNER, words, direct=True),
                      lambda chat: len(fake.texts_to(channel[chat])), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _signal(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    people = [f"+1555222{n:04d}" for n in range(chats)]  # on Signal a direct chat is its person
    with fake_signal() as fake:
        daemon = test_signal._start(home, provider, fake, allow_from=people)
        try:
            wait_connected(home, "signal")
            yield Bot(daemon, lambda chat, words: fake.push_message(people[chat], words),
                      lambda chat: len(fake.texts_to(people[chat])), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _whatsapp(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    people = [f"1555333{n:04d}" for n in range(chats)]
    with fake_graph() as fake:
        daemon = test_whatsapp._start(home, provider, fake, allow_from=people)
        try:
            url = test_whatsapp._ready(home)

            def send(chat: int, words: str) -> None:
                assert post_event(url, event(text(people[chat], words))).status_code == 200

            yield Bot(daemon, send, lambda chat: len(fake.texts_to(people[chat])), _condition_wait(fake))
        finally:
            daemon.stop()


@contextmanager
def _email(home: Path, provider: ScriptedProviderProcess, chats: int) -> Iterator[Bot]:
    with serving_mail(FakeMail()) as fake:
        daemon = test_email._start(home, provider, fake)
        try:
            wait_connected(home, "email")
            subject = [f"Thread {n}" for n in range(chats)]  # a session per thread
            yield Bot(daemon, lambda chat, words: fake.deliver(user_mail(test_email.OWNER, words, subject=subject[chat])[0]),
                      lambda chat: sum(str(sent.message["Subject"]).endswith(subject[chat]) for sent in fake.sent_to(test_email.OWNER)),
                      _poll_wait)
        finally:
            daemon.stop()


PLATFORMS = {
    "telegram": _telegram, "discord": _discord, "slack": _slack, "matrix": _matrix, "mattermost": _mattermost,
    "signal": _signal, "whatsapp": _whatsapp, "email": _email,
}


@dataclass
class Figures:
    """One platform's figures."""

    p50_ms: float
    p95_ms: float
    cpu_ms: float
    per_second: float
    lost: int
    doubled: int


#: How long a round waits without any new answer before counting what is missing as lost.
STALL_SECONDS = 20.0


def _answered(bot: Bot, have: list[int]) -> int:
    return sum(bot.answers(chat) > count for chat, count in enumerate(have))


def _round(bot: Bot, chats: int, tag: str) -> tuple[int, float]:
    """Send one message in each of ``chats`` chats at once; (answered, seconds until the last answer)."""
    have = [bot.answers(chat) for chat in range(chats)]
    started = last = time.perf_counter()
    for chat in range(chats):
        bot.send(chat, ASK.format(n=f"{tag}.{chat}"))
    got = 0
    while got < chats:
        try:
            bot.wait(lambda: _answered(bot, have) > got, STALL_SECONDS)
        except AssertionError:  # nothing new for a while: the rest are lost (the fakes assert on a timeout)
            break
        got, last = _answered(bot, have), time.perf_counter()
    return got, last - started


def _measure(bot: Bot, messages: int, rounds: int, chats: int) -> Figures:
    pid = bot.daemon.process.pid if bot.daemon.process else 0
    _round(bot, 1, "warm-up")  # the first turn builds the session and its agent
    latencies, lost = [], 0
    cpu_before = bench_api._cpu_seconds(pid)
    for n in range(messages):
        got, seconds = _round(bot, 1, str(n))
        if got:
            latencies.append(seconds * 1000)
        lost += 1 - got
    rates = []
    for round_ in range(rounds):
        got, seconds = _round(bot, chats, f"round {round_}")
        rates.append(got / seconds)
        lost += chats - got
    cpu_ms = 1000 * (bench_api._cpu_seconds(pid) - cpu_before) / max(1, messages + rounds * chats - lost)
    # Answers beyond one per message (a send made again after the platform had taken it).
    doubled = sum(bot.answers(chat) for chat in range(chats)) - (1 + messages + rounds * chats - lost)
    return Figures(
        statistics.median(latencies), bench_api._percentile(latencies, 0.95), cpu_ms, statistics.median(rates), lost, doubled,
    )


def _voice(base: Path, provider: ScriptedProviderProcess, notes: int) -> tuple[float, float, float, float]:
    """Telegram with ``stt`` at the scripted provider: (typed p50 ms, voice p50 ms, typed CPU ms, voice CPU ms)."""
    stt = {"provider": "openai", "openai": {"model": "whisper-1", "base_url": provider.base_url, "api_key": "sk-bench-voice"}}
    home = base / "voice-home"
    with fake_telegram() as fake:
        daemon = start_bot(home, provider, fake, config={"stt": stt})
        try:
            wait(lambda: "getUpdates" in fake.calls, "the bot to poll")
            pid = daemon.process.pid if daemon.process else 0
            answers = lambda: sum(not t.startswith("🎙") for t in fake.texts_to_locked(500))  # noqa: E731 - the echo left out
            fake.push(500, TELEGRAM_OWNER, ASK.format(n="warm-up"))
            fake.wait_until(lambda: answers() >= 1, "the warm-up answer", 60)
            figures: dict[str, tuple[list[float], float]] = {}
            for kind in ("typed", "voice"):
                samples = []
                cpu_before = bench_api._cpu_seconds(pid)
                for n in range(notes):
                    have, words = answers(), ASK.format(n=f"{kind} {n}")
                    started = time.perf_counter()
                    if kind == "voice":
                        fake.push_voice(500, TELEGRAM_OWNER, words.encode())  # the scripted provider hears the bytes
                    else:
                        fake.push(500, TELEGRAM_OWNER, words)
                    fake.wait_until(lambda have=have: answers() > have, "an answer", 60)
                    samples.append((time.perf_counter() - started) * 1000)
                figures[kind] = (samples, 1000 * (bench_api._cpu_seconds(pid) - cpu_before) / notes)
            heard = [r for r in provider.requests() if r["path"] == "/v1/audio/transcriptions"]
            assert len(heard) >= notes, f"only {len(heard)} transcriptions for {notes} voice notes"
        finally:
            daemon.stop()
    return (statistics.median(figures["typed"][0]), statistics.median(figures["voice"][0]),
            figures["typed"][1], figures["voice"][1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=20, help="sequential messages per platform")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --chats messages at once")
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--voice", type=int, default=10, help="voice notes (and as many typed messages)")
    parser.add_argument("--only", default=",".join(PLATFORMS), help="comma-separated platforms")
    args = parser.parse_args()
    print(f"messaging platforms through their fakes, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    print(f"  {args.messages} sequential messages, then {args.rounds} rounds of {args.chats} chats at once")
    print(f"  {'platform':<11} {'event->send p50':>16} {'p95':>9} {'daemon CPU/msg':>15} {'answered/s':>11} {'lost':>5} {'doubled':>8}")
    with tempfile.TemporaryDirectory(prefix="bench-platforms-") as tmp, ExitStack() as stack:
        base = Path(tmp)
        provider = ScriptedProviderProcess()
        stack.callback(provider.stop)
        for name in args.only.split(","):
            with PLATFORMS[name](base / name, provider, args.chats) as bot:
                figures = _measure(bot, args.messages, args.rounds, args.chats)
                warnings = [line for line in bot.daemon.log().splitlines() if " WARNING " in line or " ERROR " in line]
            print(f"  {name:<11} {figures.p50_ms:>13.1f} ms {figures.p95_ms:>6.1f} ms {figures.cpu_ms:>12.1f} ms "
                  f"{figures.per_second:>11.1f} {figures.lost:>5} {figures.doubled:>8}", flush=True)
            for line in warnings[:3]:
                print(f"      daemon log: {line.split(' ', 2)[2][:160]}")
        if args.voice:
            typed, voice, typed_cpu, voice_cpu = _voice(base, provider, args.voice)
            print(f"  voice note on telegram, {args.voice} of each: typed p50 {typed:.1f} ms, voice p50 {voice:.1f} ms; "
                  f"transcription adds {voice - typed:.1f} ms and {voice_cpu - typed_cpu:.1f} ms daemon CPU per note")
    print(f"  load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
