"""Property tests: the output buffers and the shell-state round trip through real bash."""

from __future__ import annotations

from tests.jail.fixtures import Jails

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.terminal.helpers import FAST
from tools.background import RollingBuffer
from tools.terminal import HeadTailBuffer, build_shell_env, run_foreground

chunks = st.lists(st.binary(max_size=300), max_size=40)
# Exported values: any text without NUL (which no environment variable can hold).
env_values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
env_names = st.from_regex(r"\AHX_[A-Za-z0-9_]{1,10}\Z")


class TestBufferProperties:
    """Whatever the chunking, the buffers keep exactly the promised parts."""

    @given(chunks, st.integers(min_value=10, max_value=2000))
    def test_head_tail_keeps_ends(self, parts: list[bytes], cap: int) -> None:
        buffer = HeadTailBuffer(cap)
        for part in parts:
            buffer.append(part)
        whole = b"".join(parts)
        head_cap = int(cap * 0.4)
        kept_head, kept_tail = whole[:head_cap], whole[head_cap:][-(cap - head_cap) :]
        assert buffer.total_bytes == len(whole)
        assert buffer.omitted_bytes == max(0, len(whole) - cap)
        if len(whole) <= cap:
            assert buffer.render() == whole.decode("utf-8", errors="replace")
        else:
            assert bytes(buffer._head) == kept_head and bytes(buffer._tail) == kept_tail

    @given(st.lists(st.text(max_size=50), max_size=40), st.integers(min_value=1, max_value=300))
    def test_rolling_keeps_suffix(self, parts: list[str], cap: int) -> None:
        buffer = RollingBuffer(cap)
        for part in parts:
            buffer.append(part)
        whole = "".join(parts)
        assert buffer.text() == whole[-cap:]
        assert buffer.dropped_chars == max(0, len(whole) - cap)


class TestShellStateRoundTrip:
    """Any exported value survives the capture by the EXIT trap unchanged."""

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.dictionaries(env_names, env_values, min_size=1, max_size=4))
    async def test_exported_values_round_trip(self, jails: Jails, tmp_path: Path, values: dict[str, str]) -> None:
        env = build_shell_env(os.environ) | values
        result = await run_foreground(jail=jails.jail(tmp_path), command="true", cwd=str(tmp_path), env=env, config=FAST)
        assert result.shell is not None
        assert {name: result.shell.env.get(name) for name in values} == values
        assert result.shell.cwd == str(tmp_path)
