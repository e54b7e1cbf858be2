"""The scripted provider server: a loopback HTTP server that speaks the OpenAI
Chat Completions, Anthropic Messages and OpenAI Responses wire protocols from a
script, for tests and for the no-key demo.

Public API::

    async with serve_scripted_provider(steps=None, rule_mode=False) as server:
        server.base_url      # "http://127.0.0.1:PORT/v1"
        server.push({"text": "hi"})
        server.requests, server.disconnects
"""

from __future__ import annotations

from .app import Disconnect, RecordedRequest
from .server import ScriptedProvider, serve_scripted_provider
from .steps import ErrorSpec, MidStreamErrorSpec, Step, ToolCallSpec, parse_steps

__all__ = [
    "Disconnect",
    "ErrorSpec",
    "MidStreamErrorSpec",
    "RecordedRequest",
    "ScriptedProvider",
    "Step",
    "ToolCallSpec",
    "parse_steps",
    "serve_scripted_provider",
]
