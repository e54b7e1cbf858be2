"""Errors of the execute_code sandbox.

The tree::

    SandboxError (RuntimeError)
    ├── SandboxUnavailable      no Unix sockets / process groups on this platform (Windows)
    ├── SandboxSetupError       the private directory, socket or child could not be created
    └── RpcError
        ├── RpcAuthError        wrong token or foreign peer uid on the sandbox socket
        ├── RpcRefused          a request the sandbox will not run (unknown/excluded tool, call limit)
        └── RpcCallStopped      a call's ``call:<n>`` job was killed before it answered

Scripts never see these classes: the RPC server turns every refusal into an error response, and
:class:`~actors.sandbox.runner.Sandbox` turns a failed setup into a result with status ``error``.
"""

from __future__ import annotations


class SandboxError(RuntimeError):
    """Base of every execute_code error."""


class SandboxUnavailable(SandboxError):
    """The platform lacks what the sandbox needs (Unix sockets, process groups)."""


class SandboxSetupError(SandboxError):
    """The sandbox's directory, socket or child process could not be set up."""


class RpcError(SandboxError):
    """A problem with one RPC request or connection."""


class RpcAuthError(RpcError):
    """The peer presented a wrong token or runs under another uid."""


class RpcRefused(RpcError):
    """The sandbox refuses to run the requested tool call; ``str()`` is the text the script sees."""


class RpcCallStopped(RpcError):
    """A script's tool call was stopped (``kill PATH`` of its ``call:<n>`` job) before it answered."""
