"""ANSI cleaning and the two output buffers."""

from __future__ import annotations

from tools.ansi import clean_terminal_output, strip_ansi
from tools.background import RollingBuffer
from tools.terminal import HeadTailBuffer


class TestAnsi:
    """Escape sequences vanish; text and meaningful whitespace stay."""

    def test_colours_cursor_and_titles(self) -> None:
        raw = "\x1b[1;32mok\x1b[0m \x1b[2K\x1b[1Gdone\x1b]0;window title\x07!\x1b(B"
        assert strip_ansi(raw) == "ok done!"

    def test_plain_text_untouched(self) -> None:
        assert strip_ansi("a [1m] b") == "a [1m] b"

    def test_carriage_return_progress_keeps_last_state(self) -> None:
        assert clean_terminal_output("0%\r50%\r100%\nnext\r\n") == "100%\nnext\n"

    def test_control_characters_dropped_tabs_kept(self) -> None:
        assert clean_terminal_output("a\x07\tb\x08c") == "a\tbc"


class TestHeadTailBuffer:
    """Once over the cap, the first 40% and the last 60% are kept with a notice."""

    def test_small_output_whole(self) -> None:
        buffer = HeadTailBuffer(1000)
        buffer.append(b"hello ")
        buffer.append(b"world")
        assert buffer.render() == "hello world"
        assert buffer.omitted_bytes == 0

    def test_cap_keeps_head_and_tail(self) -> None:
        buffer = HeadTailBuffer(100)
        for i in range(1000):
            buffer.append(f"{i:04d}\n".encode())
        text = buffer.render()
        assert text.startswith("0000\n0001\n")
        assert text.endswith("0998\n0999\n")
        assert buffer.omitted_bytes == 5000 - 100
        assert "[... 4,900 bytes of output omitted ...]" in text

    def test_split_multibyte_character_dropped_cleanly(self) -> None:
        buffer = HeadTailBuffer(10)
        buffer.append(("é" * 50).encode())
        text = buffer.render()
        assert "\ufffd" not in text
        assert text.startswith("éé") and text.endswith("éé")


class TestRollingBuffer:
    """The newest characters are kept; logs page over retained lines."""

    def test_rolls_over(self) -> None:
        buffer = RollingBuffer(10)
        for chunk in ["abc", "defg", "hijkl", "mn"]:
            buffer.append(chunk)
        assert buffer.text() == "efghijklmn"
        assert buffer.total_chars == 14 and buffer.dropped_chars == 4
        buffer.append("x" * 25)
        assert buffer.text() == "x" * 10

    def test_lines_default_last_and_offset(self) -> None:
        buffer = RollingBuffer(10_000)
        buffer.append("".join(f"line{i}\n" for i in range(300)))
        last = buffer.lines(None, 200)
        assert (last.first_line, last.lines_returned, last.total_lines) == (100, 200, 300)
        assert last.text.splitlines()[0] == "line100"
        page = buffer.lines(5, 3)
        assert page.text == "line5\nline6\nline7"
        assert buffer.tail(6) == "line299\n"[-6:]
