"""The texts the command guard reads a terminal command as: normalised, and split into its variants.

A shell gives several ways to spell the same command, and the guard's patterns read text. So before
they look, a command is rewritten the way the shell would read it (after Hermes 0.19.0's guard):

- escape sequences and NUL bytes go, Unicode is folded (NFKC: fullwidth ``ｒｍ`` is ``rm``);
- a line continuation (backslash-newline) joins its lines, a backslash escape is its character
  (``r\\m`` is ``rm``), an empty quote pair vanishes (``r''m``), ``$IFS`` is a space;
- the user's home directory, written out (``/home/me/.bashrc``), is folded into ``~/.bashrc``.

Then each command is read as several *variants*, every one lower-cased, and a pattern matching any
of them counts:

- the normalised text itself;
- the same with a newline before every real command start (after ``;``, ``&&``, ``|``, ``$(``, a
  subshell's ``(`` or a group's ``{``) found outside quotes: the command-position patterns anchor on
  a newline, so ``(reboot)`` is seen while ``git commit -m "(reboot)"`` is not;
- the command string a program runs for it: ``bash -c '...'``'s script, ``rg --pre PROG``'s program,
  recursively, so ``sh -c "reboot"`` is read as ``reboot``;
- the text with its literal substitutions resolved (``$(echo rm)``, ``${x:-rm}`` are ``rm``), and
  with a quoted command word unquoted (``"r"m`` is ``rm`` where the shell runs it; quoted arguments
  stay quoted, so ``echo "(reboot)"`` is not read as a subshell).

A *finding* is what reading the command words tells beyond a pattern: an interpreter given code on
its command line (``python -c``, ``node -e``), fed a here-document (``python <<EOF``), a shell
given a command string (``sh -c``), a reading tool given a program to run (``sort
--compress-program``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

import attrs

from tools.ansi import strip_ansi

__all__ = ["Finding", "Reading", "normalize", "read_command"]

_CONTINUATION = re.compile(r"\\\r?\n")
_ESCAPE = re.compile(r"\\(.)")  # ``.`` stops at a newline: a continuation is handled above
_EMPTY_QUOTES = re.compile(r"''|\"\"")
_IFS = re.compile(r"\$\{IFS\b[^}]*\}|\$IFS\b")

# What starts a new command outside quotes, and the quoted stretches to step over. A double-quoted
# string is kept whole and searched for ``$(`` afterwards (a substitution runs inside one).
_SYNTAX = re.compile(r"""'[^']*'?|"(?:[^"\\]|\\.)*"?|\\.|\$\{[^}]*\}?|\$\(|&&|\|\||[;&|(){}\n]""", re.DOTALL)
# Words before the command word that run it: they are stepped over to find the real one.
_WRAPPERS = frozenset({"sudo", "doas", "env", "exec", "nohup", "setsid", "time", "command", "builtin", "nice"})
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_MAX_PREFIX_WORDS = 12

