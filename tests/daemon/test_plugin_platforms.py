"""Plugins that add messaging platforms, in a real daemon: a trivial adapter speaking JSON lines to a loopback
fake answers a message through the gateway like a built-in platform; one whose factory raises and one that
crashes at runtime are shown failed in ``status`` and ``plugins list`` while the other platform and the
daemon carry on; a Hermes-style ``register_platform`` (an asyncio adapter) is noted as not taken."""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from messages import control as c
from tests.daemon.helpers import ScriptedProviderProcess, run_cli
from tests.daemon.jailed import JailedDaemon, jailed_daemon, wait_until
from tests.daemon.platform_helpers import bot_details
from tests.daemon.test_plugins import _install

#: A whole platform: the adapter connects to ``settings.port``, reads one JSON message a line, and writes
#: what it sends as JSON lines.
LOOP = '''\
import json

import trio

from actors.platform.gateway.port import ChatRef, Incoming, SentMessage
from actors.platform.plugins import PluginAdapter


class LoopBot(PluginAdapter):
    async def main(self):
        await self.desk.load()
        await self.keep_connected(self._connect)

    async def _connect(self):
        self.stream = await trio.open_tcp_stream("127.0.0.1", self.setup.section.settings["port"])
        self.up()
        buffered = b""
        while True:
            data = await self.stream.receive_some()
            if not data:
                return
            buffered += data
            while b"\\n" in buffered:
                line, buffered = buffered.split(b"\\n", 1)
                message = json.loads(line)
                await self.desk.take(Incoming(ChatRef("loop", message["chat"]), message["user"], message["user"],
                                              message["text"], private=True, addressed=True))

    async def _write(self, **fields):
        self.sent += 1
        await self.stream.send_all(json.dumps(fields).encode() + b"\\n")
        return SentMessage(ChatRef("loop", fields.get("chat", "")), str(self.sent))

    async def send_text(self, chat, text, *, markdown):
        return await self._write(chat=chat.chat_id, text=text)

    async def send_choices(self, chat, text, choices):
        return await self._write(chat=chat.chat_id, text=text, choices=[choice.label for choice in choices])

    async def edit_text(self, message, text):
        await self._write(chat=message.chat.chat_id, edit=message.message_id, text=text)

    async def send_file(self, chat, path):
        await self._write(chat=chat.chat_id, file=str(path))

    async def typing(self, chat):
        pass

    async def download(self, file, destination, limit):
        raise NotImplementedError


def register(ctx):
    ctx.register_platform("loop", LoopBot)
'''
CRASHY = '''\
def build(setup):
    raise RuntimeError("the crashy platform cannot start")


def register(ctx):
    ctx.register_platform("crashy", build)
'''
FLAKY = '''\
from actors.platform.plugins import PluginAdapter


class FlakyBot(PluginAdapter):
    async def main(self):
        raise ConnectionError("the flaky platform fell over")


def register(ctx):
    ctx.register_platform("flaky", FlakyBot)
    ctx.register_platform(name="irc", label="IRC", adapter_factory=lambda config: None, check_fn=lambda: True)
'''


ROGUE = 'def register(ctx):\n    ctx.register_platform("telegram", lambda setup: None)\n'


