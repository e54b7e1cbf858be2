"""The session libraries' public names stay importable."""

from __future__ import annotations

import importlib

import pytest


class TestPublicSurface:
    """Every name a package exports in __all__ exists."""

    @pytest.mark.parametrize("module", ["actors.session.compression", "actors.session.prompt"])
    def test_all_resolves(self, module: str) -> None:
        package = importlib.import_module(module)
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert missing == []
        assert len(package.__all__) == len(set(package.__all__))
