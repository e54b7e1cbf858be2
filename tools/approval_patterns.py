"""Which terminal commands need approval, and which are never run at all.

The lists cover every pattern of Hermes Agent 0.19.0's guard (``tools/approval.py``), in our words:

- the *dangerous* patterns ask (or go through the session's approval policy): deletes (``rm -r``,
  ``rm /...``, ``xargs rm``, ``find -delete``, Windows ``del``), permissions (``chmod 777``,
  ``chown -R root``), raw disks (``dd if=``, ``> /dev/sd*``), SQL (``DROP``, ``TRUNCATE``,
  ``DELETE`` without ``WHERE``), services and processes (``systemctl stop``, ``pkill -9``,
  ``docker stop``, killing the agent's own process), code from elsewhere (``curl | sh``,
  ``base64 -d | bash``, ``bash <<EOF``, ``sh -c``, ``python -c``), writes to sensitive files
  (``/etc``, ``~/.ssh``, shell start-up files, credentials, ``.env``, ``config.yaml``; by ``>``,
  ``tee``, ``cp``, ``sed -i``), git history (``reset --hard``, ``push --force``, ``clean -f``,
  ``branch -D``) and ``sudo`` flags that need no terminal (``-s``, ``-A``);
- the *hardline* blocklist is refused in every mode, ``--yolo`` included: a recursive delete of
  ``/`` (``//``, ``/.``), of a system directory (``/etc``, ``/usr`` ...) or of the home directory,
  any ``mkfs``, a raw write onto a disk or partition (``dd of=/dev/sda1``, ``> /dev/nvme0n1``,
  ``shred``), fork bombs, ``kill -1``, and powering the machine off (``shutdown``, ``reboot``,
  ``halt``, ``poweroff``, ``init 0``/``6``, ``systemctl reboot`` ...);
- ``sudo -S`` (a password read from standard input) is refused too: with no password configured
  it can only be the model guessing one.

Patterns read the lower-cased variants of ``tools.approval_normalize`` (a quoted command word, a
``bash -c`` script, a ``$(...)`` are read as the shell would run them). Like Hermes's, the dangerous
patterns look for their words anywhere in the command, so ``echo rm -rf x`` asks too: matching
only at command positions would let a quoting trick through, and the pattern must never be weaker
than Hermes's. The hardline patterns anchor at command positions (a newline in the marked variant),
so ``git commit -m "reboot"`` is not refused.

Each pattern names the words it cannot match without. A substring search for them (a few hundred
nanoseconds) passes over a command holding none, so the regular expressions run only where they
may match. ``bench/bench_guard.py`` measures the whole guard at a median of ~14 µs of CPU per command
over its corpus (Hermes 0.19.0's: ~560 µs; the 17 patterns before this list: ~2.6 µs).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from tools.approval_normalize import Reading, read_command

__all__ = [
    "DANGEROUS_PATTERNS",
    "FINDINGS",
    "HARDLINE_PATTERNS",
    "DangerMatch",
    "Verdict",
    "find_dangers",
    "find_hardline",
    "find_sudo_stdin",
    "judge",
]

# The start of a command in the marked variant (see tools.approval_normalize), a shell keyword that
# leads into one (``then``, ``do``), then the words that run the next one: ``sudo -u x``, ``env -i``,
# ``A=1``, ``exec``, ``nohup``, ``setsid``, ``time``, ``command``, ``nice -n 5``, ``timeout 5``,
# ``xargs``, ``watch``. Hermes's list stops at sudo's flags, env, exec, nohup, setsid and time, so
# ``sudo -u root reboot`` or ``if x; then reboot; fi`` ran there: refusing them is ours.
_AT_COMMAND = (
    r"(?:^|[\n`]|\$\()\s*(?:(?:then|do|else|!)\s+)?"
    r"(?:(?:sudo|doas)\s+(?:-[ugCgphrD]\s+\S+\s+|-\S+\s+)*|env\s+(?:-\S+\s+)*|\w+=\S*\s+"
    r"|(?:exec|nohup|setsid|time|command|builtin|xargs|watch)\s+|nice\s+(?:-n\s*)?(?:-?\d+\s+)?"
    r"|timeout\s+(?:-\S+\s+)*\S+\s+)*(?:/usr)?(?:/s?bin/)?"
)
_SHELL = r"(?:ba|z|k|da)?sh"
_PIPE_TO_SHELL = r"\|\s*(?:\S*/)?(?:ba|z|k|da)?sh\b"
# Targets a write must not reach without asking (lower case: the variants are).
_ETC = r"(?:/etc/|/private/(?:etc|var|tmp|home)/)"
_HOME = r"(?:~|\$home|\$\{home\})"
_SSH = _HOME + r"/\.ssh(?:/|$|(?=[\s\"']))"
_SHELL_RC = _HOME + r"/\.(?:bashrc|zshrc|profile|bash_profile|zprofile)\b"
_CREDENTIALS = _HOME + r"/\.(?:netrc|pgpass|npmrc|pypirc)\b"
_HERMES_FILE = r"(?:~/\.hermes/|" + _HOME + r"/\.hermes/|\$\{?hermes_home\}?/)(?:config\.yaml|\.env)\b"
_USER_FILE = f"(?:{_SSH}|{_SHELL_RC}|{_CREDENTIALS})"
_SENSITIVE = f"(?:{_ETC}|/dev/sd|{_USER_FILE}|{_HERMES_FILE})"
# A project's ``.env`` (``.env.local`` too) or ``config.yaml``, as a whole word of a path.
_PROJECT_FILE = r"(?:(?:/|\.{1,2}/)?(?:[^\s/\"'`]+/)*(?:\.env(?:\.[^/\s\"'`]+)*|config\.yaml))"
# A written file ends where the shell's word does; ``.env#x`` or ``config.yaml.bak`` is another file.
_WORD_END = r"[\"']?(?=[\s;&|<>\"']|$)"
# For cp/mv/install: the target is the last word (what follows is another command).
_LAST_WORD = r"[\"']?(?:\s*(?:&&|\|\||;).*)?$"
_DISK = r"/dev/(?:sd|nvme|hd|mmcblk|vd|xvd)[a-z0-9]*"
_RM = _AT_COMMAND + r"rm\s+(?:-\S*\s+)*"


_COPY = r"\b(?:cp|mv|install)\b"


def _after(first: str, *then: str) -> str:
    """A regex for ``first``, then anything, then each of ``then`` in turn: Hermes's ``first.*then``,
    in linear time.

    ``first.*then`` is tried again from every later ``first`` when it fails, so a long command with
    many of them took seconds (2,000 ``chmod +x a;`` took 0.5 s). Anchored at the start, with the
    earliest ``first`` (and the earliest of each step but the last) held atomically, it is tried once;
    it matches the same commands, as anything after a later ``first`` is after the earliest.
    """
    *steps, last = (first, *then)
    return r"\A" + "".join(f"(?>.*?{step})" for step in steps) + f".*{last}"


def _rm_target(paths: str) -> str:
    """An ``rm`` operand that is one of ``paths``, quoted whole or ending at the word's end."""
    return rf"(?:[\"'](?:{paths})[\"']|(?:{paths})(?=\s|$|[)`;|&]))"


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
    # Invariant: every text ``regex`` matches holds one of ``words`` (all lower case, as the texts
    # are); a property test checks it.
    words: tuple[str, ...]

    def may_match(self, text: str) -> bool:
        """Whether ``text`` (lower case) holds one of the pattern's words."""
        for word in self.words:  # a loop, not any(): no generator to build for the usual one word
            if word in text:
                return True
        return False


