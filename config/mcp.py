"""Configuration section ``mcp_servers``: the MCP servers whose tools sessions may use.

Hermes Agent's key names and shapes, one entry per server::

    mcp_servers:
      github:                         # a local server over stdio
        command: npx
        args: [-y, "@modelcontextprotocol/server-github"]
        env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}
        cwd: ~/src                    # optional working directory
        timeout: 120                  # seconds a tool call may take
        connect_timeout: 60           # seconds to start, initialise and list the tools
      remote:                         # a server over streamable HTTP
        url: https://mcp.example.com/mcp
        headers: {Authorization: "Bearer ${REMOTE_TOKEN}"}
      legacy:                         # the older SSE transport: a URL whose path ends in /sse
        url: http://127.0.0.1:8080/sse
        enabled: false                # configured but not started

Unlike every other section, a bad entry does not make the whole file an error: the daemon must start
whatever one server's entry says. :func:`parse_mcp_servers` turns each entry into a
:class:`McpServerConfig` or, when it is wrong, an :class:`InvalidMcpServer` whose message names the key;
the daemon shows that server as failed with the message, and ``config check`` lists it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES
from config.validators import non_empty_str, positive_number

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "InvalidMcpServer",
    "McpEntry",
    "McpServerConfig",
    "parse_mcp_servers",
]

#: Hermes's defaults: a tool call may take two minutes, a connection one.
DEFAULT_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 60.0

Transport = Literal["stdio", "http", "sse"]


def _to_tuple(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _str_map(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(f"{attribute.name} must be a mapping of names to strings, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError(f"{attribute.name}.{key} must be a string, got {item!r}")


def _str_list(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise TypeError(f"{attribute.name} must be a list of strings, got {value!r}")
    for item in value:
        if not isinstance(item, str):
            raise TypeError(f"{attribute.name} must be a list of strings, got {item!r} in it")


def _http_url(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"url must be a string, got {value!r}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"url must be an http:// or https:// URL, got {value!r}")


@attrs.frozen(kw_only=True)
class McpServerConfig:
    """One MCP server: a command to run (stdio) or a URL to reach (HTTP).

    Attributes:
        name: the key under ``mcp_servers``; names the actor (``mcp/server:NAME``), the toolset
            (``mcp-NAME``) and the tools (``mcp_NAME_TOOL``).
        command / args / env / cwd: the stdio server's program, its arguments, the variables added
            to its scrubbed environment, its working directory (``~`` expanded).
        url / headers: the HTTP server's endpoint and the headers sent with every request.
        timeout: seconds one tool call may take.
        connect_timeout: seconds to start the server, initialise the session and list its tools.
        enabled: False keeps the entry without starting the server.
        sandbox: Where a stdio server's process runs: unset (or ``full-access``) sees the file system as the
            daemon's user does but for the daemon's own home, runtime directory and control socket
            (``npx``/``uvx`` servers write caches under the user's home); ``read-only`` or
            ``workspace-write`` jail it like a session of that mode, working in ``cwd``. Every mode runs
            it in a PID namespace of its own that dies with the daemon.
    """

    name: str = attrs.field(validator=non_empty_str)
    command: str | None = attrs.field(default=None, validator=v.optional(non_empty_str))
    args: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_str_list)
    env: Mapping[str, str] = attrs.field(factory=dict, validator=_str_map)
    cwd: str | None = attrs.field(default=None, validator=v.optional(non_empty_str))
    url: str | None = attrs.field(default=None, validator=_http_url)
    headers: Mapping[str, str] = attrs.field(factory=dict, validator=_str_map)
    timeout: float = attrs.field(default=DEFAULT_TIMEOUT, validator=positive_number)
    connect_timeout: float = attrs.field(default=DEFAULT_CONNECT_TIMEOUT, validator=positive_number)
    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    sandbox: str | None = attrs.field(default=None, validator=v.optional(v.in_(SANDBOX_MODES)))

    def __attrs_post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of command (a stdio server) or url (an HTTP server)")
        if self.url is not None and (self.args or self.env or self.cwd or self.sandbox):
            raise ValueError("args, env, cwd and sandbox belong to a command; an url server takes headers")
        if self.command is not None and self.headers:
            raise ValueError("headers belong to an url server; a command takes env")

    @property
    def transport(self) -> Transport:
        """``stdio`` for a command; for a URL, ``sse`` when its path ends in ``/sse``, else ``http``."""
        if self.command is not None:
            return "stdio"
        assert self.url is not None
        return "sse" if urlsplit(self.url).path.rstrip("/").endswith("/sse") else "http"

    @property
    def working_directory(self) -> str | None:
        """``cwd`` with ``~`` expanded."""
        return None if self.cwd is None else os.path.expanduser(self.cwd)


@attrs.frozen
class InvalidMcpServer:
    """An entry that could not be read; ``error`` names the key (``mcp_servers.NAME.timeout: ...``)."""

    name: str
    error: str
    enabled: bool = True


McpEntry = McpServerConfig | InvalidMcpServer

_KEYS = frozenset(field.name for field in attrs.fields(McpServerConfig)) - {"name"}
# Hermes keys of an entry this project reads no further (they are reported, never an error).
_HERMES_ENTRY_KEYS = frozenset({"tools", "sampling", "auth", "oauth", "client_id", "client_secret", "scopes"})


def parse_mcp_servers(data: Any, found: list[str]) -> dict[str, McpEntry]:
    """Each entry of ``mcp_servers`` as a config or an error; warnings for keys not read go to ``found``.

    Never raises for a bad entry (that would stop the daemon over one server): the entry becomes an
    :class:`InvalidMcpServer`, and its message is added to ``found`` as well.

    Raises:
        TypeError: ``mcp_servers`` itself is not a mapping (the whole section is unreadable).
    """
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise TypeError(f"mcp_servers must be a mapping of server names to entries, got {type(data).__name__}")
    servers: dict[str, McpEntry] = {}
    for name, entry in data.items():
        key = f"mcp_servers.{name}"
        if not isinstance(name, str) or not name:
            found.append(f"{key}: a server name must be a non-empty string (entry ignored)")
            continue
        servers[name] = _parse_entry(name, entry, key, found)
    return servers


def _parse_entry(name: str, entry: Any, key: str, found: list[str]) -> McpEntry:
    if not isinstance(entry, Mapping):
        return _invalid(name, f"{key} must be a mapping, got {type(entry).__name__}", found)
    known: dict[str, Any] = {}
    for field, value in entry.items():
        if field in _KEYS:
            known[field] = value
        elif field in _HERMES_ENTRY_KEYS:
            found.append(f"Hermes setting {key}.{field} is not used here: MCP servers take their tools whole")
        else:
            found.append(f"unknown key {key}.{field} (ignored)")
    enabled = known.get("enabled", True)
    try:
        return McpServerConfig(name=name, **known)
    except (TypeError, ValueError) as exc:
        # attrs' own validators raise with (message, attribute, ...) as their args: keep the message.
        message = str(exc.args[0]) if exc.args else str(exc)
        # attrs' messages start with the field's name: make them the dotted key a person can find.
        field = message.split(" ", 1)[0].split(".", 1)[0]
        where = f"{key}.{message}" if field in _KEYS else f"{key}: {message}"
        return _invalid(name, where, found, enabled=enabled if isinstance(enabled, bool) else True)


def _invalid(name: str, error: str, found: list[str], *, enabled: bool = True) -> InvalidMcpServer:
    found.append(error)
    return InvalidMcpServer(name, error, enabled)
