"""Which terminal commands need approval, and which are never run at all.

Two lists, after Hermes's security guide:

- the *dangerous* patterns ask (or go through the session's approval policy): recursive
  deletes and deletes of absolute paths, world-writable ``chmod``, recursive ``chown`` to
  root, ``mkfs``, ``dd if=``, writes to block devices or ``/etc``, SQL ``DROP`` /
  ``TRUNCATE`` / ``DELETE`` without ``WHERE``, ``systemctl stop|restart|disable|mask``,
  ``kill -9 -1`` / ``pkill -9`` / ``killall -9``, ``bash -c`` / ``python -c`` and kin,
  remote content piped into a shell, ``find -exec rm``;
- the *hardline* blocklist is refused in every mode, ``--yolo`` included: a recursive
  delete of ``/`` or the home directory, fork bombs, overwriting a whole disk with ``dd``
  or a redirect, ``mkfs`` on the device ``/`` is mounted from.

Plain ``>`` redirects, ``cp``, ``mv`` and ``install`` are ordinary work and do not ask.

Each check names the words it cannot match without (``rm``, ``chmod``, ``/dev/``...). The patterns try a
command-start prefix at every position, about 2 µs per character each; a command holding none of a
check's words (a heredoc of text, most commands) is passed over by a substring search.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import attrs

__all__ = ["DANGEROUS_PATTERNS", "DangerMatch", "find_dangers", "find_hardline", "root_devices"]

# A command word counts only in command position: at the start, after a separator or an
# opening quote/paren/brace (``&&``, ``;``, ``|``, backtick, ``$(``, ``bash -c "...``), after a
# wrapper that runs its arguments (sudo, xargs, find -exec ...), after ``VAR=value``
# assignments, and possibly as a path (``/bin/rm``). Matching every word after a space
# would ask about ``echo rm``.
_START = (
    r"(?:^|[;&|`(\n\"'{]|\b(?:sudo|doas|xargs|nohup|time|exec|command|env)\s|-exec(?:dir)?\s|-ok\s)"
    r"\s*(?:\w+=\S*\s+)*(?:[^\s;&|`'\"]*/)?"
)
# The rest of one simple command (up to a separator).
_ARGS = r"[^;&|`)\n]*"
_SHELLS = r"(?:ba|da|z|k|c|tc|fi)?sh"
_DISKS = r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d+n\d+|mmcblk\d+|disk\d+)"


@attrs.frozen
class DangerMatch:
    """One dangerous pattern found in a command."""

    key: str
    """Stable name of the pattern (what a session or permanent approval remembers)."""
    description: str


@attrs.frozen
class _Pattern:
    key: str
    description: str
    regex: re.Pattern[str]
    # Invariant: every command ``regex`` matches holds one of ``words`` (in lower case when ``folded``);
    # a property test checks it.
    words: tuple[str, ...]
    folded: bool

    def may_match(self, command: str, lowered: str) -> bool:
        """Whether ``command`` (``lowered``: the same in lower case) holds one of the pattern's words."""
        text = lowered if self.folded else command
        for word in self.words:  # a loop, not any(): no generator to build for the usual one word
            if word in text:
                return True
        return False


def _pattern(
    key: str, description: str, regex: str, flags: int = 0, *, words: tuple[str, ...], folded: bool = False
) -> _Pattern:
    """``folded``: the words are looked for in lower case (always so for an ``IGNORECASE`` regex)."""
    return _Pattern(key, description, re.compile(regex, flags), words, folded=folded or bool(flags & re.IGNORECASE))