def _pattern(key: str, description: str, *regexes: str, words: tuple[str, ...]) -> _Pattern:
    """One pattern of several alternative regular expressions (lower case; ``.`` crosses lines)."""
    joined = "|".join(f"(?:{regex})" for regex in regexes)
    return _Pattern(key, description, re.compile(joined, re.DOTALL), words)


#: Every dangerous pattern, in the order they are reported.
DANGEROUS_PATTERNS: tuple[_Pattern, ...] = (
    _pattern("recursive_delete", "delete recursively (rm -r)",
             r"\brm\s+(?:-\S*\s+)*-\S*r", r"\brm\s+(?:\S+\s+)*--recursive\b", words=("rm",)),
    _pattern("delete_root_path", "delete under the root path (rm /...)", r"\brm\s+(?:-\S*\s+)*[\"']?/", words=("rm",)),
    _pattern("xargs_rm", "delete what xargs is given (xargs rm)", _after(r"\bxargs\s", r"\brm\b"), words=("xargs",)),
    _pattern("find_exec_rm", "delete found files (find -exec rm)",
             _after(r"\bfind\b", r"-(?:exec|execdir|ok)\s+(?:\S*/)?rm\b"), words=("find",)),
    _pattern("find_delete", "delete found files (find -delete)", _after(r"\bfind\b", r"-delete\b"), words=("find",)),
    _pattern("windows_delete", "delete through a Windows shell (del, rd, Remove-Item)",
             _after(r"\bcmd(?:\.exe)?\s+/[ck]\s", r"\b(?:del|erase|rd|rmdir)\b"),
             r"\b(?:powershell|pwsh)(?:\.exe)?\b(?:\s+-\S+)*\s+(?:-(?:command|c)\s+)?[\"']?"
             r"(?:remove-item|rmdir|erase|del|rd|ri|rm)\b",
             words=("cmd", "powershell", "pwsh")),
    _pattern("powershell_encoded", "run an encoded PowerShell command (-EncodedCommand)",
             _after(r"\b(?:powershell|pwsh)(?:\.exe)?\b", r"\s-(?:encodedcommand|enc|e)\b"), words=("powershell", "pwsh")),
    _pattern("chmod_world_writable", "make files world-writable (chmod)",
             r"\bchmod\s+(?:-\S*\s+)*(?:0?[0-7]?[0-7][0-7][2367]\b|[ugo]*[ao][ugo]*\+[rwxst]*w|\+[rwxst]*w)",
             _after(r"\bchmod\s+--recursive\b", r"(?:777|666|[oa]\+[rwx]*w)"), words=("chmod",)),
    _pattern("chown_recursive_root", "give files to root recursively (chown -R root)",
             r"\bchown\s+(?:-\S*)?r\s+root", _after(r"\bchown\s+--recur[a-z]*\b", "root"),
             r"\bchown\s+(?:\S+\s+)*-[a-z]*r[a-z]*\s+(?:\S+\s+)*root\b", words=("chown",)),
    _pattern("dd_input", "raw copy with dd (dd if=)", _after(r"\bdd\s", "if="), words=("dd",)),
    _pattern("block_device_write", "write to a block device",
             r"(?:>\s*|\bof=)/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|dm-|md)", words=("/dev/",)),
    _pattern("sql_drop", "drop SQL objects (DROP)", r"\bdrop\s+(?:table|database|schema)\b", words=("drop",)),
    _pattern("sql_delete_without_where", "delete every row of an SQL table (DELETE without WHERE)",
             r"\bdelete\s+from\b(?![^\n]*\bwhere\b)", words=("delete",)),
    _pattern("sql_truncate", "empty an SQL table or a file (TRUNCATE)", r"\btruncate\s+(?:table)?\s*\w", words=("truncate",)),
    _pattern("systemctl", "stop or disable a system service (systemctl)",
             r"\bsystemctl\s+(?:-\S+\s+)*(?:stop|restart|disable|mask)\b", words=("systemctl",)),
    _pattern("kill_everything", "force-kill processes by name (pkill -9, killall -9)",
             r"\bpkill\s+(?:\S+\s+)*-(?:9|kill|sigkill)\b", r"\bkill\s+-9\s+-1\b",
             r"\bkillall\s+(?:-\S*\s+)*-(?:9|kill|sigkill)\b", r"\bkillall\s+(?:-\S*\s+)*-s\s+(?:kill|sigkill|9)\b",
             words=("kill",)),
    _pattern("killall_regex", "kill processes matching a pattern (killall -r)", r"\bkillall\s+(?:-\S*\s+)*-r\b",
             words=("killall",)),
    _pattern("kill_agent", "stop the agent's own process or gateway",
             _after(r"\b(?:pkill|killall)\b", r"\b(?:hermes|gateway|cli\.py)\b"),
             _after(r"\bkill\b", r"(?:\$\(|`)\s*(?:pgrep|pidof)\b"),
             r"\bhermes\s+(?:-{1,2}\S+(?:\s+\S+)?\s+)*gateway\s+(?:stop|restart)\b", r"\bhermes\s+update\b",
             _after(r"gateway\s+run\b", r"(?:&\s*$|&\s*;|\bdisown\b|\bsetsid\b)"), _after(r"\bnohup\b", r"gateway\s+run\b"),
             _after(r"\blaunchctl\s+(?:stop|kickstart|bootout|unload|kill|disable|remove)\b", r"\bhermes\b"),
             words=("kill", "hermes", "gateway", "pgrep", "pidof")),
    _pattern("docker_lifecycle", "stop, restart or kill containers (docker)",
             r"\bdocker\s+compose\s+(?:restart|stop|kill|down)\b", r"\bdocker\s+(?:restart|stop|kill)\b",
             words=("docker",)),
    _pattern("remote_to_shell", "run remote content in a shell (curl | sh)",
             _after(r"\b(?:curl|wget|fetch)\b", r"\|\s*(?:sudo\s+)?(?:\S*/)?(?:" + _SHELL + r"|python[0-9.]*|perl)\b"),
             _SHELL + r"\s+<\s*<?\s*\(\s*(?:curl|wget)\b",
             r"(?:\beval\b|\bsource\b|\.)\s*[\"']?(?:\$\(|`)\s*(?:curl|wget)\b", words=("curl", "wget", "fetch")),
    _pattern("decoded_to_shell", "run decoded content in a shell (base64 -d | sh)",
             _after(r"\bbase(?:64|32|16)\s+(?:-d|--decode)\b", _PIPE_TO_SHELL),
             _after(r"\bxxd\s+-r\b", _PIPE_TO_SHELL),
             r"\becho\b[^|]*\|\s*\btr\b[^|]*" + _PIPE_TO_SHELL,
             _after(r"\bopenssl\b", r"\b(?:base64|enc)\b(?=[^|]*\s-d\b)[^|]*" + _PIPE_TO_SHELL),
             words=("base64", "base32", "base16", "xxd", "tr", "openssl")),
    _pattern("shell_heredoc", "run a here-document in a shell (bash <<EOF)", r"\b(?:ba|z|k)?sh\s+<<", words=("sh",)),
    _pattern("sensitive_write", "write to a system, credential or start-up file",
             _after(r"\btee\b", r"[\"']?" + _SENSITIVE), r">>?\s*[\"']?" + _SENSITIVE,
             _after(_COPY, r"\s" + _ETC),
             _after(_COPY, r"\s[\"']?" + _SENSITIVE + r"[^\s\"']*" + _LAST_WORD),
             words=("/etc/", "/private/", "/dev/sd", ".ssh", "rc", "profile", ".netrc", ".pgpass", ".hermes",
                    "hermes_home")),
    _pattern("project_env_write", "overwrite a project's .env or config.yaml",
             _after(r"\btee\b", r"[\"']?" + _PROJECT_FILE + _WORD_END), r">>?\s*[\"']?" + _PROJECT_FILE + _WORD_END,
             _after(_COPY, r"\s[\"']?" + _PROJECT_FILE + _LAST_WORD), words=(".env", "config.yaml")),
    _pattern("in_place_sensitive_edit", "edit a system, credential or start-up file in place (sed -i)",
             _after(r"\bsed\s+(?:-\S*i|--in-place\b)", "(?:" + _USER_FILE + "|" + _HERMES_FILE + r"|\s" + _ETC + ")"),
             _after(r"\b(?:perl|ruby)\b", r"\s-\S*i\b", "(?:" + _USER_FILE + "|" + _HERMES_FILE + ")"),
             words=("sed", "perl", "ruby")),
    _pattern("git_reset_hard", "discard uncommitted changes (git reset --hard)", r"\bgit\s+reset\s+--h(?:a(?:rd?)?)?\b",
             words=("git",)),
    _pattern("git_force_push", "rewrite remote history (git push --force)", _after(r"\bgit\s+push\b", r"(?:--forc[a-z]*|-f)\b"),
             words=("git",)),
    _pattern("git_clean_force", "delete untracked files (git clean -f)", r"\bgit\s+clean\s+-\S*f", words=("git",)),
    _pattern("git_branch_force_delete", "delete an unmerged branch (git branch -D)", r"\bgit\s+branch\s+-d\b",
             r"\bgit\s+branch\b[^;|&\n]*?(?:-d|--delete)\b[^;|&\n]*?(?:-f|--force)\b",
             r"\bgit\s+branch\b[^;|&\n]*?(?:-f|--force)\b[^;|&\n]*?(?:-d|--delete)\b", words=("git",)),
    _pattern("chmod_x_run", "make a script executable and run it at once", _after(r"\bchmod\s+\+x\b", r"[;&|]\s*\./"),
             words=("chmod",)),
    _pattern("sudo_privilege_flag", "sudo without a terminal (-s, -A, -a, --stdin, --askpass)",
             r"\bsudo\b[^;|&\n]*?\s+(?:-s\b|--st[a-z]*\b|-a\b|--a[a-z]*\b)",
             r"\bsudo\b[^;|&\n]*?\s+-[a-z]*[sa][a-z]*\b", words=("sudo",)),
)

