"""Which addresses a session's pages may reach.

Every request a page makes is paused (``Fetch.requestPaused``) and let through only when its host passes:
``browser.allowed_domains`` when it lists any, and never a cloud metadata endpoint (as in Hermes, whatever
the settings: a browser on a cloud machine would hand the model the machine's credentials). What the
network lets the browser reach at all is the jail's business (``sandbox.network: false`` leaves it only
its own loopback); these rules narrow that, they never widen it. A navigation is also refused when its URL
carries something that looks like a secret, so a page cannot be used to send one away.

WebSockets are never paused (the DevTools Protocol has no hook for them), so the same rules are also given to
Chromium's resolver (:meth:`RequestRules.resolver_rules`): every connection it makes, a WebSocket's included,
starts with a name lookup, and a host the rules deny resolves to nothing there.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote, urlsplit

from tools.redact import redact_secrets

__all__ = ["RequestRules"]

_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data"})
_METADATA_ADDRESSES = frozenset({
    ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("169.254.170.2"),
    ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254"),
})  # fmt: skip
_NAVIGABLE = ("http", "https")
# Requests without a network host: the page's own data, blobs, about:blank.
_LOCAL_SCHEMES = frozenset({"data", "blob", "about", "chrome-extension", "devtools"})


class RequestRules:
    """The host rules of one browser.

    Args:
        allowed_domains: hosts, each also covering its subdomains; empty allows every host.
    """

    def __init__(self, allowed_domains: tuple[str, ...]) -> None:
        self.allowed = tuple(domain.lower().strip(".") for domain in allowed_domains if domain.strip("."))

    def refusal(self, url: str) -> str | None:
        """Why a page may not request ``url``, or None when it may."""
        parts = urlsplit(url)
        if parts.scheme in _LOCAL_SCHEMES:
            return None
        host = (parts.hostname or "").lower().rstrip(".")
        if not host:
            return None if parts.scheme == "file" else f"{url!r} has no host"
        if _is_metadata(host):
            return f"{host} is a cloud metadata endpoint"
        if self.allowed and not any(host == domain or host.endswith("." + domain) for domain in self.allowed):
            return f"{host} is not in browser.allowed_domains"
        return None

    def resolver_rules(self) -> str:
        """Chromium's ``--host-resolver-rules``: the metadata endpoints and, when ``allowed_domains`` lists
        any, every host outside them resolve to nothing (IP literals included)."""
        # Chromium checks the exclusions before any mapping: an allowed domain must never excuse a
        # metadata endpoint.
        rules = [f"MAP {host} ~NOTFOUND" for host in (*sorted(_METADATA_HOSTS), *map(str, _METADATA_ADDRESSES))]
        if self.allowed:
            rules.append("MAP * ~NOTFOUND")
            for domain in self.allowed:
                if not _is_metadata(domain):
                    rules += [f"EXCLUDE {domain}", f"EXCLUDE *.{domain}"]
        return ", ".join(rules)

    def navigation_refusal(self, url: str) -> str | None:
        """Why ``browser_navigate`` may not open ``url``, or None when it may."""
        parts = urlsplit(url)
        if url == "about:blank":
            return None
        if parts.scheme not in _NAVIGABLE:
            return f"only http and https URLs can be opened, not {parts.scheme or 'a URL without a scheme'!r}"
        if redact_secrets(url) != url or redact_secrets(unquote(url)) != unquote(url):
            return "the URL contains what looks like an API key or token; secrets must not be sent in URLs"
        return self.refusal(url)


def _is_metadata(host: str) -> bool:
    if host in _METADATA_HOSTS:
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address in _METADATA_ADDRESSES
