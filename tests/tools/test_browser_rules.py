"""The browser's host rules as Chromium's resolver gets them, and the config values they are made of."""

from __future__ import annotations

import pytest

from config.browser import BrowserConfig
from tools.browser.requests import RequestRules


def rules_of(*allowed: str) -> list[str]:
    """The resolver rules of ``allowed``, one per item."""
    return RequestRules(allowed).resolver_rules().split(", ")


class TestResolverRules:
    """Names the page rules deny resolve to nothing in Chromium, so a WebSocket cannot reach them either."""

    def test_metadata_endpoints_resolve_to_nothing_whatever_the_settings(self) -> None:
        for rules in (rules_of(), rules_of("example.org")):
            assert "MAP 169.254.169.254 ~NOTFOUND" in rules
            assert "MAP metadata.google.internal ~NOTFOUND" in rules
            assert "MAP fd00:ec2::254 ~NOTFOUND" in rules

    def test_without_allowed_domains_other_hosts_resolve(self) -> None:
        assert "MAP * ~NOTFOUND" not in rules_of()

    def test_allowed_domains_and_their_subdomains_are_the_only_names_left(self) -> None:
        rules = rules_of("example.org", "127.0.0.1")
        assert "MAP * ~NOTFOUND" in rules
        assert {"EXCLUDE example.org", "EXCLUDE *.example.org", "EXCLUDE 127.0.0.1"} <= set(rules)

    def test_an_allowed_metadata_endpoint_is_not_excused(self) -> None:
        """Chromium applies exclusions before every mapping: excluding it would undo its own rule."""
        assert not [rule for rule in rules_of("169.254.169.254", "metadata") if rule.startswith("EXCLUDE")]


class TestAllowedDomainsConfig:
    """``browser.allowed_domains`` takes host names and addresses only: anything else would end a rule."""

    @pytest.mark.parametrize("value", ["example.org", "a-b.example_c.org.", "10.0.0.1", "fd00::1"])
    def test_hosts_are_accepted(self, value: str) -> None:
        assert BrowserConfig(allowed_domains=(value,)).allowed_domains == (value,)

    @pytest.mark.parametrize("value", ["example.org, MAP * 1.2.3.4", "a b", "", "*.example.org"])
    def test_anything_else_is_refused(self, value: str) -> None:
        with pytest.raises(ValueError, match="allowed_domains"):
            BrowserConfig(allowed_domains=(value,))
