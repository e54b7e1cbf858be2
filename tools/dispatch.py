"""The one path every tool call takes: the agent loop's and the sandbox's.

``dispatch`` looks the tool up, validates the arguments against its schema,
runs the handler, renders its :class:`~tools.results.ToolResult` as JSON,
redacts the text and caps it. Whatever goes wrong comes back as a failed
:class:`~tools.results.ToolReply` whose text is ``{"error": ...}``, the form
the model can act on; only cancellation propagates, because cancelling is the
caller's decision. The reply carries ``ok`` beside the text, so no caller
parses the text to learn whether the call failed.

Redaction happens here, once, for every tool (terminal and process output,
execute_code, read_file, search_files, web_extract, MCP): no tool has to
remember it, and nothing downstream (the model, the store, a summary, a log)
sees a result that has not been through it.  It runs before the cap, so a
secret cut in half by the cap is still recognised whole.

A call rejected before its handler runs (an unknown or unavailable tool, arguments that fail the
schema or the tool's own check) can be recognised without recording anything (``rejection_of``) and
answered later exactly as ``dispatch`` answers it (``dispatch_rejection``): the sandbox's RPC server
answers a script's such calls without starting a job for them.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from messages.untrusted import repair_text
from tools.ansi import redact_output_async
from tools.clarify import UNAVAILABLE_MESSAGE as CLARIFY_UNAVAILABLE
from tools.errors import ArgumentValidationError, CapabilityUnavailable, ClarifyUnavailable, ToolError, ToolInputError
from tools.redact import redact_secrets, redact_tool_result
from tools.results import ToolReply, ToolResult, error_text
from tools.validation import validate_arguments

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import ToolEntry, ToolRegistry

__all__ = ["Rejection", "RejectionReplies", "RepeatedRejection", "dispatch", "dispatch_rejection", "rejection_of"]

logger = logging.getLogger(__name__)

_LOG_PREVIEW_CHARS = 200
# A call's arguments as exact JSON text, to tell a call made again (built once: json.dumps with an option
# builds a new encoder at every call).
_encode_key = json.JSONEncoder(ensure_ascii=False).encode


async def dispatch(
    registry: ToolRegistry,
    name: str,
    args: Any,
    ctx: ToolContext,
    *,
    allowed: Collection[str] | None = None,
) -> ToolReply:
    """Run tool ``name`` with ``args`` in ``ctx``; return its redacted, capped text and whether it succeeded.

    Never raises except for cancellation: unknown tools, unavailable tools,
    invalid arguments, a :class:`~tools.errors.ToolError` and crashing handlers
    all produce a failed reply with ``{"error": ...}`` text.

    Args:
        allowed: the tools this caller may use (a session's toolsets, a sandbox's
            allow-list); others are reported as unknown. None allows every tool.
    """
    # Any other tool breaks a run of identical reads or searches (the read-loop check of read_file).
    ctx.file_reads.note_tool_call(name)
    found = _lookup(registry, name, args, allowed)
    if isinstance(found, Rejection):
        return await _finish(registry, name, *_rejected(name, found))
    return await _finish(registry, name, *await _run(name, *found, ctx))


@attrs.frozen
class Rejection:
    """Why :func:`dispatch` fails a call before its handler runs.

    Attributes:
        message: The failure's message (the ``error`` of its text).
        details: What the text shows after the message.
        arguments: Whether the arguments failed the schema (such calls are logged).
    """

    message: str
    details: Mapping[str, Any] = attrs.field(factory=dict)
    arguments: bool = False


def rejection_of(
    registry: ToolRegistry, name: str, args: Any, *, allowed: Collection[str] | None = None
) -> Rejection | None:
    """Why :func:`dispatch` would fail ``name(args)`` before its handler runs, or None when the handler would run.

    A call is rejected for an unknown or unavailable tool, arguments that fail the tool's schema, or
    arguments its own check refuses (:data:`~tools.registry.CheckArgs`). Nothing is recorded or logged:
    :func:`dispatch_rejection` answers the call.
    """
    found = _lookup(registry, name, args, allowed)
    if isinstance(found, Rejection):
        return found
    entry, checked = found
    if entry.check_args is not None:
        try:
            entry.check_args(checked)
        except ToolInputError as exc:
            return Rejection(str(exc), exc.details)
        except Exception:
            # A crashing check is dispatch's to report, as for a crashing handler.
            return None
    return None


async def dispatch_rejection(registry: ToolRegistry, name: str, rejection: Rejection, ctx: ToolContext) -> ToolReply:
    """What :func:`dispatch` answers a call :func:`rejection_of` rejected, recorded and logged as dispatch does.

    It waits only to redact a failure text too long for the event loop.
    """
    ctx.file_reads.note_tool_call(name)
    return await _finish(registry, name, *_rejected(name, rejection))


class RejectionReplies:
    """:func:`rejection_of` and :func:`dispatch_rejection` for one caller (every tool allowed), the last of each
    kept: a script that retries the same rejected call in a loop has it checked and its text made once (the
    schema and the tool's check run, the text repaired, redacted and capped the first time).

    A rejection is kept with its call's arguments as JSON text (``1``, ``1.0`` and ``True`` differ there, as they
    do for the schema), the tool's registry entry, and only when that tool was available: a call whose
    arguments encode the same is rejected again while its tool is registered as it was and still available.
    Only a reply without details is kept: its text depends on its tool's name and its message alone, where
    details equal as values (``1`` and ``True``) may still encode differently.
    """

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._last: tuple[str, Rejection, ToolReply] | None = None
        self._last_rejection: tuple[str, str, ToolEntry, Rejection] | None = None

    def rejection(self, name: str, args: Any) -> Rejection | None:
        """What :func:`rejection_of` answers ``name(args)``, from the last rejection when it is the same call."""
        registry = self._registry
        try:
            text = _encode_key(args)
        except (TypeError, ValueError):
            return rejection_of(registry, name, args)
        entry = registry.get(name)
        last = self._last_rejection
        if entry is None or not registry.is_available(name):
            return rejection_of(registry, name, args)
        if last is not None and last[2] is entry and last[1] == text and last[0] == name:
            return last[3]
        rejection = rejection_of(registry, name, args)
        if rejection is not None:
            self._last_rejection = (name, text, entry, rejection)
        return rejection

    async def reply(self, name: str, rejection: Rejection, ctx: ToolContext) -> ToolReply:
        """What :func:`dispatch_rejection` answers ``name`` rejected with ``rejection``, logged as it logs."""
        last = self._last
        if last is not None and last[0] == name and last[1] == rejection:
            ctx.file_reads.note_tool_call(name)
            _log_rejected(name, rejection)
            return last[2]
        reply = await dispatch_rejection(self._registry, name, rejection, ctx)
        self._last = (name, rejection, reply) if not rejection.details else None
        return reply


    def repeated(self, name: str, args: Any) -> RepeatedRejection | None:
        """How ``name(args)`` would be answered again, were it the call last rejected (checked, and its reply
        kept: :meth:`rejection` then :meth:`reply` answer it from what they keep); None when it is not.

        The answer holds while the registry does not change and the tool's cached check stays valid.
        """
        last, kept = self._last_rejection, self._last
        if last is None or kept is None or last[0] != name or kept[0] != name or kept[1] != last[3]:
            return None
        registry = self._registry
        try:
            text = _encode_key(args)
        except (TypeError, ValueError):
            return None
        if text != last[1] or registry.get(name) is not last[2]:
            return None
        lasts = registry.available_for(name)
        if lasts <= 0:
            return None
        return RepeatedRejection(name, text, last[3], kept[2], registry, registry.generation, time.monotonic() + lasts)


@attrs.frozen(eq=False)
class RepeatedRejection:
    """A rejected call made again unchanged, answered as :class:`RejectionReplies` answers it: the same reply,
    noted and logged as :func:`dispatch_rejection` does. Immutable but for what :meth:`answer` records, so a
    thread may read it and ask :meth:`holds`.

    Attributes:
        name: The tool's name.
        args_text: Its arguments as JSON text (the key :class:`RejectionReplies` compares).
        rejection: Why it is rejected.
        reply: Its reply, before the guardrails' note.
    """

    name: str
    args_text: str
    rejection: Rejection
    reply: ToolReply
    _registry: ToolRegistry
    _generation: int
    _until: float

    def holds(self) -> bool:
        """Whether the call is still answered so (any thread): the registry unchanged, the tool's availability
        still cached as available."""
        return self._registry.generation == self._generation and time.monotonic() < self._until

    def answer(self, ctx: ToolContext) -> ToolReply:
        """Note and log one such call as :meth:`RejectionReplies.reply` does (on the event loop); its reply."""
        ctx.file_reads.note_tool_call(self.name)
        _log_rejected(self.name, self.rejection)
        return self.reply


async def _finish(
    registry: ToolRegistry, name: str, text: str, error: str | None, unsuccessful: bool, images: tuple[str, ...]
) -> ToolReply:
    """The reply of a call: its text and error repaired, redacted and capped."""
    # The one place results are finalised: lone surrogates (a file name, a tool's output) are repaired
    # first, then one redaction pass covers every tool.
    repaired = repair_text(text)
    text = await redact_output_async(repaired, redact_tool_result)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("tool %s -> %d chars: %s", name, len(text), text[:_LOG_PREVIEW_CHARS])
    if error is not None:
        # A failure's text is {"error": error, ...}: when redacting it found nothing (it is returned as it
        # was), the error holds no secret either, and is not scanned a second time.
        error = repair_text(error) if text is repaired else redact_secrets(repair_text(error))
    return ToolReply(registry.cap_result(name, text), error, unsuccessful, images)


def _lookup(
    registry: ToolRegistry, name: str, args: Any, allowed: Collection[str] | None
) -> tuple[ToolEntry, dict[str, Any]] | Rejection:
    """The tool's entry and the arguments its schema checked (and coerced), or why the call is rejected."""
    entry = registry.get(name) if allowed is None or name in allowed else None
    if entry is None or not registry.is_available(name):
        names = registry.names() if allowed is None else sorted(n for n in allowed if n in registry)
        available = ", ".join(n for n in names if registry.is_available(n))
        if entry is None:
            return Rejection(f"Unknown tool: {name}. Available: {available}")
        return Rejection(f"Tool {name} is not available right now. Available: {available}")
    if entry.loosen is not None and isinstance(args, Mapping):
        args = entry.loosen(args)
    try:
        return entry, validate_arguments(name, args, entry.schema.get("parameters", {}))
    except ArgumentValidationError as exc:
        return Rejection(str(exc), arguments=True)


