"""The client's pure parts: cutting a markdown stream into blocks, slash commands, usage figures."""

from __future__ import annotations

import pytest

from cli.live_text import LineBuffer, MarkdownBlocks, live_rows
from cli.slash import SlashCommandError, parse_command
from cli.tool_arguments import arguments_text
from cli.tool_output import read_result
from cli.turn_figures import footer_text, usage_text

FENCE = "`" * 3


class TestMarkdownBlocks:
    """A block is committed only once it closes; the open rest is what streams live."""

    def test_paragraphs_close_at_blank_lines(self) -> None:
        """A paragraph stays open across chunks and lines until a blank line."""
        blocks = MarkdownBlocks()
        assert [] == blocks.feed("Some **bo")
        assert [] == blocks.feed("ld** text\nstill the same para")
        assert "Some **bold** text\nstill the same para" == blocks.open_text()
        assert ["Some **bold** text\nstill the same paragraph"] == blocks.feed("graph\n\nnext")
        assert "next" == blocks.open_text()
        assert "next" == blocks.finish()

    def test_code_fence_keeps_blank_lines(self) -> None:
        """Blank lines inside a fence do not close it; the closing fence does."""
        blocks = MarkdownBlocks()
        assert ["intro"] == blocks.feed(f"intro\n{FENCE}python\nx = 1\n\ny = 2\n")
        assert [f"{FENCE}python\nx = 1\n\ny = 2\n{FENCE}"] == blocks.feed(f"{FENCE}\n")
        assert blocks.finish() is None

    def test_heading_is_its_own_block(self) -> None:
        """A heading line closes at once, so the paragraph under it streams on its own."""
        blocks = MarkdownBlocks()
        assert ["## Plan"] == blocks.feed("## Plan\nfirst step")
        assert "first step" == blocks.open_text()

    def test_longer_fence_needs_as_long_a_close(self) -> None:
        """A four-backtick fence is not closed by three backticks."""
        blocks = MarkdownBlocks()
        assert [] == blocks.feed(f"`{FENCE}\n{FENCE}\n")
        assert [f"`{FENCE}\n{FENCE}\n`{FENCE}"] == blocks.feed(f"`{FENCE}\n")


class TestLiveRows:
    """The live region shows the last rows the open text takes on screen."""

    def test_wraps_and_keeps_the_tail(self) -> None:
        """Lines wrap at spaces (a long word is cut at the width) and only the last rows are kept."""
        assert ["efgh", "ij", "xy"] == live_rows("abcdefghij\nxy", 4, 3)
        assert ["three", "", "    x = 1"] == live_rows("one two three\n\n    x = 1", 9, 3)
        assert [] == live_rows("abc", 10, 0)

    def test_line_buffer(self) -> None:
        """Whole lines come out; the partial one waits."""
        lines = LineBuffer()
        assert ["one"] == lines.feed("one\ntw")
        assert "tw" == lines.finish()


class TestSlashCommands:
    """Unknown commands get a suggestion; missing arguments are named."""

    def test_suggestion(self) -> None:
        """A near miss names the command meant."""
        with pytest.raises(SlashCommandError, match="did you mean /compress"):
            parse_command("/compres")

    def test_missing_argument(self) -> None:
        """/steer without text and /show without a number are errors, not requests."""
        with pytest.raises(SlashCommandError, match="/steer needs TEXT"):
            parse_command("/steer")
        with pytest.raises(SlashCommandError, match="tool's number"):
            parse_command("/show x")
        assert ("/show", "2") == parse_command("/show 2")


class TestFigures:
    """Usage and footer texts: a model without a price shows n/a, never 0."""

    def test_usage_with_and_without_price(self) -> None:
        """Tokens, cache hits, context against the window, and the cost or n/a."""
        usage = {"prompt_tokens": 1000, "completion_tokens": 50, "cache_read_tokens": 250,
                 "context_tokens": 32000, "context_window": 128000, "cost_usd": 0.0123}
        text = usage_text(usage)
        assert "cache    read 250 (25% of prompt)" in text
        assert "context  32000 of 128000 (25%)" in text
        assert "cost     $0.0123" in text
        assert "cost     n/a" in usage_text({**usage, "cost_usd": None})

    def test_footer_is_the_turn_difference(self) -> None:
        """The footer gives the turn's own figures, and n/a when the turn's cost is unknown."""
        finished = {"prompt_tokens": 250, "completion_tokens": 30, "cost_usd": 0.005, "duration_seconds": 2.5}
        assert "250 in · 30 out · $0.0050 · 2.5s" == footer_text(finished)
        assert "250 in · 30 out · n/a · 2.5s" == footer_text({**finished, "cost_usd": None})


class TestToolResult:
    """A tool result's output lines and exit code, whole or cut short."""

    def test_cut_preview(self) -> None:
        """A preview cut in the middle of the JSON still yields its first lines."""
        result = read_result('{"output": "a\\nb\\nc", "exit_code": 2, "error": "boom"')
        assert (["a", "b", "c"], 2) == (result.lines, result.exit_code)


class TestArgumentsText:
    """A call's arguments read as words, from whole or cut JSON."""

    def test_main_argument_then_the_rest(self) -> None:
        """The argument that says what the call does comes first, the others as key=value."""
        assert "ls -la  timeout=60  background=true" == arguments_text(
            "terminal", '{"command": "ls -la", "timeout": 60, "background": true}', 80
        )
        assert "count files | list dirs" == arguments_text(
            "delegate_task", '{"tasks": [{"goal": "count files"}, {"goal": "list dirs"}]}', 80
        )

    def test_cut_preview(self) -> None:
        """A preview cut inside a value keeps what it has (marked cut); cut inside a key drops that field."""
        assert 'sleep 3; echo "hi…' == arguments_text("terminal", '{"command": "sleep 3; echo \\"hi…', 80)
        assert "ls" == arguments_text("terminal", '{"command": "ls", "timeo…', 80)

    def test_script_by_its_first_line(self) -> None:
        """execute_code reads by its script's first line."""
        assert "import os …" == arguments_text("execute_code", '{"code": "\\nimport os\\nprint(1)"}', 80)

    def test_fits_the_width(self) -> None:
        """Longer than the room left: cut, the cut marked."""
        assert "abcdefghi…" == arguments_text("terminal", '{"command": "abcdefghijklmnop"}', 10)


class TestEnding:
    """A command's ending reads as its exit code, or as the signal that ended it."""

    def test_endings(self) -> None:
        """0 and 2 are exit codes; -15 (a process's status) and 143 (a shell's) are SIGTERM."""
        endings = [read_result(f'{{"output": "", "exit_code": {code}}}').ending() for code in (0, 2, -15, 143, -99)]
        assert ["exit 0", "exit 2", "killed by SIGTERM", "killed by SIGTERM", "killed by signal 99"] == endings
