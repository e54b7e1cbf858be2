"""A small JSON-Schema validator for tool arguments.

Covers what tool schemas use: ``type`` (one or a list), ``required``,
``properties``, ``additionalProperties: false``, ``enum``, ``items``,
``minimum`` / ``maximum``, ``minLength`` / ``maxLength``, ``minItems`` /
``maxItems``.  Models often send numbers and booleans as strings, so
unambiguous strings (``"10"``, ``"true"``) are coerced; everything else that
does not fit is reported, all problems at once, in words a model can act on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted
from tools.errors import ArgumentValidationError

__all__ = ["validate_arguments"]

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true/false)",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
_MISSING = object()


def _matches(value: Any, type_name: str) -> bool:
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        is_int = isinstance(value, int) and not isinstance(value, bool)
        return is_int or (isinstance(value, float) and value.is_integer())
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "object":
        return isinstance(value, Mapping)
    if type_name == "null":
        return value is None
    return True  # unknown type keywords are not ours to police


def _coerce(value: Any, type_name: str) -> Any:
    """Return ``value`` converted to ``type_name`` when that is unambiguous, else ``_MISSING``."""
    if type_name == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        return _MISSING
    text = value.strip()
    if type_name == "integer":
        try:
            return int(text)
        except ValueError:
            return _MISSING
    if type_name == "number":
        try:
            return float(text)
        except ValueError:
            return _MISSING
    if type_name == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if type_name in ("array", "object"):
        try:
            # A model's string may hold anything: deep nesting or a huge number is not coerced.
            parsed = loads_untrusted(text)
        except UntrustedJsonError:
            return _MISSING
        return parsed if _matches(parsed, type_name) else _MISSING
    return _MISSING


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _check(value: Any, schema: Mapping[str, Any], where: str, problems: list[str]) -> Any:
    """``value`` checked (and coerced) against ``schema``; ``where`` is its path (``todos[0].content``)."""
    shown = f"'{where}'"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_matches(value, t) for t in allowed):
            for type_name in allowed:
                coerced = _coerce(value, type_name)
                if coerced is not _MISSING:
                    value = coerced
                    break
            else:
                wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in allowed)
                problems.append(f"{shown} must be {wanted}, got {_describe(value)}")
                return value
        elif "integer" in allowed and isinstance(value, float):
            value = int(value)
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(_describe(option) for option in schema["enum"])
        problems.append(f"{shown} must be one of {options}; got {_describe(value)}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{shown} must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{shown} must be <= {schema['maximum']}, got {value}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{shown} must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{shown} must have at most {schema['maxLength']} characters, got {len(value)}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{shown} must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{shown} must have at most {schema['maxItems']} items, got {len(value)}")
        item_schema = schema.get("items")
        if isinstance(item_schema, Mapping):
            value = [_check(item, item_schema, f"{where}[{i}]", problems) for i, item in enumerate(value)]
    if isinstance(value, Mapping) and ("properties" in schema or "required" in schema):
        value = _check_object(value, schema, where, problems)
    return value


def _check_object(
    value: Mapping[str, Any], schema: Mapping[str, Any], where: str, problems: list[str]
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    prefix = f"{where}." if where else ""
    result = dict(value)
    for name in schema.get("required", ()):
        if name not in value or value[name] is None:
            problems.append(f"'{prefix}{name}' is required")
    for name, item in value.items():
        sub = properties.get(name)
        if sub is not None:
            if item is None and name not in schema.get("required", ()):
                # Models send null for "not given"; treat it as absent.
                del result[name]
                continue
            result[name] = _check(item, sub, f"{prefix}{name}", problems)
        elif schema.get("additionalProperties") is False:
            known = ", ".join(properties) or "none"
            problems.append(f"unknown argument '{prefix}{name}' (accepted: {known})")
    return result


def validate_arguments(tool: str, args: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``args`` against a tool's ``parameters`` schema and return them, coerced.

    Raises:
        ArgumentValidationError: listing every problem and the expected arguments.
    """
    if not isinstance(args, Mapping):
        raise ArgumentValidationError(
            f"Invalid arguments for {tool}: arguments must be a JSON object, got {_describe(args)}"
        )
    problems: list[str] = []
    checked = _check_object(args, parameters, "", problems)
    if problems:
        raise ArgumentValidationError(
            f"Invalid arguments for {tool}: " + "; ".join(problems) + f". Expected: {_signature(parameters)}"
        )
    return checked


def _signature(parameters: Mapping[str, Any]) -> str:
    required = set(parameters.get("required", ()))
    parts = []
    for name, sub in parameters.get("properties", {}).items():
        type_name = sub.get("type", "any") if isinstance(sub, Mapping) else "any"
        type_text = "|".join(type_name) if isinstance(type_name, list) else type_name
        parts.append(f"{name}: {type_text}" + ("" if name in required else " (optional)"))
    return "{" + ", ".join(parts) + "}"
