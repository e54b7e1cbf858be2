"""The CLI's one-shot commands: status, stop, tree, ps, inspect, kill, interrupt, steer, sessions.

Each opens one connection, sends one request and prints the reply as text or
as ``--json`` (the schema in ``cli/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any

import attrs

from cli.autostart import connect_or_start
from control.client import ControlClient
from cli.confirm import can_ask, confirmed
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, DaemonNotRunning, RequestFailed
from control.paths import DaemonPaths, home_from_env
from cli.render import format_inspect, format_ps, format_sessions, format_tree, node_json, ps_rows, snapshot_json
from messages import control as c
from messages import session_records as records

__all__ = ["print_json", "run_command"]

#: How long ``stop`` waits for the daemon to finish.
STOP_WAIT_SECONDS = 30.0


def print_json(value: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def _unstructure(message: Any) -> dict[str, Any]:
    return attrs.asdict(message)


def run_command(args: argparse.Namespace) -> int:
    """Run one of the one-shot commands; the exit status."""
    paths = DaemonPaths(home_from_env())
    if args.command == "stop":
        return _stop(paths, args.json)
    if args.command == "status":
        return _status(paths, args.json)
    try:
        client = connect_or_start(paths) if args.command == "sessions" else ControlClient.connect(paths)
    except DaemonNotRunning as exc:
        return _fail(args, "not_running", str(exc), EXIT_FAILURE)
    with client:
        try:
            return _COMMANDS[args.command](client, args)
        except RequestFailed as exc:
            status = EXIT_NOT_FOUND if exc.code in ("not_found", "invalid") else EXIT_FAILURE
            return _fail(args, exc.code, str(exc), status)


def _fail(args: argparse.Namespace, code: str, message: str, status: int) -> int:
    if getattr(args, "json", False):
        print_json({"error": {"code": code, "message": message}})
    print(f"hermes-actors: {message}", file=sys.stderr)
    return status


def _ok(args: argparse.Namespace, reply: dict[str, Any]) -> int:
    if args.json:
        print_json({"ok": True, "message": reply["message"]})
    else:
        print(reply["message"])
    return 0


def _status(paths: DaemonPaths, as_json: bool) -> int:
    # Here, not at the top: the configuration's schema and YAML parser are a quarter of every other command's start.
    from cli.config_check import warn_config  # noqa: PLC0415

    warn_config(paths.home)
    try:
        with ControlClient.connect(paths) as client:
            reply: c.StatusReply = client.request(c.Status(client.next_id()))
    except DaemonNotRunning:
        if as_json:
            print_json({"running": False, "home": str(paths.home)})
        else:
            print(f"no daemon is running for {paths.home}")
        return EXIT_FAILURE
    data = _unstructure(reply)
    data.pop("request_id")
    if as_json:
        print_json({"running": True, **data})
    else:
        print(
            f"daemon running: pid {reply.pid}, up {reply.uptime_seconds:.0f} s, {reply.actors} actors, "
            f"{reply.live_sessions} live sessions, {reply.running_turns} running turns, "
            f"{reply.connections} connections\nhome {reply.home}\nsocket {reply.socket}"
        )
        if reply.sandbox is not None:
            print(_sandbox_text(reply.sandbox))
        if reply.mcp:
            print(_mcp_text(reply.mcp))
        for platform in reply.platforms:
            error = f" ({platform.error})" if platform.error else ""
            print(f"{platform.name}: {platform.connection}{error}; {platform.chats} chats, {platform.received} received, "
                  f"{platform.sent} sent, {platform.refused} refused")
        if reply.api is not None:
            api = reply.api
            streams = "" if api.dashboard_streams is None else f", {api.dashboard_streams} dashboard streams open"
            print(f"HTTP API: {', '.join(api.urls) or 'starting'}; {api.in_flight} requests in flight, "
                  f"{api.active_runs} of {api.runs} runs active{streams}")
            for name, counts in api.webhooks.items():
                print(f"webhook {name}: " + ", ".join(f"{n} {key.replace('_', ' ')}" for key, n in counts.items()))
        if reply.hosts:
            print(_hosts_text(reply.hosts))
        if reply.config is not None:
            for line in _config_lines(reply.config):
                print(line)
    return 0


def _hosts_text(hosts: list[c.HostStatus]) -> str:
    """``hosts: host:1 running (pid 12): 9 actors, 2 live sessions, 0 running turns; host:2 down``."""
    parts = []
    for host in hosts:
        if host.state == "running":
            parts.append(f"host:{host.index} running (pid {host.pid}): {host.actors} actors, "
                         f"{host.live_sessions} live sessions, {host.running_turns} running turns")
        else:
            parts.append(f"host:{host.index} {host.state}")
    return "hosts: " + "; ".join(parts)


def _config_lines(config: c.ConfigStatus) -> list[str]:
    """Where the daemon's configuration lags behind its files (nothing when it does not)."""
    lines = []
    if config.refused is not None:
        read = time.strftime("%H:%M:%S", time.localtime(config.read_at))
        lines.append(
            f"config.yaml was edited but cannot be used; new sessions keep the configuration read at {read}:\n"
            f"  {config.refused}"
        )
    if config.restart_needed:
        lines.append(
            f"config.yaml: {', '.join(config.restart_needed)} changed since the daemon started and apply only after "
            "`hermes-actors stop` (new sessions already use the rest)"
        )
    return lines


