"""What a start imports: heavy libraries are loaded where they are used, not by every process that starts.

Each check runs a fresh interpreter (this process has imported everything already) and reads its
``sys.modules``. The daemon's own start, run for real, is checked in ``tests/daemon/test_start_imports.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Libraries only a provider call, an API server, a web page or a configured platform needs.
PROVIDER_SDKS = ("openai", "anthropic", "pydantic")
SERVERS = ("starlette", "hypercorn")
ON_USE = (*PROVIDER_SDKS, *SERVERS, "bs4", "markdownify", "soupsieve", "trio_websocket", "psycopg", "mcp")


def loaded_by(statement: str) -> set[str]:
    """The top-level packages a fresh interpreter has loaded after running ``statement``."""
    probe = f"{statement}\nimport json, sys\nprint(json.dumps(sorted({{name.partition('.')[0] for name in sys.modules}})))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


class TestClientImports:
    """The CLI's commands that talk to the control socket load no provider SDK, no server, no Trio."""

    def test_inspect_and_attach_paths(self) -> None:
        loaded = loaded_by("import cli, cli.commands, cli.attach")
        assert not loaded & {*ON_USE, "trio"}, sorted(loaded & {*ON_USE, "trio"})

    def test_one_request_commands_read_no_config(self) -> None:
        """``inspect``, ``tree``, ``ps`` ... send a request: the YAML parser is for the commands that read config.yaml."""
        assert "yaml" not in loaded_by("import cli.commands\nfrom cli.main import build_parser\nbuild_parser()")


class TestDaemonImports:
    """Building the daemon's tree loads no provider SDK, API server, HTML parser or platform client."""

    def test_wiring(self) -> None:
        loaded = loaded_by("import actors.platform.daemon.wiring")
        assert not loaded & set(ON_USE), sorted(loaded & set(ON_USE))

    def test_provider_layer(self) -> None:
        """The recovery loop and the adapters are imported without the SDKs they will talk through."""
        loaded = loaded_by("import providers.clients, providers.recovery.policy, providers.recovery.connector")
        assert not loaded & set(PROVIDER_SDKS), sorted(loaded & set(PROVIDER_SDKS))
