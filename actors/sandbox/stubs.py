"""The sandbox allow-list and the generator of the child's ``hermes_tools`` module.

The generated module is plain standard-library Python (it must import under ``python -S``): one
function per allowed tool with the seeds' signatures, the helpers ``json_parse``, ``shell_quote`` and
``retry``, and a thread-safe RPC client that tags each request with an id so several threads can have
calls in flight on one connection at once.
"""

from __future__ import annotations

import functools
import importlib.util
import marshal
import sys
from collections.abc import Mapping
from types import MappingProxyType

import attrs

#: Environment variables through which the child finds the RPC server.
SOCKET_ENV = "HERMES_RPC_SOCKET"
TOKEN_ENV = "HERMES_RPC_TOKEN"

#: Name of the generated module inside the sandbox directory.
STUB_MODULE_FILE = "hermes_tools.py"


@attrs.frozen
class StubParam:
    """One parameter of a generated tool function; ``default`` is Python source, None if required."""

    name: str
    default: str | None = None


@attrs.frozen
class ToolStub:
    """The signature and one-line help of one tool function in ``hermes_tools``."""

    name: str
    params: tuple[StubParam, ...]
    doc: str
    # Extra keyword arguments are forwarded so the server can strip them (terminal's background=True).
    forwards_extra: bool = False


def _p(name: str, default: str | None = None) -> StubParam:
    return StubParam(name, default)


# The audit (docs/DECISIONS.md#d-script-tool-audit): what a script may call (intersected with the
# session's enabled tools).
TOOL_STUBS: Mapping[str, ToolStub] = MappingProxyType({
    stub.name: stub
    for stub in (
        ToolStub("web_search", (_p("query"), _p("limit", "5")), "Search the web; returns a dict with the results."),
        ToolStub("web_extract", (_p("urls"),), "Fetch pages (a list of URLs) as markdown; returns a dict with 'results'."),
        ToolStub(
            "read_file",
            (_p("path"), _p("offset", "1"), _p("limit", "500")),
            "Read a text file with line numbers; returns a dict with 'content' and totals.",
        ),
        ToolStub("write_file", (_p("path"), _p("content")), "Write a file atomically, creating parent directories."),
        ToolStub(
            "search_files",
            (
                _p("pattern"), _p("target", "'content'"), _p("path", "'.'"), _p("file_glob", "None"), _p("limit", "50"),
                _p("offset", "0"), _p("output_mode", "'content'"), _p("context", "0"),
            ),
            "Search file contents (target='content') or names (target='files'); returns a dict with 'matches', "
            "'files' or 'counts' (output_mode).",
        ),
        ToolStub(
            "patch",
            # mode last, with the default patch's schema requires, so Hermes's four-argument calls hold.
            (_p("path"), _p("old_string"), _p("new_string"), _p("replace_all", "False"), _p("mode", "'replace'")),
            "Replace an exact string in a file; returns a dict with the diff or an error.",
        ),
        ToolStub(
            "terminal",
            (_p("command"), _p("timeout", "None"), _p("workdir", "None")),
            "Run a shell command in the foreground; returns a dict with 'output' and 'exit_code'.",
            forwards_extra=True,
        ),
        ToolStub("browser_navigate", (_p("url"),), "Open a URL in the browser."),
        ToolStub("browser_snapshot", (_p("full", "False"),), "Return the current page's accessibility snapshot."),
        ToolStub("browser_click", (_p("ref"),), "Click the element with the given snapshot ref."),
        ToolStub("browser_type", (_p("ref"), _p("text")), "Type text into the element with the given ref."),
        ToolStub("browser_scroll", (_p("direction"),), "Scroll the page 'up' or 'down'."),
        ToolStub("browser_back", (), "Go back one page."),
        ToolStub("browser_press", (_p("key"),), "Press a keyboard key."),
    )
})

SANDBOX_ALLOWED_TOOLS: frozenset[str] = frozenset(TOOL_STUBS)

# Tools the audit keeps out of scripts: asking for one gets "use it as a normal tool call".
SANDBOX_EXCLUDED_TOOLS: frozenset[str] = frozenset(
    {
        "browser_close", "browser_get_images", "browser_vision", "vision_analyze", "mixture_of_agents",
        "image_generate", "text_to_speech", "process", "skills_list", "skill_view", "skill_manage",
        "cronjob", "schedule_cronjob", "list_cronjobs", "remove_cronjob", "send_message", "todo", "todo_write",
        "todo_read", "clarify", "execute_code", "delegate_task", "memory", "session_search",
    }
)  # fmt: skip

# terminal() inside a script is foreground only: these arguments are dropped before dispatch.
TERMINAL_STRIPPED_ARGS: frozenset[str] = frozenset(
    {"background", "pty", "notify_on_complete", "watch_patterns", "check_interval"}
)


def sandbox_tools(enabled_tools: frozenset[str]) -> frozenset[str]:
    """Return the tools a script may call: the allow-list intersected with the session's enabled tools.

    ``execute_code`` is never included (no recursive sandboxing), whatever ``enabled_tools`` holds.
    """
    return (SANDBOX_ALLOWED_TOOLS & enabled_tools) - {"execute_code"}


