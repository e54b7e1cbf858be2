"""platforms.webhook: Hermes's section name, named routes, and the checks made when the file is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, load_config

_ROUTE = (
    "sandbox:\n  max_mode: workspace-write\n"
    "platforms:\n  api_server:\n    enabled: {api}\n  webhook:\n    enabled: true\n    routes:\n      ci:\n"
)


def _write(home: Path, route: str, *, api: str = "true") -> None:
    (home / "config.yaml").write_text(_ROUTE.format(api=api) + route, encoding="utf-8")


class TestWebhookSection:
    """Routes are read by name; Hermes's keys we lack and bad values are named."""

    def test_routes_read(self, tmp_path: Path) -> None:
        """A route's keys set its fields; the defaults deny approvals and use the payload as the prompt."""
        _write(tmp_path, "        secret_env: CI_SECRET\n        session_key: pr.number\n        toolsets: [terminal]\n")
        route = load_config(tmp_path).platforms.webhook.routes["ci"]
        assert (route.secret_env, route.session_key, route.toolsets, route.approvals, route.prompt) == (
            "CI_SECRET", "pr.number", ("terminal",), "deny", "",
        )

    def test_unknown_route_key_warns(self, tmp_path: Path) -> None:
        """A key a route does not read (Hermes's ``deliver``) is reported, not silently dropped."""
        _write(tmp_path, "        secret_env: CI_SECRET\n        deliver: github_comment\n")
        warnings: list[str] = []
        load_config(tmp_path, warnings=warnings)
        assert any("platforms.webhook.routes.ci.deliver" in w for w in warnings), warnings

    @pytest.mark.parametrize(
        ("route", "api", "expected"),
        [
            ("        approvals: ask\n", "true", "'approvals' must be in ('deny', 'approve')"),
            ("        secret_env: X\n", "false", "platforms.webhook.enabled needs platforms.api_server.enabled"),
            ("        sandbox: full-access\n", "true", "routes.ci.sandbox 'full-access' is wider than sandbox.max_mode"),
        ],
    )
    def test_bad_routes_refused(self, tmp_path: Path, route: str, api: str, expected: str) -> None:
        """A bad value, hooks without the API's server, or a sandbox wider than allowed is an error naming it."""
        _write(tmp_path, route, api=api)
        with pytest.raises(ConfigError) as caught:
            load_config(tmp_path)
        assert expected in str(caught.value)
