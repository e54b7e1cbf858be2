"""Fake credentials of every kind the redaction table covers, shaped like real ones (none is real).

``make_sample(kind, rng)`` builds one: the secret, a line holding it as a
user would meet it (a config file, a header, a log line), and that line as it
should read once redacted.  The tests use a fixed set; the Hypothesis
strategy in ``tests.strategies`` draws new ones.
"""

from __future__ import annotations

import base64
import json
import random
import string

import attrs

from tools.redact import REDACTED

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


@attrs.frozen
class Sample:
    """One fake credential in context."""

    kind: str
    secret: str
    line: str
    redacted: str


def _word(rng: random.Random, size: int, alphabet: str = ALNUM) -> str:
    """``size`` characters of ``alphabet``, with at least one digit (as real keys have)."""
    chars = [rng.choice(alphabet) for _ in range(size - 1)]
    chars.insert(rng.randrange(size), rng.choice(string.digits))
    return "".join(chars)


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _pem(rng: random.Random) -> str:
    body = "\n".join(_word(rng, 64, B64) for _ in range(6))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def _jwt(rng: random.Random) -> str:
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    payload = _b64url({"sub": _word(rng, 10), "iat": rng.randrange(10**9, 2 * 10**9)})
    return f"{header}.{payload}.{_word(rng, 43, ALNUM + '-_')}"


# kind -> (secret builder, context template with {s} for the secret)
_KINDS = {
    "openai": (lambda r: "sk-proj-" + _word(r, 48, ALNUM + "-_"), "key in use: {s}"),
    "anthropic": (lambda r: "sk-ant-api03-" + _word(r, 93, ALNUM + "-_"), "client = Anthropic(api_key='{s}')"),
    "openrouter": (lambda r: "sk-or-v1-" + _word(r, 64, "0123456789abcdef"), "Using OpenRouter key {s} for this run"),
    "google": (lambda r: "AIza" + _word(r, 35, ALNUM + "-_"), "https://maps.googleapis.com/api?key={s}&q=x"),
    "aws key id": (lambda r: "AKIA" + _word(r, 16, string.ascii_uppercase + string.digits), "aws_access_key_id={s}"),
    "aws secret": (lambda r: _word(r, 40, B64), "aws_secret_access_key = {s}"),
    "github": (lambda r: "ghp_" + _word(r, 36), "git clone with token {s} failed"),
    "github fine-grained": (lambda r: "github_pat_" + _word(r, 82, ALNUM + "_"), "GH={s}"),
    "gitlab": (lambda r: "glpat-" + _word(r, 20, ALNUM + "-_"), "remote token {s} expired"),
    "slack": (lambda r: f"xoxb-{r.randrange(10**11, 10**12)}-{_word(r, 24)}", "slack_client.token = {s}"),
    "stripe live": (lambda r: "sk_live_" + _word(r, 24), "stripe.api_key = {s}"),
    "stripe restricted": (lambda r: "rk_live_" + _word(r, 24), "charge with {s}"),
    "stripe test": (lambda r: "sk_test_" + _word(r, 24), "STRIPE={s}"),
    "jwt": (_jwt, "session cookie value {s} (expires soon)"),
    "pem": (_pem, "{s}"),
    "basic auth": (lambda r: base64.b64encode(f"{_word(r, 6)}:{_word(r, 12)}".encode()).decode(), "Authorization: Basic {s}"),
    "bearer auth": (lambda r: _word(r, 40, ALNUM + "._-"), "Authorization: Bearer {s}"),
    "env variable": (lambda r: _word(r, 24), "API_KEY={s}"),
    "exported variable": (lambda r: _word(r, 14, ALNUM + "!@#%^"), "export DB_PASSWORD={s}"),
    "yaml variable": (lambda r: _word(r, 30), "  OPENAI_API_KEY: {s}"),
    "json api_key": (lambda r: _word(r, 32), '{{"api_key": "{s}", "region": "eu"}}'),
    "json password": (lambda r: _word(r, 16, ALNUM + "!#%&*+-"), '"password": "{s}",'),
    "json client_secret": (lambda r: _word(r, 32), '{{"client_id": "abc", "client_secret": "{s}"}}'),
    "json token": (lambda r: _word(r, 40), '{{"token": "{s}"}}'),
    "url password": (lambda r: _word(r, 16), "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod"),
}

KINDS = tuple(_KINDS)


def make_sample(kind: str, rng: random.Random) -> Sample:
    """A fresh fake credential of ``kind`` in its context line."""
    build, template = _KINDS[kind]
    secret = build(rng)
    return Sample(kind, secret, template.format(s=secret), template.format(s=REDACTED))


#: One sample of every kind, the same on every run.
SAMPLES: tuple[Sample, ...] = tuple(make_sample(kind, random.Random(f"redact-{kind}")) for kind in KINDS)

#: Text that looks like a secret and is not one; redaction must keep each as it is.
NEAR_MISSES: tuple[str, ...] = (
    "PWD=/home/x",
    "OLDPWD=/home/x/src",
    "KEYBOARD=us",
    "pip install sk-learn-compatible-estimators",
    "sk-this-is-a-kebab-case-identifier-without-digits",
    "token_count=5",
    '{"tokens": 12, "max_tokens": 4096}',
    "Users may set a password_hint to remind themselves of the phrase.",
    "password: see the vault",
    "commit 3ee45c0f2b1c6d9e8a7b4c3d2e1f0a9b8c7d6e5f",
    "request 123e4567-e89b-12d3-a456-426614174000 done",
    "the bearer of bad news",
    "Bearer token",
    "Basic authentication is disabled",
    "https://example.com:8080/path?q=1",
    "ssh://git@github.com/org/repo.git",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqh\n-----END PUBLIC KEY-----",
    "def connect(password=password, token=self._token):",
    "    api_key: str",
    "token = refresh_token",
    "password = os.environ['DB_PASSWORD']",
    "API_KEY=${OPENAI_API_KEY}",
    'headers = {"Authorization": f"Bearer {token}"}',
    "AKIA is a prefix, AKIA123 is too short",
    "ghp_short",
    "",
)
