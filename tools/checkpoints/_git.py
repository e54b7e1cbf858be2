"""Running git on a shadow repository so that the directory it snapshots cannot make it do anything else.

The working directory is the model's to shape: it may hold a ``.git`` of its own, a ``.gitattributes``
naming a filter, files of any size. Git is therefore run with an environment built from nothing (no
inherited ``GIT_*`` variable, no user or system config, no hooks, no fsmonitor), so a filter, a diff
driver or a hook named by the working directory has no definition to run; the only config is the shadow
repository's own, written by us. Each call has a deadline and a cap on what it may print.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import attrs
import trio

from tools.checkpoints.errors import CheckpointError

__all__ = ["GitResult", "run_git"]

#: Settings given on every call, over anything a config file could say.
_HARDENING = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "core.autocrlf=false",
    "core.symlinks=true",
    "core.untrackedCache=false",
    "core.splitIndex=false",
    "core.quotePath=false",
    "gc.auto=0",
    "commit.gpgSign=false",
    "advice.addEmbeddedRepo=false",
    "user.name=hermes-actors checkpoint",
    "user.email=checkpoints@hermes-actors.invalid",
)
_DEFAULT_OUTPUT_CAP = 4 * 1024 * 1024
_ERROR_CAP = 16 * 1024


@attrs.frozen
class GitResult:
    """What one git call printed and how it ended.

    Attributes:
        status: its exit status.
        out: its standard output (cut at the call's cap; ``truncated`` says so).
        err: its standard error, cut short.
        truncated: the output was longer than the cap (the process was stopped there).
    """

    status: int
    out: bytes
    err: str
    truncated: bool = False

    @property
    def text(self) -> str:
        """The output as text, without its final newline."""
        return self.out.decode("utf-8", "replace").rstrip("\n")


def _environment(git_dir: Path, work_tree: Path | None, index: Path | None, extra: dict[str, str]) -> dict[str, str]:
    env = {
        **extra,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(git_dir),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_DIR": str(git_dir),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_SYSTEM": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PAGER": "cat",
    }
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


async def run_git(
    args: list[str],
    *,
    git_dir: Path,
    work_tree: Path | None = None,
    index: Path | None = None,
    timeout: float,
    extra_config: tuple[str, ...] = (),
    output_cap: int = _DEFAULT_OUTPUT_CAP,
    check: bool = True,
    extra_env: dict[str, str] | None = None,
) -> GitResult:
    """Run ``git args`` on the shadow repository ``git_dir`` as a child process, off the event loop.

    Args:
        args: git's arguments (a subcommand and its options).
        git_dir: the shadow repository.
        work_tree: the directory it snapshots (None: a call that needs none).
        index: the index file to use.
        timeout: seconds before the call is stopped.
        extra_config: more ``name=value`` settings for this call.
        output_cap: bytes of standard output kept; past it the process is stopped.
        check: raise on a non-zero exit status.
        extra_env: more environment variables (a commit's dates).

    Raises:
        CheckpointError: git is missing, timed out, or (with ``check``) failed.
    """
    command = ["git"]
    for setting in (*_HARDENING, *extra_config):
        command += ["-c", setting]
    command += args
    cwd = work_tree if work_tree is not None else git_dir
    out = bytearray()
    err = bytearray()
    truncated = False

    async def drain(stream: trio.abc.ReceiveStream, into: bytearray, cap: int, process: trio.Process) -> None:
        nonlocal truncated
        async for chunk in stream:
            room = cap - len(into)
            into += chunk[: max(0, room)]
            if len(chunk) > room:
                if into is out:
                    # Stopped rather than drained: a diff of a huge tree must not keep git busy.
                    truncated = True
                    process.kill()
                    return

    try:
        process = await trio.lowlevel.open_process(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(cwd), env=_environment(git_dir, work_tree, index, extra_env or {}),
        )
    except FileNotFoundError as exc:
        raise CheckpointError("git is not installed (checkpoints need it)") from exc
    assert process.stdout is not None and process.stderr is not None
    try:
        with trio.fail_after(timeout):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain, process.stdout, out, output_cap, process)
                nursery.start_soon(drain, process.stderr, err, _ERROR_CAP, process)
            status = await process.wait()
    except trio.TooSlowError as exc:
        raise CheckpointError(f"git {args[0]} took longer than {timeout:g} s") from exc
    finally:
        # Cancelled or timed out: the child must not outlive the call.
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    result = GitResult(status, bytes(out), err.decode("utf-8", "replace").strip(), truncated)
    if check and status != 0 and not truncated:
        raise CheckpointError(f"git {args[0]} failed: {result.err or f'exit status {status}'}")
    return result
