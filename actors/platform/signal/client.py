"""signal-cli's JSON-RPC over HTTP (``POST /api/v1/rpc``): one call, its result or a named error, Signal's
rate limits waited out.

A call is a JSON-RPC 2.0 request whose ``params`` name the ``account`` (a daemon may serve several). An
error answer is ``{"error": {"code", "message", "data"}}``: ``-1`` the caller's mistake, ``-3`` a server
or network failure, ``-4`` an untrusted identity key, ``-5`` a rate limit (Signal's servers answered 429;
``data.response.results[*].retryAfterSeconds`` says how long, or the message ``Retry after N seconds``).
A ``send`` that went out answers ``{"timestamp", "results": [{"type": "SUCCESS" | "RATE_LIMIT_FAILURE" |
"NETWORK_FAILURE" | "UNREGISTERED_FAILURE" | "IDENTITY_FAILURE" ..., "retryAfterSeconds", "token"}]}``.

A rate limit is waited out (every call waits: Signal counts per account) and the call is made again, up to
:data:`MAX_ATTEMPTS` times. A rate limit that carries a ``token`` is Signal asking for proof (a captcha)
before it takes more messages: that cannot be waited out, and the log line says the command that lifts it.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Callable
from typing import Any

import httpx2
import trio

from actors.platform.gateway.adapter import TokenRefused
from actors.platform.outbound import DeliveryFailed
from messages.wire_shapes import wire_object, wire_text

__all__ = ["MAX_ATTEMPTS", "RATE_LIMITED", "SignalAccountRefused", "SignalClient", "SignalError", "SignalRateLimited"]

log = logging.getLogger("hermes_actors.signal")

#: signal-cli's JSON-RPC error code for a rate limit.
RATE_LIMITED = -5
#: Times one call is made when Signal asks to wait.
MAX_ATTEMPTS = 4
#: Bytes of an answer past which it is parsed in a thread.
LARGE_ANSWER = 1 << 20
#: The wait after a rate limit that names none, in seconds (a token's refill time on Signal's servers).
DEFAULT_RETRY = 4.0
_RETRY_AFTER = re.compile(r"retry after (\d+(?:\.\d+)?)\s*second", re.IGNORECASE)
_SOLVE = ("Signal wants proof before it takes more messages from {account}: solve a captcha at "
          "https://signalcaptchas.org/challenge/generate.html and run: signal-cli -a {account} "
          "submitRateLimitChallenge --challenge {token} --captcha CAPTCHA")


class SignalError(DeliveryFailed):
    """A call failed: signal-cli's error, or what went wrong on the way."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__(f"signal {what}: {error}")
        self.error = error


class SignalAccountRefused(SignalError, TokenRefused):
    """signal-cli does not know the account (not registered or linked there): trying again will not mend it."""


class SignalRateLimited(SignalError):
    """Still rate limited after waiting as asked, or asked for proof (a captcha) that only the owner can give."""


