"""Replies for messaging platforms: dialects, splitting at each platform's limit, MEDIA tags."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from markup import (
    DISCORD_LIMIT,
    TELEGRAM_LIMIT,
    discord_chunks,
    extract_media,
    split_markdown,
    telegram_chunks,
    to_discord,
    to_telegram_html,
    utf16_length,
)

#: The tags Telegram's HTML parse mode knows (the converter must emit no other).
TELEGRAM_TAGS = {"b", "i", "s", "u", "code", "pre", "a", "tg-spoiler", "blockquote"}


class _TagChecker(HTMLParser):
    """Fails on an unknown or unbalanced tag; collects the text as Telegram would show it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in TELEGRAM_TAGS, tag
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open.pop() == tag, f"unbalanced </{tag}>"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _shown(html: str) -> str:
    checker = _TagChecker()
    checker.feed(html)
    checker.close()
    assert checker.open == [], f"unclosed {checker.open}"
    return "".join(checker.text)


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _long_reply() -> str:
    """About 10,000 characters: paragraphs, a long code block, emoji and CJK, a list."""
    paragraphs = [f"Paragraph {n}: **bold {n}** and `code {n}` with 🙂 emoji and 中文字符 text. " * 6 for n in range(12)]
    code = "\n".join(f"    value_{n} = compute({n}) + '<tag> & more'" for n in range(150))
    parts = [*paragraphs[:6], f"```python\n{code}\n```", "- one\n- two", *paragraphs[6:]]
    return "\n\n".join(parts)


class TestSplitting:
    """Pieces within the limit, code blocks closed and reopened, nothing lost."""

    def test_a_10000_character_reply_for_telegram(self) -> None:
        reply = _long_reply()
        assert len(reply) > 10_000
        chunks = telegram_chunks(reply)
        assert len(chunks) >= 3
        assert all(utf16_length(chunk) <= TELEGRAM_LIMIT for chunk in chunks)
        shown = [_shown(chunk) for chunk in chunks]
        # Every piece of the code is inside a <pre> of its own piece; the text comes back whole.
        assert sum(chunk.count('<pre><code class="language-python">') for chunk in chunks) >= 2
        assert _squeezed("".join(shown)) == _squeezed(_shown(to_telegram_html(reply)))

    def test_a_10000_character_reply_for_discord(self) -> None:
        reply = _long_reply()
        chunks = discord_chunks(reply)
        assert len(chunks) >= 5
        assert all(len(chunk) <= DISCORD_LIMIT for chunk in chunks)
        for chunk in chunks:
            assert chunk.count("```") % 2 == 0, chunk[:200]
        joined = "".join(chunks).replace("```python", "").replace("```", "")
        assert _squeezed(joined) == _squeezed(reply.replace("```python", "").replace("```", ""))

    def test_prefers_paragraphs_then_lines_then_spaces(self) -> None:
        text = "a" * 30 + "\n\n" + "b" * 20 + "\n" + "c" * 10 + " " + "d" * 30
        assert split_markdown(text, 40) == ["a" * 30, "b" * 20, "c" * 10, "d" * 30]
        assert split_markdown("a " * 10 + "\n\n" + "b" * 10, 40) == ["a " * 10 + "\n\n" + "b" * 10]

    def test_a_word_longer_than_a_message_is_cut(self) -> None:
        assert split_markdown("x" * 50, 20) == ["x" * 20, "x" * 20, "x" * 10]

    def test_utf16_units_and_surrogates(self) -> None:
        emoji = "🙂" * 3000  # 6,000 UTF-16 units
        chunks = telegram_chunks(emoji)
        assert [utf16_length(chunk) for chunk in chunks] == [4096, 1904]
        assert "".join(chunks) == emoji

    def test_a_code_line_longer_than_a_message(self) -> None:
        chunks = split_markdown("```\n" + "y" * 100 + "\n```", 40)
        assert all(len(chunk) <= 40 and chunk.startswith("```\n") and chunk.endswith("```") for chunk in chunks)
        assert "".join(chunk[4:-4] for chunk in chunks).replace("\n", "") == "y" * 100

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.sampled_from(["word ", "**b** ", "`c` ", "\n", "\n\n", "\n```py\n", "\n```\n", "🙂", "中", "<&>", "    x = 1\n"]), max_size=400), st.integers(40, 300))
    def test_any_reply_splits_within_the_limit_and_loses_nothing(self, parts: list[str], limit: int) -> None:
        reply = "".join(parts)
        pieces = split_markdown(reply, limit, utf16_length)
        assert all(utf16_length(piece) <= limit for piece in pieces)
        assert all(piece.strip() for piece in pieces)
        fence_free = lambda text: _squeezed(re.sub(r"^ {0,3}(`{3,}|~{3,}).*$", "", text, flags=re.M))  # noqa: E731
        assert fence_free("\n".join(pieces)) == fence_free(reply)
        for chunk in telegram_chunks(reply):
            assert utf16_length(chunk) <= TELEGRAM_LIMIT
            _shown(chunk)


class TestTelegramHtml:
    """Markdown becomes Telegram's HTML; everything else is escaped."""

    def test_inline_and_blocks(self) -> None:
        html = to_telegram_html(
            "## Plan\n**bold** *it* ~~gone~~ ||secret|| `a<b>` [site](https://x.org/?a=1&b=2)\n- item\n> quoted\n"
            "```bash\necho '<hi>' && exit\n```"
        )
        assert "<b>Plan</b>" in html and "<b>bold</b>" in html and "<i>it</i>" in html and "<s>gone</s>" in html
        assert "<tg-spoiler>secret</tg-spoiler>" in html and "<code>a&lt;b&gt;</code>" in html
        assert '<a href="https://x.org/?a=1&amp;b=2">site</a>' in html and "• item" in html
        assert "<blockquote>quoted</blockquote>" in html
        assert '<pre><code class="language-bash">echo \'&lt;hi&gt;\' &amp;&amp; exit</code></pre>' in html
        _shown(html)

    def test_hostile_markup_stays_text(self) -> None:
        html = to_telegram_html('</pre><script>x</script> **open [a](javascript:alert(1)) <b>\n```"><img>\n</code>\n```')
        shown = _shown(html)
        assert "<script>" in shown and "javascript:alert(1)" in shown  # shown as text, never as markup
        assert "href=\"javascript" not in html

    def test_an_unclosed_marker_is_literal(self) -> None:
        assert _shown(to_telegram_html("2 ** 10 and a_b_c")) == "2 ** 10 and a_b_c"


class TestDiscord:
    """Discord's own dialect: deep headings bold, tables in code blocks, the rest untouched."""

    def test_adaptations(self) -> None:
        out = to_discord("# Top\n#### Deep\n| a | b |\n|---|---|\n| 1 | 2 |\n**bold** stays")
        assert out.startswith("# Top\n**Deep**\n```\n| a | b |")
        assert "| 1 | 2 |\n```\n**bold** stays" in out


class TestMedia:
    """MEDIA:/path tags come out of the reply as attachments."""

    def test_tags_are_taken_out(self) -> None:
        text, paths = extract_media("Here is the chart: MEDIA:/w/chart.png.\nAlso MEDIA: /w/report.pdf\nMEDIA:/w/chart.png")
        assert paths == ["/w/chart.png", "/w/report.pdf"]
        assert text == "Here is the chart:\nAlso"

    def test_what_is_not_a_tag(self) -> None:
        for text in ("MEDIA:relative/path", "xMEDIA:/a", "`code`"):
            assert extract_media(text) == (text, [])
