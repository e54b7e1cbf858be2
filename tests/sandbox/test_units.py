"""Unit tests of the sandbox's pure parts: stubs, environment, result, config."""

from __future__ import annotations

import ast
import json
import os

import attrs
import pytest

from actors.sandbox.environment import child_environment
from actors.sandbox.frames import plain_request, result_frame
from actors.sandbox.result import SandboxResult, SandboxStatus, SandboxToolCall
from actors.sandbox.stubs import (
    SANDBOX_ALLOWED_TOOLS,
    SOCKET_ENV,
    TOKEN_ENV,
    generate_stub_module,
    sandbox_tools,
    stub_module,
)
from config.sandbox import CodeExecutionConfig
from messages.codec import Codec
from messages.rpc import RpcMessage, RpcRequest, RpcResponse
from tools.errors import ToolError


def _signatures(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    return {node.name: ast.unparse(node.args) for node in tree.body if isinstance(node, ast.FunctionDef)}


class TestStubGeneration:
    """The generated hermes_tools exposes exactly the allowed tools with the seeds' signatures."""

    def test_seed_signatures(self) -> None:
        sigs = _signatures(generate_stub_module(SANDBOX_ALLOWED_TOOLS))
        assert sigs["web_search"] == "query, limit=5"
        assert sigs["web_extract"] == "urls"
        assert sigs["read_file"] == "path, offset=1, limit=500"
        assert sigs["write_file"] == "path, content"
        assert sigs["search_files"] == (
            "pattern, target='content', path='.', file_glob=None, limit=50, offset=0, output_mode='content', context=0"
        )
        assert sigs["patch"] == "path, old_string, new_string, replace_all=False, mode='replace'"
        assert sigs["terminal"] == "command, timeout=None, workdir=None, **extra"
        assert sigs["retry"] == "fn, max_attempts=3, delay=2"
        assert {"json_parse", "shell_quote"} <= set(sigs)

    def test_only_requested_tools(self) -> None:
        source = generate_stub_module(frozenset({"read_file"}))
        sigs = _signatures(source)
        assert "read_file" in sigs and "terminal" not in sigs and "web_search" not in sigs
        assert "__all__ = ['read_file', 'json_parse', 'shell_quote', 'retry']" in source

    def test_unknown_tool_refused(self) -> None:
        with pytest.raises(ValueError, match="vision_analyze"):
            generate_stub_module(frozenset({"vision_analyze"}))

    def test_allowed_set_is_intersection_and_never_execute_code(self) -> None:
        enabled = frozenset({"read_file", "terminal", "vision_analyze", "execute_code", "memory"})
        assert sandbox_tools(enabled) == {"read_file", "terminal"}

    def test_stub_imports_without_site(self, tmp_path) -> None:
        """The module only uses the standard library, so it imports under python -S."""
        import subprocess
        import sys

        (tmp_path / "hermes_tools.py").write_text(generate_stub_module(SANDBOX_ALLOWED_TOOLS))
        proc = subprocess.run(
            [sys.executable, "-S", "-c", "import hermes_tools, os; print(hermes_tools.shell_quote(\"a b'c\"))"],
            cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(tmp_path)}, check=True,
        )  # fmt: skip
        assert proc.stdout.strip() == "'a b'\"'\"'c'"


_CODEC_CHECK = """
import json, hermes_tools as h
values = [{"a": [1, 2.5, -0.0, 1e300, "é\\n\\u2028", None, True, False]}, {}, [], "x", 12, {"k": {"n": [[]]}},
          {"inf": float("inf"), "nan": float("nan")}]
for value in values:
    assert h._encode(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")), value
    text = json.dumps(value)
    assert repr(h._decode(" " + text + "\\n")) == repr(json.loads(" " + text + "\\n")), text


def same_error(error, reference, ours, value):
    try:
        reference(value)
    except error as expected:
        try:
            ours(value)
        except error as got:
            assert str(got) == str(expected), (got, expected)
            return
    raise AssertionError(value)


for bad in ["", "x", "{} x", "[1,]", '"a\\tb"']:
    same_error(ValueError, json.loads, h._decode, bad)
circular = []
circular.append(circular)
for value, error in [({"a": object()}, TypeError), (circular, ValueError)]:
    same_error(error, json.dumps, h._encode, value)
    assert h._encode({"after": 1}) == '{"after":1}'  # a failed call leaves nothing behind
print("ok")
"""


