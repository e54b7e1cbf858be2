"""The ``mcp_servers`` section: Hermes's entry keys, and a bad entry that is only its server's error."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, load_config
from config.mcp import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, InvalidMcpServer, McpServerConfig


def _load(home: Path, text: str) -> tuple[dict, list[str]]:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    found: list[str] = []
    return load_config(home, warnings=found, log_warnings=False).mcp_servers, found


class TestEntries:
    """Each entry becomes a server config with Hermes's key names and defaults."""

    def test_stdio_and_http_and_sse(self, tmp_path: Path) -> None:
        servers, found = _load(
            tmp_path,
            "mcp_servers:\n"
            "  files: {command: npx, args: [-y, server], env: {A: b}, cwd: /tmp, timeout: 5, connect_timeout: 2}\n"
            "  remote: {url: 'https://example.com/mcp', headers: {Authorization: Bearer x}}\n"
            "  old: {url: 'http://127.0.0.1:9/sse', enabled: false}\n",
        )
        assert found == []
        files = servers["files"]
        assert (files.transport, files.args, dict(files.env), files.timeout, files.connect_timeout) == (
            "stdio", ("-y", "server"), {"A": "b"}, 5, 2,
        )
        assert servers["remote"].transport == "http"
        assert servers["remote"].timeout == DEFAULT_TIMEOUT
        assert servers["remote"].connect_timeout == DEFAULT_CONNECT_TIMEOUT
        assert (servers["old"].transport, servers["old"].enabled) == ("sse", False)

    def test_missing_section_is_no_server(self, tmp_path: Path) -> None:
        assert _load(tmp_path, "model: {default: x}\n")[0] == {}


class TestBadEntries:
    """A bad entry is an error naming its key; the rest of the file and the other servers load."""

    @pytest.mark.parametrize(
        ("entry", "expected"),
        [
            ("{command: x, timeout: -1}", "mcp_servers.bad.timeout must be a number > 0, got -1"),
            ("{command: x, args: notalist}", "mcp_servers.bad.args"),
            ("{url: 'ftp://x'}", "mcp_servers.bad.url must be an http:// or https:// URL"),
            ("{args: [a]}", "mcp_servers.bad: needs exactly one of command"),
            ("{command: x, url: 'http://a/mcp'}", "mcp_servers.bad: needs exactly one of command"),
            ("{command: x, env: {A: 1}}", "mcp_servers.bad.env.A must be a string"),
            ("[1, 2]", "mcp_servers.bad must be a mapping"),
        ],
    )
    def test_error_names_the_key(self, tmp_path: Path, entry: str, expected: str) -> None:
        servers, found = _load(tmp_path, f"mcp_servers:\n  bad: {entry}\n  good: {{command: ok}}\n")
        assert isinstance(servers["bad"], InvalidMcpServer)
        assert servers["bad"].error.startswith(expected), servers["bad"].error
        assert found == [servers["bad"].error]
        assert isinstance(servers["good"], McpServerConfig)

    def test_unknown_and_hermes_keys_are_warnings(self, tmp_path: Path) -> None:
        servers, found = _load(tmp_path, "mcp_servers:\n  a: {command: x, tools: {include: [b]}, colour: red}\n")
        assert isinstance(servers["a"], McpServerConfig)
        assert found == [
            "Hermes setting mcp_servers.a.tools is not used here: MCP servers take their tools whole",
            "unknown key mcp_servers.a.colour (ignored)",
        ]

    def test_a_section_that_is_not_a_mapping_is_the_files_error(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="mcp_servers must be a mapping"):
            _load(tmp_path, "mcp_servers: [a]\n")

    def test_wrong_type_from_attrs_validator_is_readable(self, tmp_path: Path) -> None:
        servers, _ = _load(tmp_path, "mcp_servers:\n  bad: {command: 5}\n")
        assert servers["bad"].error == "mcp_servers.bad: 'command' must be <class 'str'> (got 5 that is a <class 'int'>)."