_SHELLS = frozenset({"sh", "bash", "zsh", "ksh", "dash", "fish", "ash", "mksh"})
# Options that take the next word as their value, so a ``-c`` inside it is not a command string.
_SHELL_OPTIONS_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--init-file", "--rcfile"})
# Interpreters, by the family their command word names, with the options that give them code
# and the options whose value is the next word (so a ``-c`` there is not code).
_INTERPRETER_NAMES = {
    "python": r"py|python[0-9.]*",
    "node": r"node(?:js)?|deno|bun",
    "perl": r"perl[0-9.]*",
    "ruby": r"ruby[0-9.]*",
    "php": r"php[0-9.]*",
    "powershell": r"powershell|pwsh",
}
_INTERPRETER_NAME = re.compile("|".join(f"(?P<{family}>{names})" for family, names in _INTERPRETER_NAMES.items()))
_CODE_OPTIONS = {
    "python": (frozenset({"-c"}), frozenset({"-W", "-X"})),
    "node": (frozenset({"-e", "--eval", "-p", "--print"}),
             frozenset({"-C", "-r", "--require", "--import", "--loader", "--conditions", "--title"})),
    "perl": (frozenset({"-e", "-E", "--eval"}), frozenset({"-I", "-M", "-m", "-F", "-x", "-0"})),
    "ruby": (frozenset({"-e"}), frozenset({"-C", "-E", "-F", "-I", "-K", "-r"})),
    "php": (frozenset({"-r"}), frozenset({"-c", "-d", "-z"})),
    "powershell": (frozenset({"-command", "-c", "-file", "-f"}),
                   frozenset({"-executionpolicy", "-windowstyle", "-workingdirectory", "-version"})),
}
# Reading tools with an option that names a program for them to run.
_PROGRAM_OPTIONS = {
    "sort": ("--compress-program",),
    "rg": ("--pre", "--hostname-bin"),
    "ag": ("--pager",),
    "man": ("--pager", "-P", "-H", "--html"),
}
# grep's options that take a value (the next word unless attached), as GNU grep reads them.
_GREPS = frozenset({"grep", "egrep"})
_GREP_LONG_WITH_VALUE = frozenset({
    "--after-context", "--before-context", "--binary-files", "--context", "--directories", "--devices", "--exclude",
    "--exclude-dir", "--exclude-from", "--include", "--label", "--max-count", "--regexp", "--file",
})
_GREP_SHORT_WITH_VALUE = frozenset("ABCDdefm")
# A shell word (quotes kept), and what a word's quoting and escapes are made of.
_WORD = re.compile(r"""(?:'[^']*'?|"(?:[^"\\]|\\.)*"?|\\.|[^\s'"\\;&|()])+""", re.DOTALL)
_QUOTING = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""", re.DOTALL)
# A quote that does not close: the stretches before it are taken whole (``*+`` does not give one back).
_UNCLOSED = re.compile(r"""(?:[^'"\\]|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)*+['"]""", re.DOTALL)
# Anything that may start a second command: without one, the command has a single start.
_MAY_SEPARATE = re.compile(r"[;&|(){}\n]|\$\(")
_BLANKS = re.compile(r"[ \t]*")
_LITERAL = re.compile(r"[A-Za-z0-9_./:@%+=,-]+")
_SUBSTITUTION = re.compile(r"\$\((?P<a>[^()`]*)\)|`(?P<b>[^`]*)`")
_PARAMETER = re.compile(r"\$\{[^}:/\s]+(?::-(?P<default>[^}]*)|/[^}/]*/(?P<replacement>[^}]*))\}")
# A first word the guard reads further: quoted or substituted, an assignment, or one of the names above.
_READ_FURTHER = re.compile(
    r"""[^\s;&|()]*['"$`]|[A-Za-z_]\w*=|(?:\S*/)?(?:"""
    + "|".join(sorted({*_WRAPPERS, *_SHELLS, *_PROGRAM_OPTIONS, *_GREPS}))
    + "|" + "|".join(_INTERPRETER_NAMES.values())
    + r""")(?:\.exe)?(?=[\s;&|()<>]|$)""",
    re.IGNORECASE,
)


@attrs.frozen
class Finding:
    """What a command word's options say it runs: ``key`` as in ``approval_patterns``, and the code run."""

    key: str
    payload: str | None = None


@attrs.frozen
class Reading:
    """A command as the guard reads it."""

    variants: tuple[str, ...]
    """The lower-cased texts the patterns are matched against, the normalised command first."""
    findings: tuple[Finding, ...]


def normalize(command: str, home: str | None = None) -> str:
    """``command`` as the shell would read its words (see the module docstring); case is kept.

    Args:
        command: the command as the model wrote it.
        home: the user's home directory, folded into ``~`` where the command spells it out.
    """
    text = strip_ansi(command).replace("\x00", "")
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if "\\" in text:
        text = _CONTINUATION.sub("", text)
    if home and home.count("/") >= 2 and home in text:
        # A home of one component (``/``, ``/root`` is two) would fold unrelated paths.
        text = re.sub(re.escape(home.rstrip("/")) + r"(?=[/\s;&|)'\"]|$)", "~", text)
    if "\\" in text:
        text = _ESCAPE.sub(r"\1", text)
    if "''" in text or '""' in text:
        text = _EMPTY_QUOTES.sub("", text)
    if "IFS" in text:
        text = _IFS.sub(" ", text)
    return text


def read_command(command: str, home: str | None = None) -> Reading:
    """Normalise ``command`` and read it into its variants and findings.

    Args:
        command: the command as the model wrote it.
        home: the user's home directory (see :func:`normalize`).
    """
    base = normalize(command, home)
    variants: list[str] = [base.lower()]
    findings: list[Finding] = []
    pending = [base]
    resolved = _resolve_literals(base)
    if resolved != base:
        variants.append(resolved.lower())
        pending.append(resolved)
    seen_scripts = set(pending)
    while pending:
        text = pending.pop()
        segments = _segments(text)
        marked = _mark(text, segments)
        if marked is not text:
            variants.append(marked.lower())
        for start, end, word, segment_end in _command_words(text, segments):
            plain = _unquote_word(word)
            if plain != word:
                variants.append((text[:start] + plain + text[end:]).lower())
            for finding in _read_options(plain, text, start, segment_end):
                findings.append(finding)
                if finding.payload and finding.payload not in seen_scripts:
                    seen_scripts.add(finding.payload)
                    variants.append(finding.payload.lower())
                    pending.append(finding.payload)
    return Reading(tuple(dict.fromkeys(variants)), tuple(dict.fromkeys(findings)))


def _after_blanks(text: str, start: int) -> int:
    """The offset of the first character from ``start`` on that is not a space or a tab."""
    blanks = _BLANKS.match(text, start)
    return blanks.end() if blanks else start  # always a match: the pattern matches the empty string


def _segments(text: str) -> list[tuple[int, int]]:
    """The simple commands of ``text`` as (start, end) offsets, split at separators found outside quotes.

    A ``$(...)`` inside a double-quoted string is a command of its own (the shell runs it).
    """
    if not _MAY_SEPARATE.search(text):
        return [(_after_blanks(text, 0), len(text))]
    segments: list[tuple[int, int]] = []
    start = 0
    for token in _SYNTAX.finditer(text):
        value = token.group()
        first = value[0]
        if first == "'" or first == "\\" or value.startswith("${"):
            continue
        if first == '"':
            at = value.find("$(")
            while at != -1:
                close = value.find(")", at)
                segments.append((token.start() + at + 2, token.start() + (close if close != -1 else len(value))))
                at = value.find("$(", at + 2)
            continue
        segments.append((start, token.start()))
        start = token.end()
    segments.append((start, len(text)))
    result = []
    for start, end in segments:
        start = _after_blanks(text, start)
        if start < end:
            result.append((start, end))
    return result


def _mark(text: str, segments: list[tuple[int, int]]) -> str:
    """``text`` with a newline before each command that does not already start a line (else ``text`` itself)."""
    starts = sorted(start for start, _ in segments if start > 0 and text[start - 1] != "\n")
    if not starts:
        return text
    parts: list[str] = []
    previous = 0
    for start in starts:
        parts.append(text[previous:start])
        parts.append("\n")
        previous = start
    parts.append(text[previous:])
    return "".join(parts)


def _command_words(text: str, segments: list[tuple[int, int]]) -> Iterator[tuple[int, int, str, int]]:
    """Each command word (and each wrapper or assignment before it) of every simple command.

    Yields the word's span, the word as written, and where its simple command ends. A command whose
    first word is none of those the guard reads further (a wrapper, an assignment, an interpreter, a
    shell, a reading tool, a quoted or substituted word) is passed over by one match: the lines of a
    long here-document cost little.
    """
    for start, end in segments:
        if not _READ_FURTHER.match(text, start, end):
            continue
        skipping_options = False
        for count, match in enumerate(_WORD.finditer(text, start, end)):
            if count >= _MAX_PREFIX_WORDS:
                break
            word = match.group()
            plain = _unquote_word(word)
            if skipping_options and plain.startswith("-"):
                continue
            yield match.start(), match.end(), word, end
            name = plain.rsplit("/", 1)[-1].lower()
            if name in _WRAPPERS:
                skipping_options = name in ("sudo", "doas", "env", "nice")
                continue
            if _ASSIGNMENT.match(plain):
                skipping_options = False
                continue
            break


def _resolve_literals(text: str) -> str:
    """``text`` with its literal substitutions resolved: ``$(echo rm)`` and a backquoted ``printf rm`` are ``rm``,
    ``${X:-rm}`` and ``${X/a/rm}`` are ``rm`` (what the shell prints there when ``X`` is unset)."""
    if "$(" in text or "`" in text:
        text = _SUBSTITUTION.sub(_literal_output, text)
    if "${" in text:
        text = _PARAMETER.sub(lambda m: m.group("default") or m.group("replacement") or "", text)
    return text


def _unquote_word(word: str) -> str:
    """A word without its quotes."""
    if "'" not in word and '"' not in word:
        return word
    if _UNCLOSED.match(word):
        return word
    return _QUOTING.sub(_unquoted, word)


def _unquoted(match: re.Match[str]) -> str:
    """The text of one quoted stretch or escape."""
    for group in match.groups():
        if group is not None:
            return group
    return ""


def _literal_output(match: re.Match[str]) -> str:
    """What ``$(echo word)`` or ``$(printf word)`` prints, when it is that simple (else unchanged)."""
    script = match.group("a") if match.group("a") is not None else match.group("b")
    argv = _argv(script, 0, len(script))
    if argv and argv[0] in ("echo", "printf"):
        args = argv[1:]
        if argv[0] == "echo":
            while args and re.fullmatch(r"-[neE]+", args[0]):
                args = args[1:]
        elif args[:1] == ["%s"]:
            args = args[1:]
        if len(args) == 1 and _LITERAL.fullmatch(args[0]):
            return args[0]
    return match.group()


def _argv(text: str, start: int, end: int) -> list[str] | None:
    """The unquoted words of ``text[start:end]`` (None when a quote does not close)."""
    words = []
    for match in _WORD.finditer(text, start, end):
        word = match.group()
        if "'" in word or '"' in word:
            if _UNCLOSED.match(word):
                return None
            word = _QUOTING.sub(_unquoted, word)
        words.append(word)
    return words


def _read_options(command_word: str, text: str, start: int, end: int) -> Iterator[Finding]:
    """Findings about the program ``command_word`` names, from its options (the rest of ``text[start:end]``)."""
    name = command_word.rsplit("/", 1)[-1].lower().removesuffix(".exe")
    interpreter = _INTERPRETER_NAME.fullmatch(name)
    if interpreter is None and name not in _SHELLS and name not in _PROGRAM_OPTIONS and name not in _GREPS:
        return
    argv = _argv(text, start, end)
    if name in _GREPS:
        if argv is None or _grep_unreadable(argv[1:]):
            yield Finding("unreadable_grep")
        return
    if argv is None:
        yield Finding("unreadable_program_options")
        return
    args = argv[1:]
    if interpreter is not None:
        family = interpreter.lastgroup or ""
        if _interpreter_runs_code(family, args):
            yield Finding("script_command_string")
        elif any(arg.startswith("<<") for arg in args):
            yield Finding("script_heredoc")
    elif name in _SHELLS:
        found, script = _shell_command_string(args)
        if found:
            yield Finding("shell_command_string", script)
    else:
        program = _program_option(_PROGRAM_OPTIONS[name], args)
        if program is not None:
            yield Finding("read_tool_program", program)


def _grep_unreadable(args: list[str]) -> bool:
    """Whether a grep's options end wanting a value, or a Perl-regex grep (``-P``) has no pattern.

    Hermes refuses these outright: it hides a ``grep -P`` pattern from its other checks, and where
    the options do not say which word is the pattern, nothing could be hidden safely.
    """
    perl = explicit = operand = False
    options = True
    index = 0
    while index < len(args):
        arg = args[index]
        if options and arg == "--":
            options = False
        elif options and arg.startswith("--"):
            name, equals, _ = arg.partition("=")
            perl = perl or name == "--perl-regexp"
            explicit = explicit or name in ("--regexp", "--file")
            if name in _GREP_LONG_WITH_VALUE and not equals:
                if index + 1 == len(args):
                    return True
                index += 1
        elif options and arg.startswith("-") and arg != "-":
            for at, letter in enumerate(arg[1:], start=1):
                perl = perl or letter == "P"
                explicit = explicit or letter in "ef"
                if letter in _GREP_SHORT_WITH_VALUE:
                    if at == len(arg) - 1:
                        if index + 1 == len(args):
                            return True
                        index += 1
                    break
        else:
            operand = True
        index += 1
    return perl and not explicit and not operand


def _interpreter_runs_code(family: str, args: list[str]) -> bool:
    """Whether the options before the script name give the interpreter (of ``family``) code to run."""
    code_options, with_value = _CODE_OPTIONS[family]
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--" or (family != "powershell" and not arg.startswith("-")):
            return False
        option = arg.split("=", 1)[0]
        if (option.lower() if family == "powershell" else option) in code_options:
            return True
        if family != "powershell" and not option.startswith("--") and len(option) > 2:
            # A bundle (``-uc``) unless its first letter takes the rest as a value (``-Wonce``).
            if option[:2] not in with_value and any(f"-{letter}" in code_options for letter in option[1:]):
                return True
        skip = option in with_value and "=" not in arg
    return False


def _shell_command_string(args: list[str]) -> tuple[bool, str | None]:
    """Whether a shell's options hold ``-c``, and the command string that follows it."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--" or not arg.startswith(("-", "+")):
            break
        if arg in _SHELL_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if arg.startswith("--"):
            index += 1
            continue
        takes_value = "o" in arg or "O" in arg
        if "c" in arg[1:]:
            at = index + 1 + takes_value
            return True, args[at] if at < len(args) else None
        index += 1 + takes_value
    return False, None


def _program_option(options: tuple[str, ...], args: list[str]) -> str | None:
    """The program a reading tool's option names (``--pre=PROG``, ``--pre PROG``, ``-PPROG``), or None."""
    for index, arg in enumerate(args):
        if arg == "--":
            break
        option, equals, value = arg.partition("=")
        if option in options:
            return value if equals else (args[index + 1] if index + 1 < len(args) else None)
        for short in options:
            if len(short) == 2 and arg.startswith(short) and len(arg) > 2:
                return arg[2:]
    return None
