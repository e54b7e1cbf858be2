"""``hermes-actors mcp list`` and ``hermes-actors mcp test NAME``.

``list`` asks the running daemon for its servers' states (without a daemon: what config.yaml
configures); ``test`` connects to one server from this process, lists its tools and times it, the
way Hermes's ``hermes mcp test`` does, so a server can be tried before a daemon uses it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import attrs

from control.client import ControlClient
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, DaemonNotRunning
from control.paths import DaemonPaths, home_from_env
from config.errors import ConfigError
from config.mcp import InvalidMcpServer
from messages import control as c

__all__ = ["add_mcp_parser", "run_mcp_command"]


def add_mcp_parser(commands: Any, add_json: Any) -> None:
    """The ``mcp`` command and its verbs."""
    mcp = commands.add_parser("mcp", help="MCP servers (mcp_servers in config.yaml): list them, test one")
    verbs = mcp.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="configured servers and their states (connecting, ready, failed)")
    add_json(listing)
    test = verbs.add_parser("test", help="connect to one server, list its tools and time it")
    test.add_argument("name", metavar="NAME", help="the server's name under mcp_servers")
    add_json(test)


def run_mcp_command(args: argparse.Namespace) -> int:
    """Run ``mcp list`` or ``mcp test``; the exit status."""
    home = home_from_env()
    if args.verb == "list":
        return _list(home, args.json)
    return _test(home, args.name, args.json)


def _print_json(value: Any) -> None:
    from cli.commands import print_json

    print_json(value)


def _configured(home: Any) -> list[c.McpServerStatus]:
    """The servers config.yaml configures now, none of them running."""
    from config.loader import load_config  # noqa: PLC0415 - not at the top: every command builds this module's parser, few read config.yaml

    config = load_config(home, log_warnings=False)
    return [
        c.McpServerStatus(
            name=name,
            state="invalid" if isinstance(entry, InvalidMcpServer) else ("not running" if entry.enabled else "disabled"),
            transport="" if isinstance(entry, InvalidMcpServer) else entry.transport,
            error=entry.error if isinstance(entry, InvalidMcpServer) else None,
        )
        for name, entry in config.mcp_servers.items()
    ]


def _with_file_changes(home: Any, running: list[c.McpServerStatus]) -> list[c.McpServerStatus]:
    """The daemon's servers, and those config.yaml has gained since it read the file (it starts them on a
    reload only); a server the file no longer has is marked so. A file that does not load changes nothing."""
    try:
        configured = _configured(home)
    except ConfigError:
        return running
    names = {server.name for server in configured}
    known = {server.name for server in running}
    servers = [
        server if server.name in names or server.state == "disabled"
        else attrs.evolve(server, error=_REMOVED + (f"; {server.error}" if server.error else ""))
        for server in running
    ]
    added = [
        attrs.evolve(server, state="not started", error=_ADDED) if server.state == "not running" else server
        for server in configured if server.name not in known
    ]
    return servers + added


_ADDED = "added to config.yaml after the daemon read it: /reload-mcp in attach, or a restart, starts it"
_REMOVED = "no longer in config.yaml: it runs until /reload-mcp in attach, or a restart"


def _list(home: Any, as_json: bool) -> int:
    try:
        with ControlClient.connect(DaemonPaths(home)) as client:
            reply: c.McpReply = client.request(c.McpServers(client.next_id()))
        servers, running = _with_file_changes(home, reply.servers), True
    except DaemonNotRunning:
        servers, running = _configured(home), False
    if as_json:
        _print_json({"daemon_running": running, "servers": [attrs.asdict(server) for server in servers]})
        return 0
    if not servers:
        print("no MCP servers are configured (mcp_servers in config.yaml)")
        return 0
    if not running:
        print("no daemon is running; the servers config.yaml configures:")
    width = max(len(server.name) for server in servers)
    for server in servers:
        tools = f"{server.tools} tools" if server.state == "ready" else ""
        line = f"{server.name:<{width}}  {server.state:<11} {server.transport:<5} {tools}".rstrip()
        if server.error:
            line += f"\n{'':<{width}}  {server.error}"
        print(line)
    return 0


def _test(home: Any, name: str, as_json: bool) -> int:
    from config.loader import load_config  # noqa: PLC0415 - not at the top: every command builds this module's parser, few read config.yaml

    config = load_config(home, log_warnings=False)
    entry = config.mcp_servers.get(name)
    if entry is None:
        known = ", ".join(config.mcp_servers) or "none"
        message = f"no MCP server {name!r} in config.yaml (configured: {known})"
        if as_json:
            _print_json({"error": {"code": "not_found", "message": message}})
        print(f"hermes-actors: {message}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if isinstance(entry, InvalidMcpServer):
        if as_json:
            _print_json({"error": {"code": "invalid", "message": entry.error}})
        print(f"hermes-actors: {entry.error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    # Trio and the SDK only here: the other commands stay light.
    import functools

    import trio

    from actors.mcp.probe import probe_server

    result = trio.run(functools.partial(probe_server, entry, dict(os.environ)))
    if as_json:
        _print_json(attrs.asdict(result))
        return 0 if result.ok else EXIT_FAILURE
    if not result.ok:
        print(f"{name}: FAILED after {result.connect_ms:.0f} ms over {result.transport}: {result.error}")
        return EXIT_FAILURE
    print(
        f"{name}: connected over {result.transport} in {result.connect_ms:.0f} ms"
        f"{f' ({result.server_info})' if result.server_info else ''}; "
        f"{len(result.tools)} tools listed in {result.list_ms:.0f} ms"
    )
    for tool in result.tools:
        mark = " (read-only)" if tool.read_only else ""
        print(f"  {tool.name}{mark}  {tool.description}")
    return 0
