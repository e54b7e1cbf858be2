"""The redaction table: one compiled rule per kind of credential.

Each rule names the literal substrings without which it cannot match (its
*triggers*) and a finder that returns the spans to replace.  A rule runs only
when one of its triggers is in the text, so clean text costs one substring
search per trigger and no regex at all.  Case-insensitive rules run on the
text lower-cased once, offset for offset, with patterns written in lower
case: Python's ``re`` is several times slower with ``IGNORECASE``.

Only the secret itself is a span: ``Authorization: Basic [REDACTED]``,
``postgres://user:[REDACTED]@host``, ``API_KEY=[REDACTED]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

import attrs

from tools._secret_names import NAME_TRIGGERS, is_placeholder, is_secret_value, secret_assignment_spans

__all__ = ["RULES", "Rule", "secret_spans"]

Span = tuple[int, int]
Finder = Callable[[str, str], Iterable[Span]]


@attrs.frozen
class Rule:
    """One kind of credential: when to look (``triggers``) and where it is (``find``)."""

    name: str
    triggers: tuple[str, ...]
    find: Finder
    #: Triggers are looked for in the lower-cased text (and the finder reads it).
    folded: bool = False


def _whole(pattern: str, flags: int = 0) -> Finder:
    """A finder that redacts every whole match of ``pattern`` in the text as it is."""
    compiled = re.compile(pattern, flags)
    return lambda text, low: (m.span() for m in compiled.finditer(text))


def _group(pattern: str, *, folded: bool, accept: Callable[[str], bool] = is_secret_value) -> Finder:
    """A finder that redacts group 1 of ``pattern`` where ``accept`` takes it for a secret."""
    compiled = re.compile(pattern)

    def find(text: str, low: str) -> Iterator[Span]:
        for match in compiled.finditer(low if folded else text):
            if accept(match.group(1)):
                yield match.span(1)

    return find


_PEM_NAME = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
# The authorization schemes whose name stays readable before the marker.
_SCHEMES = r"(?:basic|bearer|token|digest|negotiate|ntlm|apikey|sso-key|aws4-hmac-sha256)"
# A token's body must hold a digit: long kebab- or snake-case words are not keys.
_HAS_DIGIT = r"(?=[A-Za-z0-9_-]*\d)"

RULES: tuple[Rule, ...] = (
    # PEM private keys: a whole block, one cut at its end, or one cut at its start (tail capture).
    Rule("private key", ("PRIVATE KEY",), _whole(rf"-----BEGIN{_PEM_NAME}.*?(?:-----END{_PEM_NAME}|\Z)", re.DOTALL)),
    Rule(
        "private key tail",
        ("PRIVATE KEY",),
        _whole(rf"(?:^|(?<=\\n))(?:[A-Za-z0-9+/=]{{16,}}(?:\r?\n|\\n))+-----END{_PEM_NAME}", re.MULTILINE),
    ),
    # Headers: ``Authorization: Basic …``, ``Proxy-Authorization: Bearer …``, ``"Authorization": "token …"``.
    Rule(
        "authorization header",
        ("authorization",),
        _group(
            rf"(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*(?:{_SCHEMES}[ \t]+)?(?!{_SCHEMES}\b)"
            r"([^\s'\"\\,;]+)",
            folded=True,
        ),
        folded=True,
    ),
    Rule(
        "bearer token",
        ("bearer",),
        _group(r"\bbearer[ \t]+(?=[a-z0-9._~+/=-]*\d)([a-z0-9._~+/-]{16,}=*)", folded=True),
        folded=True,
    ),
    Rule("curl user", ("-u", "--user"), _group(r"(?:^|(?<=\s))(?:-u|--user)[ =]['\"]?[^\s:'\"]+:([^\s'\"]+)", folded=False)),
    # ``scheme://user:password@host``: database URLs, git remotes, proxies.
    Rule("url password", ("://",), _group(
            r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:([^\s@/'\"]+)@",
            folded=False,
            accept=lambda password: not is_placeholder(password),
        ),),
    Rule("secret-named value", NAME_TRIGGERS, secret_assignment_spans, folded=True),
    # Prefix-shaped keys.  The look-behind sits after the literal prefix so that
    # ``re`` can search for the prefix itself; it keeps keys from matching inside an identifier.
    Rule(
        "openai/anthropic/openrouter key",
        ("sk-",),
        _whole(rf"sk-(?<![\w-]sk-){_HAS_DIGIT}[A-Za-z0-9_-]{{20,}}"),
    ),
    Rule(
        "stripe key",
        ("_live_", "_test_", "whsec_"),
        _whole(r"(?<![\w-])(?:[rs]k_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{20,})"),
    ),
    Rule(
        "github token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _whole(r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ),
    Rule(
        "gitlab token",
        ("glpat-", "gldt-", "glptt-", "glrt-", "gloas-", "glcbt-", "glsoat-", "glft-", "glimt-", "glagent-"),
        _whole(r"(?<![\w-])gl(?:pat|dt|ptt|rtr?|oas|cbt|soat|ft|imt|agent)-[A-Za-z0-9_-]{20,}"),
    ),
    Rule("slack token", ("xox", "xapp-"), _whole(r"(?<![\w-])(?:xox[abposer]|xapp)-[A-Za-z0-9-]{10,}")),
    Rule("slack webhook", ("hooks.slack.com/",), _whole(r"(?<=hooks\.slack\.com/services/)[A-Za-z0-9/]{20,}")),
    Rule("discord webhook", ("/api/webhooks/",), _whole(r"(?<=/api/webhooks/)\d+/[\w-]{20,}")),
    Rule(
        "google key",
        ("AIza", "GOCSPX-", "ya29."),
        _whole(r"(?<![\w-])(?:AIza[0-9A-Za-z_-]{35}(?![\w-])|GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[0-9A-Za-z_-]{20,})"),
    ),
    Rule(
        "aws access key id",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        _whole(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    Rule("jwt", ("eyJ",), _whole(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")),
    Rule(
        "other provider token",
        ("hf_", "npm_", "gsk_", "xai-", "pplx-", "r8_", "lin_api_", "dop_v1_", "doo_v1_", "shp", "sq0", "pypi-AgE", "SG."),
        _whole(
            r"(?<![\w.-])(?:(?:hf_|npm_|gsk_|xai-|pplx-|r8_|lin_api_|do[po]_v1_|shp(?:at|ss|ca|pa)_)"
            r"(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{20,}"
            r"|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|pypi-AgE[A-Za-z0-9_-]{50,}"
            r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})"
        ),
    ),
    Rule("telegram bot token", (":AA",), _whole(r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])")),
)

# ``str.lower`` keeps offsets for ASCII; the few characters it expands (U+0130) need this instead.
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def secret_spans(text: str) -> list[Span]:
    """Every span of ``text`` to replace, sorted, overlapping and touching spans merged."""
    low = text.lower()
    if len(low) != len(text):
        low = text.translate(_ASCII_LOWER)
    spans: list[Span] = []
    for rule in RULES:
        haystack = low if rule.folded else text
        if any(trigger in haystack for trigger in rule.triggers):
            spans.extend(rule.find(text, low))
    return _merge(spans)


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if start == end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
