"""The classifier never fails, whatever shape an error arrives in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from providers.errors import ProviderStatusError
from providers.recovery import ClassifiedError, classify

from .strategies import json_values

SECRET = "sk-ant-api03-SECRETSECRETSECRET"


class TestClassifierRobustness:
    """Random statuses, bodies, headers and error types classify without raising and without leaking keys."""

    @given(
        status=st.one_of(st.none(), st.integers(-5, 1000)),
        body=st.one_of(json_values, st.text(), st.binary()),
        headers=st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=4),
        error_type=st.one_of(st.none(), st.text(max_size=30)),
        approx=st.integers(0, 10**7),
        window=st.one_of(st.none(), st.integers(0, 10**7)),
    )
    def test_never_raises(self, status: int | None, body: object, headers: dict[str, str], error_type: str | None, approx: int, window: int | None) -> None:
        exc = ProviderStatusError(f"failure with key {SECRET}", status_code=status, body=body, headers=headers, error_type=error_type)
        result = classify(exc, approx_tokens=approx, context_length=window)
        assert isinstance(result, ClassifiedError)
        assert "SECRETSECRET" not in result.message

    @given(st.text(max_size=300))
    def test_any_message(self, message: str) -> None:
        assert isinstance(classify(RuntimeError(message)), ClassifiedError)

    def test_cyclic_cause_chain(self) -> None:
        a, b = RuntimeError("a"), RuntimeError("b")
        a.__cause__, b.__cause__ = b, a
        assert classify(a).reason.value == "unknown"
