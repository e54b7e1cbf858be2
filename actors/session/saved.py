"""What a session saves for a restarted daemon, as typed values, and the converter to the store's JSON.

The store keeps the state as one JSON object per session; :data:`SAVED` turns a :class:`SavedState`
into that object and back. The object's keys, their order and their values are the ones the daemon
has always written, so states saved before this module existed load, and a state saved now is the
same text an older daemon wrote. A key missing or null (a state from an older daemon) takes its
default; a value of the wrong type makes the whole state unusable (:class:`SavedStateError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import attrs
import cattrs
import cattrs.gen

from actors.session.options import SessionOptions
from messages.raw_json import RawJson
from providers.types import Usage

__all__ = [
    "SAVED", "SavedProcess", "SavedShell", "SavedState", "SavedStateError", "ToolDefinitions", "dump_saved", "load_saved",
    "saved_cost",
]

#: The frozen tool list's definitions: encoded once when saved, a list when read back.
ToolDefinitions: TypeAlias = RawJson | list[dict[str, Any]]


class SavedStateError(ValueError):
    """A saved state that cannot be read (a value of the wrong type); the text says which."""


def saved_cost(value: object) -> float | None:
    """A stored cost, or None when absent or not a usable number (an older or damaged state)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        return None
    return float(value)


@attrs.frozen
class SavedShell:
    """The shell's working directory and environment, without the values of the variables loaded skills
    let in (secrets, more often than not: they are read from the daemon's environment again)."""

    cwd: str | None = None
    env: dict[str, str] = attrs.Factory(dict)
    passthrough: list[str] = attrs.Factory(list)


@attrs.frozen
class SavedProcess:
    """A background process as it was at the save: a restored session says which died with the daemon."""

    id: str
    command: str = ""
    running: bool = False


@attrs.frozen
class SavedState:
    """A session's state as saved after each turn (see ``actors.session.state``).

    Attributes:
        options: its settings (None: a state that has none; the session's row supplies the cwd).
        tools / tool_names: the frozen tool list (empty: freeze it anew).
        shell / todo: the terminal's directory and environment, the todo list's items.
        event_seq: the event number its hub had reached.
        turns / usage / api_calls / cost_usd: its counters over its life.
        compression: the last compression's summary and count.
        approvals: the commands allowed for this session.
        processes: its background processes.
    """

    options: SessionOptions | None = None
    tools: ToolDefinitions = attrs.Factory(list)
    tool_names: list[str] = attrs.Factory(list)
    shell: SavedShell = SavedShell()
    todo: list[dict[str, Any]] = attrs.Factory(list)
    event_seq: int = 0
    turns: int = 0
    usage: Usage = Usage()
    api_calls: int = 0
    cost_usd: float | None = attrs.field(default=None, converter=saved_cost)
    compression: dict[str, Any] = attrs.Factory(dict)
    approvals: list[str] = attrs.Factory(list)
    processes: list[SavedProcess] = attrs.Factory(list)


def _structure_state(value: object, _: object) -> SavedState:
    if not isinstance(value, Mapping):
        raise SavedStateError(f"a saved state must be an object, got {type(value).__name__}")
    # Keys a state from an older daemon lacks, or holds as null, take their defaults.
    present = {key: item for key, item in value.items() if item is not None}
    return _structure_fields(present, SavedState)


_StructureFields = Callable[[Mapping[str, Any], type[SavedState]], SavedState]


def _make_converter() -> tuple[cattrs.Converter, _StructureFields]:
    # The cost goes through its attrs converter (a damaged cost reads as unknown, not as an error).
    converter = cattrs.Converter(prefer_attrib_converters=True)
    converter.register_unstructure_hook(SessionOptions, SessionOptions.to_state)
    converter.register_structure_hook(SessionOptions, lambda value, _: SessionOptions.from_state(value))
    converter.register_unstructure_hook(RawJson, lambda raw: raw)
    converter.register_structure_hook(ToolDefinitions, lambda value, _: converter.structure(value, list[dict[str, Any]]))
    structure_fields = cattrs.gen.make_dict_structure_fn(SavedState, converter)
    converter.register_structure_hook(SavedState, _structure_state)
    return converter, structure_fields


SAVED, _structure_fields = _make_converter()
"""The converter of :class:`SavedState` to and from the store's JSON object."""


def load_saved(value: Mapping[str, Any]) -> SavedState:
    """The state the store's object describes.

    Raises:
        SavedStateError: a value of the wrong type; the text names where.
    """
    try:
        return SAVED.structure(value, SavedState)
    except cattrs.BaseValidationError as exc:
        problems = "; ".join(cattrs.transform_error(exc, path="state"))
        raise SavedStateError(f"saved state unreadable: {problems}") from None
    except (TypeError, ValueError) as exc:
        raise SavedStateError(f"saved state unreadable: {exc}") from None


def dump_saved(state: SavedState) -> dict[str, Any]:
    """The store's object of ``state`` (the keys in the order the daemon has always written them)."""
    result: dict[str, Any] = SAVED.unstructure(state)
    return result