#: Every dangerous pattern, in the order they are reported.
DANGEROUS_PATTERNS: tuple[_Pattern, ...] = (
    _pattern("recursive_delete", "delete recursively (rm -r)",
             _START + r"rm\s+(?:" + _ARGS + r"\s)?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)(?=[\s;&|)`'\"]|$)",
             words=("rm",)),
    _pattern("delete_root_path", "delete under the root path (rm /...)",
             _START + r"rm\s+(?:-\S*\s+)*['\"]?/", words=("rm",)),
    _pattern("chmod_world_writable", "make files world-writable (chmod)",
             _START + r"chmod\s+(?:-\S+\s+)*(?:0?[0-7]?[0-7][0-7][2367]\b|[ugo]*[ao][ugo]*\+[rwxXst]*w|\+[rwxXst]*w)",
             words=("chmod",)),
    _pattern("chown_recursive_root", "give files to root recursively (chown -R root)",
             _START + r"chown\s+(?=(?:" + _ARGS + r"\s)?(?:-[a-zA-Z]*R|--recursive))(?=(?:" + _ARGS + r"\s)?root(?=[:\s;&|]|$))",
             words=("chown",)),
    _pattern("mkfs", "format a filesystem (mkfs)", _START + r"mkfs(?:\.\w+)?(?=[\s;&|)`'\"]|$)", words=("mkfs",)),
    _pattern("dd_input", "raw copy with dd (dd if=)", _START + r"dd\s+(?:" + _ARGS + r"\s)?if=", words=("if=",)),
    _pattern("block_device_write", "write to a block device",
             r"(?:>\s*|\bof=)/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|dm-|md)\w*", words=("/dev/",)),
    _pattern("etc_write", "write to /etc", r"(?:>>?\s*|\btee\s+(?:-a\s+)?)['\"]?/etc/", words=("/etc/",)),
    _pattern("sql_drop", "drop SQL objects (DROP)",
             r"\bDROP\s+(?:TABLE|DATABASE|SCHEMA|INDEX|VIEW|USER|ROLE)\b", re.IGNORECASE, words=("drop",)),
    _pattern("sql_truncate", "empty an SQL table (TRUNCATE)", r"(?i:\bTRUNCATE\s+TABLE\b)|\bTRUNCATE\s+[A-Za-z_\"`]",
             words=("truncate",), folded=True),
    _pattern("sql_delete_without_where", "delete every row of an SQL table (DELETE without WHERE)",
             r"\bDELETE\s+FROM\b(?![^;\"']*\bWHERE\b)", re.IGNORECASE, words=("delete",)),
    _pattern("systemctl", "stop or disable a system service (systemctl)",
             _START + r"systemctl\s+(?:-\S+\s+)*(?:stop|restart|disable|mask)\b", words=("systemctl",)),
    _pattern("kill_everything", "kill every process (kill -9 -1, pkill -9, killall -9)",
             _START + r"(?:kill\s+-(?:9|KILL|SIGKILL)\s+-1\b|(?:pkill|killall)\s+(?:" + _ARGS + r"\s)?-(?:9|KILL|SIGKILL)\b)",
             words=("kill",)),
    _pattern("shell_command_string", "run a command string in a new shell (sh -c)",
             _START + _SHELLS + r"\s+(?:-[a-zA-Z]+\s+)*-[a-zA-Z]*c(?=[\s;&|)`'\"]|$)", words=("sh",)),
    _pattern("script_command_string", "run inline code (python -c, perl -e ...)",
             _START + r"(?:python[0-9.]*|perl|ruby|node|php)\s+(?:-[a-zA-Z]+\s+)*-[ceE](?=[\s;&|)`'\"]|$)",
             words=("python", "perl", "ruby", "node", "php")),
    _pattern("remote_to_shell", "pipe remote content into a shell",
             r"\b(?:curl|wget|fetch)\b[^;&\n]*\|\s*(?:sudo\s+)?(?:\S*/)?(?:" + _SHELLS + r"|python[0-9.]*|perl)\b"
             r"|" + _SHELLS + r"\s+<\(\s*(?:curl|wget)\b", words=("curl", "wget", "fetch")),
    _pattern("find_exec_rm", "delete found files (find -exec rm)",
             r"\bfind\b" + _ARGS + r"-(?:exec|execdir|ok)\s+(?:\S*/)?rm\b", words=("-exec", "-ok")),
)

# ``rm`` with its arguments, for the hardline check of what it deletes.
_RM_CALL = re.compile(_START + r"rm\s+(?P<args>" + _ARGS + ")")
_ROOT_OR_HOME = frozenset(
    {"/", "/*", "/.", "~", "~/", "~/*", "~/.", "$HOME", "$HOME/", "$HOME/*", "${HOME}", "${HOME}/", "${HOME}/*"}
)
_FORK_BOMB = re.compile(r"(?P<name>[\w:.]+)\(\)\s*\{\s*(?P=name)\s*\|\s*(?P=name)\s*&\s*\}\s*;?\s*(?P=name)")
_DISK_WIPE = re.compile(
    _START + r"(?:dd\s+" + _ARGS + r"\bof=" + _DISKS + r"(?![\dp])|(?:shred|wipefs)\s+" + _ARGS + _DISKS + r"(?![\dp]))"
    r"|>\s*" + _DISKS + r"(?![\dp])"
)
_MKFS_CALL = re.compile(_START + r"mkfs(?:\.\w+)?\s+(?P<args>" + _ARGS + ")")


def find_dangers(command: str) -> list[DangerMatch]:
    """Every dangerous pattern in ``command`` (empty when it needs no approval)."""
    if not command or not command.strip():
        return []
    lowered = command.lower()
    return [
        DangerMatch(p.key, p.description)
        for p in DANGEROUS_PATTERNS
        if p.may_match(command, lowered) and p.regex.search(command)
    ]


def find_hardline(command: str, root_devices: frozenset[str] = frozenset()) -> str | None:
    """What makes ``command`` never runnable (a short description), or None.

    Args:
        command: the shell command.
        root_devices: devices ``/`` is mounted from (see :func:`root_devices`): ``mkfs`` on one is refused.
    """
    # Each check runs only when the words it cannot match without are there, as for DANGEROUS_PATTERNS.
    if "rm" in command and _deletes_root_or_home(command):
        return "recursively delete the root or home directory"
    if "()" in command and _FORK_BOMB.search(command):
        return "start a fork bomb"
    if "/dev/" in command and _DISK_WIPE.search(command):
        return "overwrite a whole disk"
    if "mkfs" in command:
        for call in _MKFS_CALL.finditer(command):
            if any(arg in root_devices or arg == "/dev/root" for arg in _words(call.group("args"))):
                return "format the filesystem the system runs from"
    return None


def root_devices(mounts: Path = Path("/proc/mounts")) -> frozenset[str]:
    """The devices ``/`` is mounted from, read from ``mounts`` (empty when unreadable)."""
    try:
        lines = mounts.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return frozenset()
    return frozenset(
        fields[0] for fields in (line.split() for line in lines) if len(fields) > 1 and fields[1] == "/"
    )


def _words(args: str) -> list[str]:
    try:
        return shlex.split(args, posix=True)
    except ValueError:
        return args.split()


def _deletes_root_or_home(command: str) -> bool:
    for call in _RM_CALL.finditer(command):
        args = _words(call.group("args"))
        recursive = any(
            arg in ("--recursive", "-r", "-R")
            or (arg.startswith("-") and not arg.startswith("--") and ("r" in arg or "R" in arg))
            for arg in args
        )
        if recursive and any(arg.strip("'\"") in _ROOT_OR_HOME for arg in args if not arg.startswith("-")):
            return True
    return False