#: What the command words' options tell (``tools.approval_normalize`` finds them), described.
FINDINGS: dict[str, str] = {
    "shell_command_string": "run a command string in a new shell (sh -c)",
    "script_command_string": "run inline code (python -c, node -e, perl -e ...)",
    "script_heredoc": "run a here-document in an interpreter (python <<EOF)",
    "read_tool_program": "let a reading tool run a program (rg --pre, sort --compress-program, man -P)",
    "unreadable_program_options": "run an interpreter with options whose quotes do not close",
}

#: The hardline blocklist, matched like the dangerous patterns; the first match is reported.
HARDLINE_PATTERNS: tuple[_Pattern, ...] = (
    _pattern("delete_root", "recursively delete the root directory",
             _RM + _rm_target(r"/(?:(?:\.\.?)?/)*(?:\.\.?)?\**|/ \*"), words=("rm",)),
    _pattern("delete_system_directory", "recursively delete a system directory",
             _RM + _rm_target(r"/(?:home|root|etc|usr|var|bin|sbin|boot|lib|lib64|opt|srv)(?:/\*)?"), words=("rm",)),
    _pattern("delete_home", "recursively delete the home directory",
             _RM + _rm_target(r"(?:~|\$\{?home\}?)(?:/?|/\*)?"), words=("rm",)),
    _pattern("mkfs", "format a filesystem (mkfs)", r"\bmkfs(?:\.[a-z0-9]+)?\b", words=("mkfs",)),
    _pattern("disk_overwrite", "overwrite a disk or partition",
             r"\bdd\b[^\n]*\bof=" + _DISK, r">\s*" + _DISK + r"\b",
             _AT_COMMAND + r"(?:shred|wipefs)\s+[^;&|\n]*" + _DISK, words=("/dev/",)),
    _pattern("fork_bomb", "start a fork bomb", r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
             r"(?P<name>[\w.]+)\(\)\s*\{\s*(?P=name)\s*\|\s*(?P=name)\s*&\s*\}\s*;?\s*(?P=name)", words=("()",)),
    _pattern("kill_all_processes", "kill every process (kill -1)", r"\bkill\s+(?:-\S+\s+)*-1\b", words=("kill",)),
    _pattern("power_off", "shut down or reboot the machine",
             # The word ends at ``\b`` as in Hermes, so ``reboot.sh`` is refused too: never less than Hermes.
             _AT_COMMAND + r"(?:shutdown|reboot|halt|poweroff)\b", _AT_COMMAND + r"(?:tel)?init\s+[06]\b",
             _AT_COMMAND + r"systemctl\s+(?:poweroff|reboot|halt|kexec)\b",
             words=("shutdown", "reboot", "halt", "poweroff", "init", "kexec")),
)

