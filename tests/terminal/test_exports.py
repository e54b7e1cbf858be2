"""bash's ``export -p`` read back: every value bash can hold, in each locale and mode, and hostile text."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.terminal._exports import parse_exports
from tools.terminal._shell import parse_state

names = st.from_regex(rb"\AHX_[A-Za-z0-9_]{1,10}\Z")
# Any bytes an environment can hold: everything but NUL, invalid UTF-8 and control characters included.
values = st.binary(max_size=40).map(lambda value: value.replace(b"\0", b""))


def bash_listing(env: dict[bytes, bytes], locale: bytes, *, posix: bool = False) -> bytes:
    """What a real bash prints for ``export -p`` with ``env`` exported, in ``locale``."""
    script = ("set -o posix; " if posix else "") + "export -p"
    full = {b"PATH": b"/usr/bin:/bin", b"LC_ALL": locale, **env}
    return subprocess.run([b"bash", b"-c", script.encode()], env=full, capture_output=True, check=True).stdout


class TestRoundTrip:
    """Whatever bash quotes, reading it gives back the bytes it was given."""

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(env=st.dictionaries(names, values, min_size=1, max_size=5), locale=st.sampled_from([b"C", b"C.UTF-8"]),
           posix=st.booleans())
    def test_values_come_back(self, env: dict[bytes, bytes], locale: bytes, posix: bool) -> None:
        exported = parse_exports(bash_listing(env, locale, posix=posix))
        assert exported is not None
        assert {name: exported.get(name) for name in env} == env

    def test_the_quotings_bash_uses(self) -> None:
        env = {b"HX_PLAIN": b'q"$`\\ x', b"HX_ANSI": b"a\nb\t\x01\x7f\xff'", b"HX_EMPTY": b"", b"HX_UTF8": "é ü".encode()}
        listing = bash_listing(env, b"C.UTF-8")
        assert b"HX_ANSI=$'" in listing and b'HX_PLAIN="' in listing
        exported = parse_exports(listing)
        assert exported is not None
        assert {name: exported[name] for name in env} == env


class TestWhatIsLeftOut:
    """What bash lists but never hands to a child's environment."""

    def test_arrays_and_variables_without_a_value(self) -> None:
        listing = (
            b'declare -x KEPT="1"\n'
            b'declare -ax LIST=([0]="a" [1]="b")\n'
            b'declare -Ax MAP=([k]="v" )\n'
            b"declare -x NO_VALUE\n"
            b'declare -rx READ_ONLY="2"\n'
            b'export POSIX="3"\n'
        )
        assert parse_exports(listing) == {b"KEPT": b"1", b"READ_ONLY": b"2", b"POSIX": b"3"}

    def test_empty_listing_is_an_empty_environment(self) -> None:
        assert parse_exports(b"") == {}


class TestHostileText:
    """A command can write anything to the state pipe: the answer is None, never an exception."""

    @given(st.binary(max_size=200))
    def test_never_raises(self, text: bytes) -> None:
        result = parse_exports(text)
        assert result is None or isinstance(result, dict)

    @pytest.mark.parametrize(
        "listing",
        [
            b'declare -x A="1"',  # cut before its newline
            b'declare -x A="1\n',  # cut inside the quotes
            b"declare -x A=$'\\U110000'\n",  # no such character
            b'declare -x A="1"\nrm -rf /\n',
            b'declare -x A=1\n',  # bash always quotes
            b'declare -x 1A="1"\n',
        ],
    )
    def test_not_bash_output_is_refused(self, listing: bytes) -> None:
        assert parse_exports(listing) is None


class TestParseState:
    """The trap's whole dump: cwd, NUL, listing, NUL."""

    def test_whole_dump(self) -> None:
        state = parse_state(b'/tmp/x\0declare -x A="1"\ndeclare -x PWD="/tmp/x"\ndeclare -x SHLVL="1"\n\0')
        assert state is not None
        assert (state.cwd, state.env) == ("/tmp/x", {"A": "1"})

    @pytest.mark.parametrize(
        "data",
        [
            b"",
            b"/tmp/x",
            b'not a path\n/tmp/x\0declare -x A="1"\n\0',  # written before the trap's dump
            b'/tmp/x\0declare -x A="1"\n',  # the listing's closing NUL missing: cut short
            b'/tmp/x\0declare -x A="1\0"\n\0',  # a NUL no value can hold
        ],
    )
    def test_incomplete_or_forged_dump_is_missing(self, data: bytes) -> None:
        assert parse_state(data) is None