_RUNTIME = '''\
"""Tools of the hermes-actors session, callable from this script (generated; do not edit)."""

import os as _os
import _socket
import _thread

__all__ = [{exports}]

_SOCKET_PATH = _os.environ.get({socket_env!r}, "")
# Taken out of the environment so processes the script starts do not inherit it.
_TOKEN = _os.environ.pop({token_env!r}, "")
# JSON through json's C accelerator, not the json module: importing json imports re, enum and collections,
# most of this module's import time (about 8 ms of CPU); threading (4 ms more) only once a second thread waits.
_WHITESPACE = " \\t\\n\\r"


class _DecodeOptions:
    """What json's C scanner reads from its context: json.loads's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {{"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}}.__getitem__


def _unencodable(value):
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _json_codec():
    """(encode, decode): compact and non-ASCII as json.dumps(..., ensure_ascii=False, separators=(",", ":")),
    and json.loads; the json module's own where the accelerator is missing or takes other arguments."""
    try:
        import _json

        encoder_options = (_unencodable, _json.encode_basestring, None, ":", ",", False, False, True)
        _json.make_encoder({{}}, *encoder_options)
        scan = _json.make_scanner(_DecodeOptions())
    except (ImportError, AttributeError, TypeError):
        import json

        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode, json.JSONDecoder().decode

    make_encoder = _json.make_encoder

    def encode(value):
        # A fresh circular-reference memo each time: one left half-full by a failed call could refuse the next.
        return "".join(make_encoder({{}}, *encoder_options)(value, 0))

    def decode(text):
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except StopIteration as exc:
            raise _decode_error("Expecting value", text, exc.value) from None
        rest = text[end:].lstrip(_WHITESPACE)
        if rest:
            raise _decode_error("Extra data", text, len(text) - len(rest))
        return value

    return encode, decode


def _decode_error(message, text, position):
    from json import JSONDecodeError

    return JSONDecodeError(message, text, position)


_encode, _decode = _json_codec()


def _condition(lock):
    import threading

    return threading.Condition(lock)


class _Client:
    """One connection shared by all threads: the thread that finds nobody reading reads for everyone.

    A lone caller (the usual script) takes the lock twice per call and never waits on the condition.
    """

    def __init__(self):
        self._sock = None
        self._buffer = bytearray()
        self._next_id = 0
        self._send_lock = _thread.allocate_lock()
        # Guards every field below; the condition (made when a caller first waits) wakes callers waiting
        # for the reader.
        self._lock = _thread.allocate_lock()
        self._arrived = None
        self._reading = False
        self._waiting = 0
        self._done = {{}}
        self._broken = None

    def call(self, tool, args):
        with self._lock:
            if self._broken is not None:
                raise RuntimeError(self._broken)
            self._next_id += 1
            request_id = self._next_id
            reader = not self._reading
            self._reading = True
        try:
            payload = {{"type": "RpcRequest", "id": request_id, "tool": tool, "args": args}}
            frame = (_encode(payload) + "\\n").encode("utf-8")
            with self._send_lock:
                try:
                    if self._sock is None:
                        self._sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                        self._sock.connect(_SOCKET_PATH)
                        # The server reads the token line before anything else; it travels with the first frame.
                        frame = (_TOKEN + "\\n").encode("utf-8") + frame
                    self._sock.sendall(frame)
                except OSError as exc:
                    self._fail("Agent process disconnected: %s" % exc)
            if reader:
                return self._read_until(request_id)
        except BaseException:
            if reader:
                self._stop_reading()
            raise
        return self._await(request_id)

    def _await(self, request_id):
        with self._lock:
            while True:
                if request_id in self._done:
                    return self._done.pop(request_id)
                if self._broken is not None:
                    raise RuntimeError(self._broken)
                if not self._reading:
                    self._reading = True
                    break
                if self._arrived is None:
                    self._arrived = _condition(self._lock)
                self._waiting += 1
                try:
                    self._arrived.wait()
                finally:
                    self._waiting -= 1
        try:
            return self._read_until(request_id)
        except BaseException:
            self._stop_reading()
            raise

    def _read_until(self, request_id):
        """Read responses, handing on other callers', until this call's arrives; then stop reading."""
        while True:
            response = self._read_response()
            response_id = response.get("id")
            if response_id == request_id:
                self._stop_reading()
                return response
            if response_id == 0 and response.get("error"):
                # An answer to no request: the server refused the connection (the token) or could not
                # read a frame, so which call it belongs to is unknown; every waiting call learns why.
                self._fail("RPC connection failed: %s" % response["error"])
            with self._lock:
                self._done[response_id] = response
                if self._waiting:
                    self._arrived.notify_all()

    def _stop_reading(self):
        with self._lock:
            self._reading = False
            if self._waiting:
                self._arrived.notify_all()

    def _read_response(self):
        buffer = self._buffer
        while True:
            end = buffer.find(b"\\n")
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                return _decode(line.decode("utf-8"))
            try:
                chunk = self._sock.recv(65536)
            except OSError as exc:
                self._fail("Agent process disconnected: %s" % exc)
            if not chunk:
                self._fail("Agent process disconnected")
            if not buffer and chunk.find(b"\\n") == len(chunk) - 1:
                # The usual read: exactly one whole response, decoded without copying it through the buffer.
                return _decode(chunk.decode("utf-8"))
            buffer += chunk

    def _fail(self, reason):
        with self._lock:
            self._broken = reason
            if self._arrived is not None:
                self._arrived.notify_all()
        raise RuntimeError(reason)


_client = _Client()


def _new_client_after_fork():
    # A forked child must not share the parent's connection (frames would interleave) or its locks.
    global _client
    _client = _Client()


_os.register_at_fork(after_in_child=_new_client_after_fork)


def _call(tool, args):
    response = _client.call(tool, {{k: v for k, v in args.items() if v is not None}})
    error = response.get("error")
    if error is not None:
        return {{"error": error}}
    result = response.get("result")
    if isinstance(result, str):
        try:
            return _decode(result)
        except ValueError:
            return result
    return result


def json_parse(text):
    """Parse JSON leniently (control characters inside strings are accepted)."""
    import json

    return json.loads(text, strict=False)


def shell_quote(text):
    """Quote a string for safe use as one word in a terminal() command."""
    import shlex

    return shlex.quote(str(text))


def retry(fn, max_attempts=3, delay=2):
    """Call fn() until it succeeds, up to max_attempts times, doubling the delay between attempts."""
    import time

    for attempt in range(max_attempts):
        try:
            return fn()
        except Exception:
            if attempt == max_attempts - 1:
                raise
            time.sleep(delay * (2 ** attempt))
'''