class LoopFake:
    """The loop platform's server: takes the adapter's connection, sends it messages, collects what it writes."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.written: queue.Queue[dict[str, Any]] = queue.Queue()
        self.connected = threading.Event()
        self.connection: socket.socket | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        self.connection = connection
        self.connected.set()
        with connection, connection.makefile("rb") as lines:
            for line in lines:
                self.written.put(json.loads(line))

    def say(self, chat: str, user: str, text: str) -> None:
        """A user writes to the bot."""
        assert self.connected.wait(30), "the loop adapter never connected"
        assert self.connection is not None
        self.connection.sendall(json.dumps({"chat": chat, "user": user, "text": text}).encode() + b"\n")

    def wait_for(self, words: str, timeout: float = 60.0) -> dict[str, Any]:
        """The first thing the adapter writes that holds ``words``."""
        while True:
            written = self.written.get(timeout=timeout)
            if words in written.get("text", ""):
                return written

    def close(self) -> None:
        """Stop listening and drop the connection."""
        if self.connection is not None:
            self.connection.close()
        self.listener.close()


@pytest.fixture(scope="module")
def fake() -> Iterator[LoopFake]:
    """The loopback server the loop platform connects to."""
    server = LoopFake()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def jailed(provider: ScriptedProviderProcess, fake: LoopFake) -> Iterator[JailedDaemon]:
    """A daemon with three plugin platforms enabled (one works, one's factory raises, one crashes), and an
    enabled section no plugin adds."""

    def prepare(running: JailedDaemon) -> None:
        site = running.base / "site"
        _install(site, "hx_loop", LOOP, "hermes_actors.plugins", "loop")
        _install(site, "hx_crashy", CRASHY, "hermes_actors.plugins", "crashy")
        _install(site, "hx_flaky", FLAKY, "hermes_agent.plugins", "flaky")
        _install(site, "hx_rogue", ROGUE, "hermes_actors.plugins", "rogue")
        (running.home / "config.yaml").write_text(json.dumps({
            "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
            "plugins": {"enabled": ["loop", "crashy", "flaky", "rogue"]},
            "platforms": {
                "loop": {"enabled": True, "allow_from": ["alice"], "tool_progress": False, "port": fake.port,
                         "home_channel": "lobby"},
                "crashy": {"enabled": True},
                "flaky": {"enabled": True},
                "ghost": {"enabled": True},
            },
        }))
        running.daemon.extra_env["PYTHONPATH"] = str(site)

    with jailed_daemon(prepare) as running:
        yield running


def _platforms(jailed: JailedDaemon) -> dict[str, c.PlatformStatus]:
    return {platform.name: platform for platform in jailed.status().platforms}


class TestPluginPlatform:
    """A plugin's platform answers through the gateway; its allow list holds; status shows it connected."""

    def test_answers_a_message(self, jailed: JailedDaemon, fake: LoopFake, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        provider.push({"text": "loop answer 42"})
        fake.say("room-1", "alice", "hello from the loop")
        reply = fake.wait_for("loop answer 42")
        assert reply["chat"] == "room-1"
        assert provider.requests()[-1]["body"]["messages"][-1]["content"] == "hello from the loop"
        wait_until(lambda: _platforms(jailed)["loop"].connection == "connected", 30, "the loop platform in status")
        assert _platforms(jailed)["loop"].received >= 1

    def test_a_stranger_is_refused(self, jailed: JailedDaemon, fake: LoopFake) -> None:
        before = bot_details(jailed.home, "loop").get("refused", 0)
        fake.say("room-2", "mallory", "let me in")
        wait_until(lambda: bot_details(jailed.home, "loop").get("refused", 0) > before, 30, "mallory refused")


class TestFailedPlatforms:
    """A plugin platform whose factory raises, or that crashes, is failed alone: shown so, the rest runs."""

    def test_status_shows_them_failed(self, jailed: JailedDaemon) -> None:
        wait_until(lambda: {"crashy", "flaky"} <= set(_platforms(jailed)), 30, "the failed platforms in status")
        wait_until(lambda: _platforms(jailed)["flaky"].connection == "failed", 30, "the flaky platform given up")
        platforms = _platforms(jailed)
        assert platforms["crashy"].connection == "failed"
        assert "the crashy platform cannot start" in (platforms["crashy"].error or "")
        assert "given up" in (platforms["flaky"].error or "")
        assert "the flaky platform fell over" in (platforms["flaky"].error or "")
        assert "ghost" not in platforms
        log = jailed.daemon.log()
        assert "no loaded plugin adds platform ghost" in log
        assert "the flaky platform fell over" in log

    def test_plugins_list(self, jailed: JailedDaemon) -> None:
        wait_until(lambda: _platforms(jailed).get("flaky") and _platforms(jailed)["flaky"].connection == "failed", 30, "flaky given up")
        listed = run_cli(jailed.home, "plugins", "list", "--json")
        plugins = {plugin["name"]: plugin for plugin in json.loads(listed.stdout)["plugins"]}
        assert plugins["loop"]["platforms"] == ["loop"]
        assert plugins["crashy"]["state"] == "loaded"
        assert any("platform crashy: failed: its factory raised RuntimeError" in note for note in plugins["crashy"]["notes"])
        assert any(note.startswith("platform flaky: failed") for note in plugins["flaky"]["notes"])
        assert "platform irc: Hermes's asyncio platform adapters cannot run here" in plugins["flaky"]["notes"]
        assert plugins["rogue"]["state"] == "failed" and "'telegram' is built in" in plugins["rogue"]["error"]

    def test_the_daemon_and_the_other_platform_carry_on(self, jailed: JailedDaemon, fake: LoopFake, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        provider.push({"text": "still looping"})
        fake.say("room-3", "alice", "are you there?")
        assert fake.wait_for("still looping")["chat"] == "room-3"


class TestCronDelivery:
    """A plugin platform is a cron destination like a built-in one; a platform no plugin adds is refused."""

    def test_a_job_delivers_to_the_plugin_platform(self, jailed: JailedDaemon, fake: LoopFake, provider: ScriptedProviderProcess) -> None:
        added = run_cli(jailed.home, "cron", "add", "--schedule", "0 9 * * *", "--prompt", "report", "--deliver", "loop:room-9", "--json")
        assert added.returncode == 0, added.stderr
        job = json.loads(added.stdout)["jobs"][0]["id"]
        provider.reset()
        provider.push({"text": "cron report 7"})
        ran = run_cli(jailed.home, "cron", "run-now", job)
        assert ran.returncode == 0, ran.stderr
        assert fake.wait_for("cron report 7")["chat"] == "room-9"

    def test_a_platform_no_plugin_adds_is_refused(self, jailed: JailedDaemon) -> None:
        refused = run_cli(jailed.home, "cron", "add", "--schedule", "0 9 * * *", "--prompt", "report", "--deliver", "ghost:room-9")
        assert refused.returncode != 0 and "not a messaging platform here" in refused.stderr