class TestStubImport:
    """The stub imports light (no json, re or threading: 6 ms of CPU per run) and speaks json's JSON exactly."""

    def _run(self, tmp_path, code: str) -> str:
        import subprocess
        import sys

        (tmp_path / "hermes_tools.py").write_text(generate_stub_module(SANDBOX_ALLOWED_TOOLS))
        proc = subprocess.run(
            [sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
            env={"PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def test_import_loads_no_heavy_module(self, tmp_path) -> None:
        code = "import sys, hermes_tools; print(sorted({'json', 're', 'threading', 'enum'} & set(sys.modules)))"
        assert self._run(tmp_path, code) == "[]"

    @pytest.mark.parametrize("prelude", ["", "import sys; sys.modules['_json'] = None"], ids=["accelerated", "no-accelerator"])
    def test_codec_is_jsons(self, tmp_path, prelude: str) -> None:
        """Through json's C accelerator, or through json itself where there is none."""
        assert self._run(tmp_path, prelude + "\n" + _CODEC_CHECK) == "ok"


class TestEnvironment:
    """The child's environment keeps safe variables, drops secrets and everything else."""

    PARENT = {
        "PATH": "/usr/bin", "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C", "XDG_RUNTIME_DIR": "/run/u",
        "OPENAI_API_KEY": "sk-x", "GITHUB_TOKEN": "t", "DB_PASSWORD": "p", "SENTRY_DSN": "d",
        "SLACK_WEBHOOK_URL": "w", "MY_CREDS": "c", "XDG_SECRET": "s", "PYTHONPATH": "/project",
        "RANDOM_VAR": "r", "HERMES_ACTORS_HOME": "/h", "MY_CUSTOM_KEY": "passed",
    }  # fmt: skip

    def test_scrub(self) -> None:
        env = child_environment(self.PARENT, sandbox_dir="/sbx", socket_path="/sbx/rpc.sock", token="tok")
        assert env["PATH"] == "/usr/bin" and env["HOME"] == "/root" and env["LC_ALL"] == "C"
        assert env["XDG_RUNTIME_DIR"] == "/run/u"
        for dropped in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "SENTRY_DSN", "SLACK_WEBHOOK_URL",
                        "MY_CREDS", "XDG_SECRET", "RANDOM_VAR", "HERMES_ACTORS_HOME", "MY_CUSTOM_KEY"):  # fmt: skip
            assert dropped not in env, dropped
        assert env["PYTHONPATH"] == "/sbx"
        with_site = child_environment(self.PARENT, sandbox_dir="/sbx", socket_path="/s", token="t", site_packages=["/v/site"])
        assert with_site["PYTHONPATH"] == "/sbx:/v/site"
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONIOENCODING"] == "utf-8"
        assert env[SOCKET_ENV] == "/sbx/rpc.sock" and env[TOKEN_ENV] == "tok"

    def test_passthrough_wins_over_secret_look(self) -> None:
        env = child_environment(
            self.PARENT, sandbox_dir="/s", socket_path="/s/r", token="t", passthrough=["MY_CUSTOM_KEY", "ABSENT"]
        )
        assert env["MY_CUSTOM_KEY"] == "passed" and "ABSENT" not in env


class TestResult:
    """The result JSON has the seeds' fields; an empty-code result is a bare error."""

    def test_fields(self) -> None:
        result = SandboxResult(SandboxStatus.SUCCESS, output="hi\n", tool_calls_made=3, duration_seconds=1.234,
                               exit_code=0, stdout_truncated=True, stdout_total_bytes=90_000)  # fmt: skip
        assert json.loads(result.tool_result().render()) == {
            "status": "success", "output": "hi\n", "tool_calls_made": 3, "duration_seconds": 1.23,
            "exit_code": 0, "output_truncated": True, "output_total_bytes": 90_000,
        }  # fmt: skip

    def test_error_only(self) -> None:
        """A run with no script is a failure: the model sees only its message."""
        with pytest.raises(ToolError, match=r"^No code provided\.$"):
            SandboxResult(SandboxStatus.ERROR, error="No code provided.").tool_result()

    def test_tool_call_record(self) -> None:
        record = SandboxToolCall("read_file", 20, 0.5, ok=False, error="boom").to_record()
        assert record == {"kind": "sandbox_tool_call", "tool": "read_file", "args_bytes": 20,
                          "duration_seconds": 0.5, "ok": False, "error": "boom"}  # fmt: skip
        # Every field, in the class's order (the record is written out by hand).
        assert list(record)[1:] == [field.name for field in attrs.fields(SandboxToolCall)]


class TestConfig:
    """CodeExecutionConfig has the seeds' defaults and refuses bad values."""

    def test_defaults(self) -> None:
        config = CodeExecutionConfig()
        assert (config.timeout, config.max_tool_calls, config.max_stdout_bytes, config.max_stderr_bytes) == (
            300.0, 50, 50_000, 10_000,
        )  # fmt: skip
        assert config.kill_grace_seconds == 5.0 and config.memory_limit_mb is None and config.strict is False

    @pytest.mark.parametrize(
        "bad",
        [{"timeout": 0}, {"max_tool_calls": -1}, {"max_stdout_bytes": 10}, {"memory_limit_mb": 1},
         {"strict": "yes"}, {"kill_grace_seconds": -1}, {"per_call_timeout": "5"}, {"max_tool_calls": True},
         {"timeout": False}, {"spare_interpreter": "no"}, {"spare_idle_seconds": 0}, {"spare_idle_seconds": -5}],
    )  # fmt: skip
    def test_bad_values(self, bad: dict) -> None:
        with pytest.raises((TypeError, ValueError)):
            CodeExecutionConfig(**bad)


class TestWorkspace:
    """The private directory is 0700 with 0600 files, and its socket path always fits."""

    def test_modes_and_removal(self, short_dir: str) -> None:
        import os
        import stat

        from actors.sandbox.workspace import create_workspace, remove_workspace

        stub = stub_module(frozenset({"read_file"}))
        workspace = create_workspace("print(1)", stub, short_dir)
        assert stat.S_IMODE(os.stat(workspace.directory).st_mode) == 0o700
        assert sorted(os.listdir(workspace.directory)) == ["__pycache__", "hermes_tools.py", "script.py"]
        for name in ("script.py", "hermes_tools.py", stub.bytecode_name):
            assert stat.S_IMODE(os.stat(os.path.join(workspace.directory, name)).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.join(workspace.directory, "__pycache__")).st_mode) == 0o700
        remove_workspace(workspace)
        assert os.listdir(short_dir) == []

    def test_child_loads_the_stub_compiled(self, short_dir: str) -> None:
        """The child imports hermes_tools from the bytecode written beside it, compiling nothing."""
        import subprocess
        import sys

        from actors.sandbox.workspace import create_workspace, remove_workspace

        stub = stub_module(frozenset({"read_file"}))
        workspace = create_workspace("", stub, short_dir)
        try:
            code = "import hermes_tools; hermes_tools.read_file('x')"
            proc = subprocess.run(
                [sys.executable, "-S", "-v", "-c", code], capture_output=True, text=True,
                env={"PYTHONPATH": workspace.directory, "PYTHONDONTWRITEBYTECODE": "1"},
            )  # fmt: skip
            pyc = os.path.join(workspace.directory, stub.bytecode_name)
            assert f"code object from '{pyc}'" in proc.stderr
            # Its tracebacks name the module's own file, as a compiled source's would.
            assert f'File "{workspace.directory}/hermes_tools.py"' in proc.stderr
        finally:
            remove_workspace(workspace)

    def test_long_tmpdir_falls_back_to_tmp(self, monkeypatch) -> None:
        import os

        from actors.sandbox.workspace import create_workspace, remove_workspace
        from messages.sockets import MAX_SOCKET_PATH_BYTES

        monkeypatch.setattr("tempfile.gettempdir", lambda: "/" + "t" * 90)
        workspace = create_workspace("", stub_module(frozenset()), None)
        try:
            assert workspace.directory.startswith("/tmp/hx-sbx-")
            assert len(os.fsencode(workspace.socket_path)) <= MAX_SOCKET_PATH_BYTES
        finally:
            remove_workspace(workspace)


class TestHotFrames:
    """The request and answer frames built without the codec are exactly the codec's; anything unusual is the codec's to decide."""

    @pytest.mark.parametrize("text", ["", "plain", 'quo"te\\ and \n', "é ü 日本", "lone \udc80 surrogate"])
    def test_result_frame_is_the_codecs(self, text: str) -> None:
        codec: Codec[RpcMessage] = Codec(RpcMessage)
        assert result_frame(42, text) == codec.encode(RpcResponse(id=42, result=text))

    def test_plain_request_is_the_codecs(self) -> None:
        codec: Codec[RpcMessage] = Codec(RpcMessage)
        payload = {"type": "RpcRequest", "id": 7, "tool": "read_file", "args": {"path": "a", "n": [1, {"b": None}]}}
        assert plain_request(payload, 7, "read_file") == codec.from_dict(payload) == RpcRequest(7, "read_file", payload["args"])

    @pytest.mark.parametrize(
        "payload",
        [
            {"type": "RpcRequest", "id": 7, "tool": "read_file", "args": [1]},
            {"type": "RpcRequest", "id": 7, "tool": "read_file", "args": {}, "extra": 1},
            {"type": "RpcRequest", "id": 7, "tool": "read_file"},
        ],
    )
    def test_anything_else_is_left_to_the_codec(self, payload: dict[str, object]) -> None:
        assert plain_request(payload, 7, "read_file") is None