def _mcp_text(servers: list[c.McpServerStatus]) -> str:
    """``MCP: github ready (12 tools), slow connecting, bad failed: ...`` on one line per problem."""
    parts = []
    for server in servers:
        if server.state == "ready":
            parts.append(f"{server.name} ready ({server.tools} tools)")
        elif server.error and server.state in ("failed", "connecting"):
            parts.append(f"{server.name} {server.state} ({server.error})")
        else:
            parts.append(f"{server.name} {server.state}")
    return "MCP servers: " + "; ".join(parts)


def _sandbox_text(sandbox: c.JailReport) -> str:
    modes = f"sandbox {sandbox.mode} (at most {sandbox.max_mode})"
    if sandbox.available:
        filtered = "system-call filter on" if sandbox.seccomp else f"NO SYSTEM-CALL FILTER ({sandbox.seccomp_error})"
        limits = ", ".join(f"{name} by {how}" for name, how in sandbox.limits.items())
        return (
            f"{modes}; jail: bwrap {sandbox.bwrap} ({sandbox.source}, {sandbox.version or 'version unknown'}), "
            f"no capabilities, {filtered}\nsession limits: {limits}"
        )
    return (
        f"{modes}; NO JAIL CAN RUN (failed at {sandbox.failed_step}: {sandbox.error}); {sandbox.advice or ''}\n"
        "sessions that are not full-access refuse to start processes"
    )


def _stop(paths: DaemonPaths, as_json: bool) -> int:
    try:
        client = ControlClient.connect(paths)
    except DaemonNotRunning:
        if as_json:
            print_json({"ok": True, "message": "no daemon was running"})
        else:
            print("no daemon was running")
        return 0
    with client:
        client.request(c.StopDaemon(client.next_id()))
        # The daemon closes every connection as it stops; wait for ours to go.
        client.settimeout(STOP_WAIT_SECONDS)
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        try:
            while time.monotonic() < deadline:
                client.receive()
        except (DaemonNotRunning, TimeoutError):
            pass
    while paths.socket.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if as_json:
        print_json({"ok": True, "message": "daemon stopped"})
    else:
        print("daemon stopped")
    return 0


def _tree(client: ControlClient, args: argparse.Namespace) -> int:
    reply = client.request_raw(c.Tree(client.next_id(), args.path))
    if args.json:
        print_json({"now": reply["now"], "tree": node_json(reply["tree"], reply["now"])})
    else:
        print(format_tree(reply["tree"], reply["now"]))
    return 0


def _ps(client: ControlClient, args: argparse.Namespace) -> int:
    reply = client.request_raw(c.Tree(client.next_id()))
    rows = ps_rows(reply["tree"], reply["now"])
    if args.json:
        print_json({"sessions": rows})
    else:
        print(format_ps(rows))
    return 0


def _inspect(client: ControlClient, args: argparse.Namespace) -> int:
    reply = client.request_raw(c.Inspect(client.next_id(), args.path))
    if args.json:
        print_json(snapshot_json(reply["snapshot"], reply["now"]))
    else:
        print(format_inspect(reply["snapshot"], reply["now"]))
    return 0


def _kill(client: ControlClient, args: argparse.Namespace) -> int:
    return _ok(args, client.request_raw(c.Kill(client.next_id(), args.path, args.reason)))


def _interrupt(client: ControlClient, args: argparse.Namespace) -> int:
    return _ok(args, client.request_raw(c.InterruptSession(client.next_id(), _session_ref(client, args.session))))


def _steer(client: ControlClient, args: argparse.Namespace) -> int:
    return _ok(args, client.request_raw(c.SteerSession(client.next_id(), _session_ref(client, args.path), args.text)))