_FUNCTION = '''

def {name}({signature}):
    """{doc}"""
    return _call({name!r}, {{{mapping}{extra}}})
'''


def generate_stub_module(tools: frozenset[str]) -> str:
    """Return the source of ``hermes_tools.py`` exposing exactly ``tools`` (each must be on the allow-list).

    Raises:
        ValueError: a tool without a known signature was requested.
    """
    unknown = tools - SANDBOX_ALLOWED_TOOLS
    if unknown:
        raise ValueError(f"no sandbox stub for tools: {', '.join(sorted(unknown))}")
    names = sorted(tools)
    exports = ", ".join(repr(n) for n in [*names, "json_parse", "shell_quote", "retry"])
    parts = [_RUNTIME.format(exports=exports, socket_env=SOCKET_ENV, token_env=TOKEN_ENV)]
    for name in names:
        stub = TOOL_STUBS[name]
        params = [p.name if p.default is None else f"{p.name}={p.default}" for p in stub.params]
        mapping = ", ".join(f"{p.name!r}: {p.name}" for p in stub.params)
        if stub.forwards_extra:
            params.append("**extra")
        extra = ", **extra" if stub.forwards_extra else ""
        parts.append(
            _FUNCTION.format(name=name, signature=", ".join(params), doc=stub.doc, mapping=mapping, extra=extra)
        )
    return "".join(parts)


@attrs.frozen
class StubModule:
    """``hermes_tools`` for one set of tools: its source, and its bytecode as an unchecked-hash ``.pyc``.

    Attributes:
        source: The module's text (:func:`generate_stub_module`).
        bytecode: The ``.pyc`` the child's interpreter loads without compiling the source again (about a
            millisecond of CPU per run), and without checking it against the source (written beside it,
            whatever its time stamp); None where this interpreter keeps no bytecode cache.
        bytecode_name: Its name inside the module's directory (``__pycache__/hermes_tools.<tag>.pyc``).
    """

    source: str
    bytecode: bytes | None
    bytecode_name: str


#: Flags of a PEP 552 ``.pyc``: hash-based, source not checked.
_UNCHECKED_HASH = (0b01).to_bytes(4, "little")


@functools.lru_cache(maxsize=64)
def stub_module(tools: frozenset[str]) -> StubModule:
    """``hermes_tools`` for ``tools``, generated and compiled once per set (the child runs this interpreter).

    Raises:
        ValueError: a tool without a known signature was requested.
    """
    source = generate_stub_module(tools)
    tag = sys.implementation.cache_tag
    name = f"__pycache__/{STUB_MODULE_FILE.removesuffix('.py')}.{tag}.pyc"
    if tag is None:
        return StubModule(source, None, name)
    data = source.encode("utf-8")
    # The file name is fixed up to the module's own path when the child loads it; optimize=0: the child
    # runs without -O, so it looks for (and must find) the plain .pyc, docstrings kept.
    code = compile(data, STUB_MODULE_FILE, "exec", dont_inherit=True, optimize=0)
    header = importlib.util.MAGIC_NUMBER + _UNCHECKED_HASH + importlib.util.source_hash(data)
    return StubModule(source, header + marshal.dumps(code), name)
