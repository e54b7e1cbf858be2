"""Secret-named assignments: ``API_KEY=…``, ``export DB_PASSWORD=…``, ``token: …``, ``"api_key": "…"``.

A value is a secret because of the name it is given, not its shape, so this
rule finds names first.  Names are matched on lower-cased text (the caller
lowers it once for every case-insensitive rule) and must *end* in a secret
word: ``token_count=5``, ``password_hint`` and ``"tokens": 12`` are left
alone, as are ``PWD=/home/x`` (the shell's working directory) and
``KEYBOARD=us``.

The value's form decides how much evidence is needed, because source code
assigns variables to secret-named names all day (``password=password``,
``token = self._token``, ``api_key: str``): a quoted value is a literal and is
redacted; an unquoted one is redacted unless it reads as code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

__all__ = ["NAME_TRIGGERS", "is_placeholder", "is_secret_name", "is_secret_value", "secret_assignment_spans"]

#: Lower-case substrings without which no secret-named assignment can occur.
NAME_TRIGGERS = ("key", "secret", "token", "pass", "pwd", "auth")

# A secret word at the end of a name, followed by (an optional closing quote and) a separator.
_WORD = re.compile(
    r"(?:password|passwd|passphrase|pass|secret|token|pwd|auth|key)"
    r"(?=\\?[\"'`]?[ \t]*(?::=|=>|=(?!=)|:(?!:)))"
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
# A name is at most this long: bounds the backward scan whatever the text is.
_MAX_NAME = 80

# What the name must end with, beyond ending in a secret word.  ``key``
# alone is too common (``sort_key``, ``KEYBOARD``); bare ``pass``, ``pwd`` and
# ``auth`` are too (``bypass``, the shell's ``PWD``, ``oauth``).
_SECRET_NAME = re.compile(
    r"(?:password|passwd|passphrase|secret|token"
    r"|(?:api|access|secret|private|signing|encryption|master|account|sharedaccess|auth|license)[_.-]?key"
    r"|[_.-](?:pass|pwd|auth))$"
)

_SEPARATOR = re.compile(r"(\\?[\"'`]?)([ \t]*)(:=|=>|=|:)[ \t]*")
_QUOTED = {
    '"': re.compile(r'"([^"\r\n]*)"'),
    "'": re.compile(r"'([^'\r\n]*)'"),
    "`": re.compile(r"`([^`\r\n]*)`"),
    "\\": re.compile(r'\\"((?:[^"\\\r\n]|\\[^"\r\n])*)\\"'),
}
# Unquoted values: after ``=`` a shell/dotenv/logfmt/connection-string token;
# after ``:`` a YAML or header value, which must be the rest of its line (so
# prose such as "password: see the vault" stays).
# A backslash ends a value only as a JSON escape (``\n``): a result too deep to decode is redacted as its text.
_EQ_VALUE = re.compile(r"(?:[^\s'\"`;&,()\[\]{}<>|\\]|\\(?![nrt\"\\]))+")
_COLON_VALUE = re.compile(r"([^\s'\"`#,;(){}\[\]]+)[ \t]*(?:#[^\r\n]*)?(?:\r?\n|\\n|$)")
# An identifier or attribute path: in code, a reference to a secret, not the secret.
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# No code names a variable like this: 16+ letters and digits, a digit among them, no separators.
_RANDOM_LOOKING = re.compile(r"(?=[A-Za-z]*\d)[A-Za-z0-9]{16,}")

_MIN_VALUE = 3
# Values that are configuration words, type names or masks, never credentials.
_NOT_SECRETS = frozenset(
    "true false null none nil yes no on off undefined required optional enabled disabled "
    "str string int bool bytes float any number boolean object secretstr redacted".split()
)
# ``${TOKEN}``, ``$(pass show db)``, ``$DB_PASSWORD``, ``{{ vault_pw }}``, ``<your key>``, ``%(password)s``, the marker.
_PLACEHOLDER = re.compile(r"\$[{(]|\$[A-Z_][A-Z0-9_]*$|\{\{|<[^<>]*>$|%[({]|\[REDACTED")


def is_secret_name(name: str) -> bool:
    """Whether ``name`` (a variable, header, key or flag name) names a secret value."""
    return bool(_SECRET_NAME.search(name.lower().lstrip("-")))


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a secret without being one: ``${TOKEN}``, ``<password>``, ``****``, the marker."""
    stripped = value.strip()
    return not stripped.strip("*xX.•") or _PLACEHOLDER.match(stripped) is not None


def is_secret_value(value: str) -> bool:
    """Whether ``value``, given to a secret name, is a credential rather than a word or a placeholder."""
    stripped = value.strip()
    if len(stripped) < _MIN_VALUE or stripped.lower() in _NOT_SECRETS:
        return False
    return not is_placeholder(stripped)


def secret_assignment_spans(text: str, low: str, anchors: Sequence[int]) -> Iterator[tuple[int, int]]:
    """The spans of ``text`` that are values given to secret names.

    Args:
        text: the text as it is.
        low: ``text`` lower-cased, offset for offset.
        anchors: where a :data:`NAME_TRIGGERS` word occurs in ``low``.
    """
    for anchor in anchors:
        match = _WORD.match(low, anchor)
        if match is None:
            continue
        start = match.start()
        floor = max(0, start - _MAX_NAME)
        while start > floor and low[start - 1] in _NAME_CHARS:
            start -= 1
        name = low[start : match.end()]
        if not _SECRET_NAME.search(name.lstrip("-")) and not _is_connection_pwd(low, start, name):
            continue
        span = _value_span(text, match.end())
        if span is not None:
            yield span


def _is_connection_pwd(low: str, start: int, name: str) -> bool:
    """``Pwd=`` in an ODBC connection string (``Uid=sa;Pwd=…``), unlike the shell's ``PWD=/path``."""
    if name != "pwd":
        return False
    while start > 0 and low[start - 1] == " ":
        start -= 1
    return start > 0 and low[start - 1] == ";"


def _value_span(text: str, name_end: int) -> tuple[int, int] | None:
    separator = _SEPARATOR.match(text, name_end)
    if separator is None:
        return None
    at = separator.end()
    opening = text[at : at + 1]
    if opening in _QUOTED:
        quoted = _QUOTED[opening].match(text, at)
        if quoted is None:
            return None
        start, end = quoted.span(1)
        return (start, end) if is_secret_value(text[start:end]) else None
    sep = separator.group(3)
    if sep == ":":
        value = _COLON_VALUE.match(text, at)
        if value is None:
            return None
        start, end = value.span(1)
    else:
        value = _EQ_VALUE.match(text, at)
        if value is None:
            return None
        start, end = value.span()
        if _reads_as_code(text, start, end, spaced=bool(separator.group(2)) or sep != "="):
            return None
    return (start, end) if is_secret_value(text[start:end]) else None


def _reads_as_code(text: str, start: int, end: int, *, spaced: bool) -> bool:
    """An assignment in source code: ``token = self._token``, ``f(password=password)``, ``key=get()``.

    A long run of letters and digits is a key even where an identifier could stand
    (``aws_secret_access_key = <40 characters>`` in a credentials file).
    """
    following = text[end : end + 1]
    if following in ("(", "["):
        return True
    if not _IDENTIFIER_PATH.fullmatch(text, start, end) or _RANDOM_LOOKING.fullmatch(text, start, end):
        return False
    # ``x = name`` is code; ``NAME=value`` (dotenv, shell, logfmt) only when it is a keyword argument.
    return spaced or following in (",", ")")
