"""Configuration section ``pricing``: a model's price per million tokens, by model id.

An entry prices a model the built-in table (``providers.pricing``) does not know, or
replaces a list price that changed::

    pricing:
      my-org/finetuned-4.1: {input: 3.0, output: 12.0, cache_read: 0.75}

Unset cache prices are billed at the input price.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import number

__all__ = ["ModelPrice"]


@attrs.frozen
class ModelPrice:
    """US dollars per million tokens: fresh input, output, and cache reads and writes."""

    input: float = attrs.field(validator=number(ge=0))
    output: float = attrs.field(validator=number(ge=0))
    cache_read: float | None = attrs.field(default=None, validator=v.optional(number(ge=0)))
    cache_write: float | None = attrs.field(default=None, validator=v.optional(number(ge=0)))
