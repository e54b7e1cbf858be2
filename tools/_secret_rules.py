"""The redaction table: one compiled rule per kind of credential.

Each rule names its *triggers*, lower-case literals that every match of it
contains or starts near (a key's prefix, a header's name), and a pattern
matched at each place a trigger occurs.  Triggers are found with ``str.find``
in the text lower-cased once, so clean text costs one substring search per
trigger and no regex at all; a rule's pattern runs only at its candidates,
anchored.  (Python's ``re`` scans a text about a hundred times slower with an
alternation of the literals, or with a pattern that starts with a
look-behind, and several times slower with ``IGNORECASE``.)

Only the secret itself is a span: ``Authorization: Basic [REDACTED]``,
``postgres://user:[REDACTED]@host``, ``API_KEY=[REDACTED]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs

from tools._secret_names import NAME_TRIGGERS, is_placeholder, is_secret_value, secret_assignment_spans

__all__ = [
    "RULES", "SECRET_REACH", "Rule", "has_digit_trigger", "may_hold_secrets", "may_span_lines", "no_trigger_but_digits",
    "secret_spans", "without_digits",
]

Span = tuple[int, int]
Finder = Callable[[str, str, Sequence[int]], Iterable[Span]]
"""``(text, lower-cased text, offsets of the rule's triggers) -> spans``."""


@attrs.frozen
class Rule:
    """One kind of credential: what it always contains (``triggers``, lower case) and where it is (``find``);
    ``spans_lines`` when a match may run across line breaks (a private key)."""

    name: str
    triggers: tuple[str, ...]
    find: Finder
    spans_lines: bool = False


def _at(
    pattern: str,
    *,
    group: int = 0,
    folded: bool = False,
    back: str = "",
    accept: Callable[[str], bool] | None = None,
) -> Finder:
    """A finder matching ``pattern`` at each trigger; it redacts ``group`` where ``accept`` takes it for a secret.

    Args:
        folded: match the lower-cased text (``pattern`` is written in lower case).
        back: characters that may precede the trigger within a match (a URL's scheme); the match starts before them.
    """
    compiled = re.compile(pattern, re.DOTALL)
    back_chars = frozenset(back)

    def find(text: str, low: str, anchors: Sequence[int]) -> Iterator[Span]:
        haystack = low if folded else text
        for anchor in anchors:
            start = anchor
            floor = max(0, anchor - _MAX_BACK)
            while start > floor and haystack[start - 1] in back_chars:
                start -= 1
            match = compiled.match(haystack, start)
            if match is None:
                continue
            span = match.span(group)
            # Judged as written: ``$TOKEN`` is a placeholder, ``$token`` is not.
            if accept is None or accept(text[span[0] : span[1]]):
                yield span

    return find


_MAX_BACK = 32
_PEM_NAME = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = re.compile(rf"-----END{_PEM_NAME}")
_PEM_BODY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n\\")
# The longest private key (RSA 8192) is about 6,300 characters of PEM.
_PEM_MAX = 8192
#: The longest secret a rule finds across line breaks (a private key): whether a line is part of
#: one is decided by the text at most this far on either side of it.
SECRET_REACH = _PEM_MAX


def _pem_tails(text: str, low: str, anchors: Sequence[int]) -> Iterator[Span]:
    """A private key whose ``BEGIN`` line was cut off (a tail capture): its body up to the ``END`` line."""
    for anchor in anchors:
        end = _PEM_END.match(text, anchor)
        if end is None:
            continue
        start, floor = anchor, max(0, anchor - _PEM_MAX)
        while start > floor and text[start - 1] in _PEM_BODY:
            start -= 1
        while start < anchor and text[start] in "\r\n":  # the line break before the body stays
            start += 1
        if anchor - start >= 16:
            yield start, end.end()


_SCHEMES = r"(?:basic|bearer|token|digest|negotiate|ntlm|apikey|sso-key|aws4-hmac-sha256)"
_SCHEME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789+.-"
# Prefix-shaped keys: the look-behind keeps them from matching inside an identifier.
_NOT_INSIDE = r"(?<![\w-])"
_NOT_INSIDE_ALNUM = r"(?<![A-Za-z0-9])"
# A key's body must hold a digit: long kebab- or snake-case words are not keys.
_HAS_DIGIT = r"(?=[A-Za-z0-9]*\d)"

RULES: tuple[Rule, ...] = (
    Rule(
        "private key",
        ("-----begin",),
        # Cut off, it runs to the end of the text, or to a NUL: redact.py joins a result's strings with NULs.
        _at(rf"-----BEGIN{_PEM_NAME}[^\x00]*?(?:-----END{_PEM_NAME}|(?=\x00)|\Z)"),
        spans_lines=True,
    ),
    Rule("private key, cut at its start", ("-----end",), _pem_tails, spans_lines=True),
    # ``Authorization: Basic …``, ``Proxy-Authorization: Bearer …``, ``"Authorization": "token …"``.
    Rule(
        "authorization header",
        ("auth",),
        _at(
            rf"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*(?:{_SCHEMES}[ \t]+)?(?!{_SCHEMES}\b)"
            r"([^\s'\"\\,;]+)",
            group=1,
            folded=True,
            accept=is_secret_value,
        ),
    ),
    Rule(
        "bearer token",
        ("bearer",),
        _at(r"\bbearer[ \t]+(?=[a-z0-9._~+/=-]*\d)([a-z0-9._~+/-]{16,}=*)", group=1, folded=True),
    ),
    Rule(
        "curl user",
        ("-u",),
        _at(r"(?<!\S)(?:-u|--user)[ =]['\"]?[^\s:'\"]+:([^\s'\"]+)", group=1, back="-", accept=is_secret_value),
    ),
    # ``scheme://user:password@host``: database URLs, git remotes, proxies.
    Rule(
        "url password",
        ("://",),
        _at(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:([^\s@/'\"]+)@",
            group=1,
            back=_SCHEME_CHARS + _SCHEME_CHARS.upper(),
            accept=lambda password: not is_placeholder(password),
        ),
    ),
    Rule("secret-named value", NAME_TRIGGERS, secret_assignment_spans),
    Rule(
        "openai, anthropic or openrouter key",
        ("sk-",),
        # A known project prefix is enough; a bare ``sk-`` needs a digit (``sk-learn-compatible`` is no key).
        _at(rf"{_NOT_INSIDE}sk-(?:(?:proj|ant|or|svcacct|admin)-|(?=[\w-]*\d))[A-Za-z0-9_-]{{16,}}"),
    ),
    Rule(
        "stripe key",
        ("k_live_", "k_test_", "whsec_"),
        _at(rf"{_NOT_INSIDE}(?:[rs]k_(?:live|test)_[A-Za-z0-9]{{10,}}|whsec_[A-Za-z0-9+/=]{{20,}})", back="rs"),
    ),
    Rule(
        "github token",
        ("gh", "github_pat_"),
        _at(rf"{_NOT_INSIDE}(?:gh[pousr]_[A-Za-z0-9]{{30,}}|github_pat_[A-Za-z0-9_]{{30,}})"),
    ),
    Rule(
        "gitlab token",
        ("gl",),
        _at(rf"{_NOT_INSIDE}gl(?:pat|dt|ptt|rtr?|oas|cbt|soat|ft|imt|agent)-[A-Za-z0-9_-]{{20,}}"),
    ),
    Rule("slack token", ("xox", "xapp-"), _at(rf"{_NOT_INSIDE}(?:xox[abposer]|xapp)-[A-Za-z0-9-]{{10,}}")),
    Rule("slack webhook", ("hooks.slack.com/services/",), _at(r"hooks\.slack\.com/services/([A-Za-z0-9/]{20,})", group=1)),
    Rule("discord webhook", ("/api/webhooks/",), _at(r"/api/webhooks/(\d+/[\w-]{20,})", group=1)),
    Rule(
        "google key",
        ("aiza", "gocspx-", "ya29."),
        _at(rf"{_NOT_INSIDE}(?:AIza[0-9A-Za-z_-]{{35}}(?![\w-])|GOCSPX-[A-Za-z0-9_-]{{20,}}|ya29\.[0-9A-Za-z_-]{{20,}})"),
    ),
    Rule(
        "aws access key id",
        ("akia", "asia"),
        _at(rf"{_NOT_INSIDE_ALNUM}(?:AKIA|ASIA)[A-Z0-9]{{16}}(?![A-Za-z0-9])"),
    ),
    Rule("jwt", ("eyj",), _at(rf"{_NOT_INSIDE}eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{4,}}\.[A-Za-z0-9_-]*")),
    Rule(
        "hugging face, npm, pypi, groq or xai token",
        ("hf_", "npm_", "pypi-age", "gsk_", "xai-"),
        _at(rf"(?<![\w.-])(?:(?:hf_|npm_|gsk_|xai-){_HAS_DIGIT}[A-Za-z0-9]{{20,}}|pypi-AgE[A-Za-z0-9_-]{{50,}})"),
    ),
    Rule(
        "telegram bot token",
        (":aa",),
        _at(r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])", back="0123456789"),
    ),
)

# Every rule's triggers with the rule's index, flat: a text without any costs one substring test each and
# no generator per rule (clean short texts, a tool's arguments, are most of what is redacted).
_TRIGGERS: tuple[tuple[str, int], ...] = tuple(
    (trigger, index) for index, rule in enumerate(RULES) for trigger in rule.triggers
)

# The triggers of the rules whose matches may run across line breaks.
_LINE_SPANNING_TRIGGERS: tuple[str, ...] = tuple(
    trigger for rule in RULES if rule.spans_lines for trigger in rule.triggers
)

# A trigger without a digit that is in a text is in the text with its digits taken out too (its characters stay
# together there): :func:`no_trigger_but_digits` looks for these in that; the few with a digit are looked for in
# the text itself (:func:`has_digit_trigger`). The digits are taken out of the text's UTF-8, where an ASCII
# trigger is found exactly where it is in the text (the bytes of any other character are all above 127), ten
# times faster than ``str.translate`` does it.
_DIGITS = "0123456789"
_DIGIT_BYTES = _DIGITS.encode("ascii")
_DIGITLESS_TRIGGERS: tuple[bytes, ...] = tuple(
    dict.fromkeys(trigger.encode("ascii") for trigger, _ in _TRIGGERS if not any(digit in trigger for digit in _DIGITS))
)
_DIGIT_TRIGGERS: tuple[str, ...] = tuple(
    dict.fromkeys(trigger for trigger, _ in _TRIGGERS if any(digit in trigger for digit in _DIGITS))
)

_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _lower(text: str) -> str:
    # ``str.lower`` keeps offsets for ASCII; the few characters it expands (U+0130) need the translation.
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _offsets(low: str, trigger: str) -> Iterator[int]:
    at = low.find(trigger)
    while at != -1:
        yield at
        at = low.find(trigger, at + 1)


def may_hold_secrets(text: str) -> bool:
    """Whether any rule's trigger is in ``text``: false means no rule can match it, nor its JSON-decoded form.

    Triggers are ASCII without quotes or backslashes, which JSON encoding leaves as they are.
    """
    low = _lower(text)
    return any(trigger in low for trigger, _ in _TRIGGERS)


def without_digits(text: str) -> bytes:
    """``text`` as the rules look at it (lower case) in UTF-8 (lone surrogates too), its ASCII digits taken out."""
    return _lower(text).encode("utf-8", "surrogatepass").translate(None, _DIGIT_BYTES)


def no_trigger_but_digits(digitless: bytes) -> bool:
    """Whether no trigger without a digit is in ``digitless``, a :func:`without_digits` of some text: true means
    no such trigger is in that text either (and, with :func:`has_digit_trigger` false, no rule can match it)."""
    return not any(trigger in digitless for trigger in _DIGITLESS_TRIGGERS)


def has_digit_trigger(text: str) -> bool:
    """Whether a trigger with a digit in it (one :func:`without_digits` would hide) is in ``text``."""
    low = _lower(text)
    return any(trigger in low for trigger in _DIGIT_TRIGGERS)


def may_span_lines(text: str) -> bool:
    """Whether a secret running across line breaks (a private key) may be in ``text``: false means that
    redacting each of its lines alone finds every secret redacting it whole would."""
    low = _lower(text)
    return any(trigger in low for trigger in _LINE_SPANNING_TRIGGERS)


def secret_spans(text: str) -> list[Span]:
    """Every span of ``text`` to replace, sorted, overlapping and touching spans merged."""
    low = _lower(text)
    found = {rule for trigger, rule in _TRIGGERS if trigger in low}
    if not found:
        return []
    spans: list[Span] = []
    for index in sorted(found):
        rule = RULES[index]
        anchors = sorted(offset for trigger in rule.triggers for offset in _offsets(low, trigger))
        spans.extend(rule.find(text, low, anchors))
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