def _session_ref(client: ControlClient, ref: str) -> str:
    """A session's id for ``ref`` when it names one by id or title (as in ``attach``), else ``ref`` itself:
    a path (``SESSION/subagent:…``) or what the daemon will refuse with its own words."""
    if "/" in ref:
        return ref
    try:
        return client.session_id_for(ref)
    except RequestFailed:
        return ref


def _sessions(client: ControlClient, args: argparse.Namespace) -> int:
    rid = client.next_id()
    if args.verb == "list":
        listed: records.SessionListReply = client.request(
            c.ListSessions(rid, args.limit, args.offset, args.source, include_subagents=args.all or args.source == "subagent")
        )
        if args.json:
            print_json({"sessions": [_unstructure(s) for s in listed.sessions]})
        else:
            print(format_sessions(listed.sessions, flat=args.all, width=_terminal_width()))
        return 0
    if args.verb == "search":
        roles = args.roles or ["user", "assistant"]
        found: records.SearchReply = client.request(c.SearchSessions(rid, args.query, args.limit, roles, args.source))
        if args.json:
            print_json({"matches": [_unstructure(m) for m in found.matches]})
        else:
            _print_matches(found)
        return 0
    if args.verb == "show":
        shown: records.SessionShowReply = client.request(c.ShowSession(rid, args.session, args.head, args.tail))
        if args.json:
            data = _unstructure(shown)
            data.pop("request_id")
            print_json(data)
        else:
            _print_show(shown)
        return 0
    if args.verb == "export":
        return _export(client, args, rid)
    return _delete_session(client, args, rid)


def _delete_session(client: ControlClient, args: argparse.Namespace, rid: str) -> int:
    """``sessions delete``: asked first on a terminal, as ``skills delete`` is; without one, only with --yes."""
    if not args.yes:
        if not can_ask():
            return _fail(args, "invalid", "deleting a session needs --yes when there is no terminal to ask", EXIT_NOT_FOUND)
        session = client.request_raw(c.ShowSession(client.next_id(), args.session, head=0, tail=0))["session"]
        named = session.get("title") or session.get("preview") or "no messages"
        if not confirmed(f"Delete session {session['id']} ({named[:60]}, {session['message_count']} messages)?"):
            print("Not deleted.")
            return EXIT_FAILURE
        args.session = session["id"]  # what was asked about, even if a title moved meanwhile
    return _ok(args, client.request_raw(c.DeleteSession(rid, args.session)))


def _export(client: ControlClient, args: argparse.Namespace, rid: str) -> int:
    # An export holds the whole conversation: the file is private from the moment it exists.
    out = sys.stdout
    if args.output:
        out = os.fdopen(os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8")
    try:
        client.send(c.ExportSession(rid, args.session, _export_format(args)))
        while True:
            chunk: records.ExportChunk = client.reply_to(rid)
            out.write(chunk.data)
            if chunk.last:
                break
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _export_format(args: argparse.Namespace) -> str:
    """``--format``, else the one the output file's suffix names (``.md``, ``.html``), else JSON lines."""
    if args.format:
        return str(args.format)
    suffix = os.path.splitext(args.output or "")[1].lower()
    return _SUFFIX_FORMATS.get(suffix, "jsonl")


_SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def _print_matches(found: records.SearchReply) -> None:
    if not found.matches:
        print("no matches")
    for match in found.matches:
        session = match.session
        print(f"{session.id}  {session.title or session.preview[:60]}")
        for hit in match.hits:
            print(f"    [{hit.role}] {hit.snippet.replace(chr(10), ' ')}")


def _terminal_width() -> int | None:
    """The terminal's columns when stdout is one (a table is fitted to them), else None."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _print_show(shown: records.SessionShowReply) -> None:
    print(format_sessions([shown.session]))
    for message in shown.head:
        _print_message(message)
    if shown.omitted:
        print(f"... {shown.omitted} messages omitted ...")
    for message in shown.tail:
        _print_message(message)


def _print_message(stored: dict[str, Any]) -> None:
    message = stored.get("message", {})
    content = message.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    calls = message.get("tool_calls") or []
    names = ", ".join(call.get("function", {}).get("name", "?") for call in calls if isinstance(call, dict))
    suffix = f"  -> tools: {names}" if names else ""
    print(f"[{message.get('role', '?')}] {(content or '').strip()[:500]}{suffix}")


_COMMANDS = {
    "tree": _tree,
    "ps": _ps,
    "inspect": _inspect,
    "kill": _kill,
    "interrupt": _interrupt,
    "steer": _steer,
    "sessions": _sessions,
}