class SignalClient:
    """Calls for one account.

    Args:
        url: the daemon's address (``http://127.0.0.1:8080``).
        account: the bot's account (its number).
        client: the HTTP client (the caller closes it).
        clock: Trio's clock, so tests can move it.
    """

    def __init__(self, url: str, account: str, client: httpx2.AsyncClient, clock: Callable[[], float] = trio.current_time) -> None:
        self.root = url.rstrip("/")
        self.account = account
        self._client = client
        self._clock = clock
        self._ids = itertools.count(1)
        self._closed_until = 0.0
        self.rate_limited = 0
        self.waited = 0.0
        self.proof_required = 0

    async def call(self, method: str, **params: Any) -> Any:
        """Call ``method`` with ``params`` (and the account); its result.

        Raises:
            SignalAccountRefused: signal-cli does not know the account.
            SignalRateLimited: still rate limited, or proof asked for.
            SignalError: any other failure (a ``send`` whose every recipient failed among them).
        """
        for _ in range(MAX_ATTEMPTS):
            await self._wait()
            request = {"jsonrpc": "2.0", "method": method, "params": {"account": self.account, **params}, "id": next(self._ids)}
            try:
                response = await self._client.post(f"{self.root}/api/v1/rpc", json=request, timeout=60.0)
            except httpx2.HTTPError as exc:
                raise SignalError(method, f"signal-cli did not answer ({type(exc).__name__})") from None
            # An attachment comes back as base64 inside the answer: a large one is parsed off the event loop.
            body = response.content
            answer = await trio.to_thread.run_sync(_parse, body) if len(body) > LARGE_ANSWER else _parse(body)
            if response.status_code >= 300 or not isinstance(answer, dict):
                raise SignalError(method, f"HTTP {response.status_code}, not a JSON-RPC answer")
            if "error" in answer:
                error = wire_object(answer["error"])
                delay = self._limit(method, error)
                if delay is None:
                    raise self._failure(method, error)
            else:
                delay = self._limit_in_results(method, answer.get("result"))
                if delay is None:
                    return answer.get("result")
            self._closed_until = max(self._closed_until, self._clock() + delay)
        raise SignalRateLimited(method, f"still rate limited after waiting as asked, {MAX_ATTEMPTS} times")

    def _failure(self, method: str, error: dict[str, Any]) -> SignalError:
        message = wire_text(error.get("message"))[:300] or "no message"
        text = f"error {error.get('code')}: {message}"
        if "account" in message.lower() and ("not exist" in message.lower() or "not registered" in message.lower()):
            return SignalAccountRefused(method, text)
        return SignalError(method, text)

    def _limit(self, method: str, error: dict[str, Any]) -> float | None:
        """How long to wait when ``error`` is a rate limit; None when it is another error."""
        message = wire_text(error.get("message"))
        if error.get("code") != RATE_LIMITED and "[429]" not in message and "ratelimit" not in message.lower():
            return None
        results = wire_object(wire_object(error.get("data")).get("response")).get("results")
        return self._limited(method, results, message)

    def _limit_in_results(self, method: str, result: Any) -> float | None:
        """How long to wait when a ``send``'s every recipient was rate limited; None when it went out.

        Raises:
            SignalError: every recipient failed otherwise (unregistered, an untrusted key, the network).
        """
        results = wire_object(result).get("results")
        if not isinstance(results, list) or not results:
            return None
        kinds = [wire_text(wire_object(r).get("type")) or "SUCCESS" for r in results]
        if "SUCCESS" in kinds:
            return None
        if all(kind == "RATE_LIMIT_FAILURE" for kind in kinds):
            return self._limited(method, results, "")
        raise SignalError(method, f"not delivered ({', '.join(sorted(set(kinds)))})")

    def _limited(self, method: str, results: Any, message: str) -> float:
        """Count a rate limit and say how long to wait.

        Raises:
            SignalRateLimited: Signal asks for proof (a challenge token came with it).
        """
        entries = [wire_object(r) for r in results] if isinstance(results, list) else []
        token = next((wire_text(e.get("token")) for e in entries if wire_text(e.get("token"))), "")
        if token:
            self.proof_required += 1
            log.error(_SOLVE.format(account=self.account, token=token))
            raise SignalRateLimited(method, "Signal asks for proof (a captcha) before it takes more messages; see the log")
        waits = [float(e["retryAfterSeconds"]) for e in entries if isinstance(e.get("retryAfterSeconds"), (int, float))]
        said = _RETRY_AFTER.search(message)
        delay = max(waits) if waits else float(said.group(1)) if said else DEFAULT_RETRY
        self.rate_limited += 1
        log.warning("signal %s: rate limited, waiting %.3f s as asked", method, delay)
        return max(0.0, delay)

    async def _wait(self) -> None:
        while (delay := self._closed_until - self._clock()) > 0:
            self.waited += delay
            await trio.sleep(delay)

    async def check(self) -> None:
        """``GET /api/v1/check``: the daemon is up.

        Raises:
            SignalError: it did not answer 200.
        """
        try:
            response = await self._client.get(f"{self.root}/api/v1/check", timeout=10.0)
        except httpx2.HTTPError as exc:
            raise SignalError("check", f"signal-cli is not reachable at {self.root} ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise SignalError("check", f"HTTP {response.status_code}")


def _parse(body: bytes) -> Any:
    """An answer's JSON; None when it is not JSON."""
    try:
        return json.loads(body)
    except ValueError:
        return None