_UNREADABLE_GREP = (
    "run a grep the guard cannot read: a quote does not close, an option lacks its value, or -P has no pattern "
    "(as in Hermes, refused rather than guessed at)"
)
_SUDO_STDIN = re.compile(r"(?:^|[;&|`\n]|\$\()\s*sudo\s+-s\b")
_MAX_COMMAND_CHARS = 128_000
_MAX_UNSEPARATED_CHARS = 4_096
_MAX_SEPARATORS = 25_000
_TOO_LONG = (
    "go unchecked: it is too long for the guard to read (over 128,000 characters, over 4,096 without a "
    "separator, or 25,000 commands)"
)


@attrs.frozen
class Verdict:
    """What the guard says about one command (see :func:`judge`)."""

    hardline: str | None = None
    """What a refused command would do, when it is on the hardline blocklist (or too long to read)."""
    sudo_stdin: bool = False
    dangers: tuple[DangerMatch, ...] = ()
    variants: tuple[str, ...] = ()
    """The lower-cased texts the command was read as (what ``approvals.deny`` globs are matched against)."""

    @property
    def verdict(self) -> str:
        """``hardline``, ``sudo_stdin``, ``dangerous`` or ``safe`` (Hermes's classes, in its order)."""
        if self.hardline is not None:
            return "hardline"
        if self.sudo_stdin:
            return "sudo_stdin"
        return "dangerous" if self.dangers else "safe"