def _rejected(name: str, rejection: Rejection) -> tuple[str, str, bool, tuple[str, ...]]:
    """The failure of a rejected call; arguments that failed the schema are logged."""
    _log_rejected(name, rejection)
    return _failure(rejection.message, **rejection.details)


def _log_rejected(name: str, rejection: Rejection) -> None:
    if rejection.arguments:
        logger.info("tool %s rejected arguments: %s", name, redact_secrets(rejection.message))


async def _run(
    name: str, entry: ToolEntry, checked: dict[str, Any], ctx: ToolContext
) -> tuple[str, str | None, bool, tuple[str, ...]]:
    """The handler's rendered result, or the failure text that replaces it and its message; whether
    the handler reported a failed outcome; the images it asked to show."""
    try:
        if entry.check_args is not None:
            entry.check_args(checked)
        result = await entry.handler(checked, ctx)
        if not isinstance(result, ToolResult):
            raise TypeError(f"{name} returned {type(result).__name__}, not a ToolResult")
        return result.render(), None, result.unsuccessful, result.images
    except ClarifyUnavailable:
        return _failure(CLARIFY_UNAVAILABLE)
    except CapabilityUnavailable as exc:
        return _failure(f"{name} is not available: {exc}")
    except ToolError as exc:
        return _failure(str(exc), **exc.details)
    except Exception as exc:
        # A crashing handler must not take the turn (or the session) down with it.
        # Log the traceback as redacted, valid text: exception messages can carry secrets, and
        # lone surrogates (a file name's undecodable bytes) that no log file can encode.
        trace = repair_text(redact_secrets("".join(traceback.format_exception(exc))))
        logger.error("tool %s crashed:\n%s", name, trace)
        return _failure(f"{name} failed: {type(exc).__name__}: {exc}")


def _failure(message: str, **details: Any) -> tuple[str, str, bool, tuple[str, ...]]:
    return error_text(message, **details), message, False, ()
