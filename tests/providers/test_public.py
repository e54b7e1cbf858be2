"""The package's public surface resolves, and the scripted server stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import providers
import providers.scripted


class TestSurface:
    """Every exported name resolves to the object its module defines."""

    @pytest.mark.parametrize("name", providers.__all__)
    def test_export(self, name):
        assert getattr(providers, name) is not None

    def test_unknown_name(self):
        with pytest.raises(AttributeError):
            providers.NoSuchThing  # noqa: B018

    def test_scripted_exports(self):
        for name in providers.scripted.__all__:
            assert getattr(providers.scripted, name) is not None


class TestLazyImports:
    """Importing the scripted server does not load the SDKs (they take over a second)."""

    def test_scripted_without_sdks(self):
        code = "import sys, providers.scripted; print('openai' in sys.modules, 'anthropic' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
        assert out.stdout.split() == ["False", "False"]