def judge(command: str, home: str | None = None) -> Verdict:
    """Everything the guard says about ``command``.

    Args:
        command: the shell command.
        home: the user's home directory, folded into ``~`` (``/home/me/.ssh`` is ``~/.ssh``).
    """
    if not command or not command.strip():
        return Verdict()
    if _too_long(command):
        return Verdict(hardline=_TOO_LONG, variants=(command.lower(),))
    reading = read_command(command, home)
    return Verdict(find_hardline(reading), find_sudo_stdin(reading), tuple(find_dangers(reading)), reading.variants)


def find_dangers(reading: Reading) -> list[DangerMatch]:
    """Every dangerous pattern and finding in a command read by ``read_command`` (empty: no approval needed)."""
    keys = {pattern.key: pattern.description for pattern in _matching(DANGEROUS_PATTERNS, reading.variants, first=False)}
    for finding in reading.findings:
        if finding.key in FINDINGS:
            keys.setdefault(finding.key, FINDINGS[finding.key])
    return [DangerMatch(key, description) for key, description in keys.items()]


def find_hardline(reading: Reading) -> str | None:
    """What makes a command (read by ``read_command``) never runnable, in a few words; None when nothing."""
    for pattern in _matching(HARDLINE_PATTERNS, reading.variants, first=True):
        return pattern.description
    if any(finding.key == "unreadable_grep" for finding in reading.findings):
        return _UNREADABLE_GREP
    return None


