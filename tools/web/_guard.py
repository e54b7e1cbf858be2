"""Keeping web_extract on the public internet.

A model that can be talked into fetching ``http://169.254.169.254/`` or
``http://localhost:8080/admin`` can be used to read what only this machine may see
(request forgery through the agent). Every hop of a fetch, redirects included, must
resolve to global addresses unless ``web.allow_private_addresses`` says otherwise.
A host that re-resolves between this check and the connection (DNS rebinding) is not
covered; the check stops the plain cases.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import trio

from tools.web.errors import FetchError

__all__ = ["check_public_url"]


def _non_global(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global


async def check_public_url(url: str) -> None:
    """Return when every address ``url``'s host resolves to is a public one.

    Raises:
        FetchError: the URL has no host, the host does not resolve, or it resolves to a
            loopback, private, link-local or otherwise non-global address.
    """
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise FetchError("The URL has no host.")
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            infos = await trio.socket.getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise FetchError(f"Could not resolve the host {host}.") from exc
        addresses = [str(info[4][0]) for info in infos]
    if any(_non_global(address) for address in addresses):
        raise FetchError(
            f"{host} is a local or private network address; web_extract only reads public web pages."
        )
