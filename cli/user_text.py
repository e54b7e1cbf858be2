"""Text the user typed that is not valid UTF-8: each bad byte becomes U+FFFD, with one warning.

Python hands the CLI a command-line argument or a terminal line holding bytes
that are not UTF-8 as a string with lone surrogates (``surrogateescape``: byte
``0xff`` becomes ``'\\udcff'``). Such a string cannot be encoded for the
daemon's JSON frames, so the client replaced nothing and crashed on the way
out. What a user means by ``chat -q $'\\xff hi'`` is the text around the bad
bytes: each bad byte is replaced with U+FFFD (the Unicode replacement
character) and one line on stderr says so.

A file path stays as the OS gave it: its bytes name the file. A path that must
reach the daemon and is not UTF-8 (the current directory of ``chat``) is
refused where the frame is encoded (:class:`~control.errors.InvalidText`).
"""

from __future__ import annotations

import argparse
import re
import sys

__all__ = ["LOCAL_PATH_ARGUMENTS", "replace_undecodable", "replace_undecodable_arguments", "warn_replaced"]

#: Arguments naming a local file (``skills create --from-file``, ``sessions export -o``): never rewritten.
LOCAL_PATH_ARGUMENTS = frozenset({"from_file", "output"})
#: What ``surrogateescape`` makes of a byte that is not UTF-8 (and any other lone surrogate).
_SURROGATES = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


def replace_undecodable(text: str) -> str:
    """``text`` with each byte that was not UTF-8 (each lone surrogate) replaced by U+FFFD."""
    return _SURROGATES.sub(_REPLACEMENT, text)


def warn_replaced(what: str) -> None:
    """One line on stderr: ``what`` held bytes that are not UTF-8, now replaced."""
    print(
        f"hermes-actors: warning: {what} is not valid UTF-8; each bad byte was replaced with U+FFFD ({_REPLACEMENT})",
        file=sys.stderr,
        flush=True,
    )


def replace_undecodable_arguments(args: argparse.Namespace) -> None:
    """Make every text argument valid UTF-8 (in place), warning once per argument changed.

    Every argument is text sent to the daemon or printed, except a local file path
    (:data:`LOCAL_PATH_ARGUMENTS`), which keeps its bytes.
    """
    for name, value in vars(args).items():
        if name in LOCAL_PATH_ARGUMENTS:
            continue
        if isinstance(value, str):
            replaced: str | list[object] = replace_undecodable(value)
        elif isinstance(value, list):
            replaced = [replace_undecodable(item) if isinstance(item, str) else item for item in value]
        else:
            continue
        if replaced != value:
            setattr(args, name, replaced)
            warn_replaced(f"the {name.replace('_', '-')} argument")