def _matching(patterns: tuple[_Pattern, ...], variants: tuple[str, ...], *, first: bool) -> Iterator[_Pattern]:
    """The patterns matching one of ``variants`` (only the first one when ``first``).

    The word check is written out rather than calling ``may_match``: this loop runs ~40 patterns
    per command, and the calls were a quarter of the guard's time.
    """
    for pattern in patterns:
        for text in variants:
            for word in pattern.words:
                if word in text:
                    break
            else:
                continue
            if pattern.regex.search(text):
                yield pattern
                if first:
                    return
                break


def find_sudo_stdin(reading: Reading) -> bool:
    """Whether the command runs ``sudo -S``: a password fed on standard input, which is refused.

    Matched in lower case as Hermes does, so ``sudo -s`` (a root shell, which has no use without a
    terminal) is refused with it.
    """
    return any("sudo" in text and _SUDO_STDIN.search(text) for text in reading.variants)


def _too_long(command: str) -> bool:
    """Whether the command is beyond what the guard reads: refused rather than passed unread."""
    if len(command) > _MAX_COMMAND_CHARS:
        return True
    separators = sum(command.count(mark) for mark in ";&|\n")
    return separators >= _MAX_SEPARATORS or (len(command) > _MAX_UNSEPARATED_CHARS and separators == 0)
