"""Reading bash's ``export -p``: the exported variables a command left behind, as bytes.

bash prints one line per exported variable, ``declare -FLAGS NAME="value"`` (``export NAME="value"`` in
POSIX mode). A value with only printable characters is double-quoted, with ``\\``, ``"``, ``$`` and `````
escaped; any other value is ANSI-C quoted (``$'...'``), so a line never holds a raw newline. A variable
exported without a value has no ``=``; an array (flags ``a`` or ``A``) is listed but never reaches a child's
environment.

The text comes from a shell the model controls, so it is hostile input: anything that does not parse as the
whole of such a listing gives None, never an exception.
"""

from __future__ import annotations

import re

__all__ = ["parse_exports"]

_LINE = re.compile(
    rb"(?:declare -(?P<flags>[A-Za-z]+)|export) (?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    # The quoted bodies are written as runs between escapes: a branch per run, not per character.
    rb"(?:=(?:\"(?P<plain>[^\"\\]*(?:\\.[^\"\\]*)*)\"|\$'(?P<ansi>[^'\\]*(?:\\.[^'\\]*)*)'|\((?P<array>[^\n]*)\)))?\n",
    re.DOTALL,
)
_PLAIN_ESCAPE = re.compile(rb'\\([\\"$`])')
_ANSI_ESCAPE = re.compile(
    rb"\\(?:(?P<octal>[0-7]{1,3})|x(?P<hex>[0-9A-Fa-f]{1,2})|u(?P<u16>[0-9A-Fa-f]{1,4})|U(?P<u32>[0-9A-Fa-f]{1,8})"
    rb"|c(?P<control>.)|(?P<other>.))",
    re.DOTALL,
)
# The one-letter escapes of ``$'...'``; any other letter keeps its backslash, as bash does.
_SIMPLE = {
    b"a": b"\a", b"b": b"\b", b"e": b"\x1b", b"E": b"\x1b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t",
    b"v": b"\v", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?",
}


class _Unparsable(ValueError):
    """A listing that is not bash's: the caller keeps what it had."""


def parse_exports(text: bytes) -> dict[bytes, bytes] | None:
    """The exported variables listed in ``text`` (the whole of ``export -p``'s output), names and values as
    bytes; None when ``text`` is not such a listing."""
    exported: dict[bytes, bytes] = {}
    position = 0
    try:
        while position < len(text):
            line = _LINE.match(text, position)
            if line is None:
                return None
            position = line.end()
            flags, name, plain, ansi, array = line.groups()
            if array is not None or (flags is not None and (b"a" in flags or b"A" in flags)):
                continue
            if plain is not None:
                exported[name] = _PLAIN_ESCAPE.sub(rb"\1", plain) if b"\\" in plain else plain
            elif ansi is not None:
                exported[name] = _ANSI_ESCAPE.sub(_ansi_escape, ansi)
    except _Unparsable:
        return None
    return exported


def _ansi_escape(escape: re.Match[bytes]) -> bytes:
    if escape["octal"] is not None:
        return bytes([int(escape["octal"], 8) & 0xFF])
    if escape["hex"] is not None:
        return bytes([int(escape["hex"], 16)])
    code = escape["u16"] or escape["u32"]
    if code is not None:
        try:
            return chr(int(code, 16)).encode("utf-8")
        except (ValueError, UnicodeEncodeError) as exc:
            raise _Unparsable(f"no such character: {code!r}") from exc
    if escape["control"] is not None:
        return bytes([escape["control"][0] & 0x1F])
    other = escape["other"]
    return _SIMPLE.get(other, b"\\" + other)
