"""read_file shows secrets redacted; write_file and patch never write the marker over a real secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tools.helpers import model_view
from tools.context import ToolContext
from tools.files import patch_handler, read_file_handler, write_file_handler
from tools.files._markers import MarkerOverSecret, check_no_marker_over_secret, hidden_secrets
from tools.redact import REDACTED, redact_secrets
from tools.registry import Handler
from tools.search import make_search_handler
from tools.testing import LocalToolContext
from tools.search import find_ripgrep

RG = find_ripgrep()
ENGINES = [
    pytest.param(False, id="python"),
    pytest.param(True, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="ripgrep is not installed")),
]
KEY = "sk-proj-0123456789abcdefghijKLMNOP"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq1w2e3r4t5y6\n-----END RSA PRIVATE KEY-----"
ENV = f"# settings\nOPENAI_API_KEY={KEY}\nDEBUG=1\n"


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    return LocalToolContext(home=tmp_path / "home", cwd=tmp_path)


async def call(handler: Handler, ctx: ToolContext, **args: Any) -> dict[str, Any]:
    return await model_view(handler, args, ctx)


class TestReadRedacted:
    """read_file redacts secrets and every line shown keeps its own number."""

    async def test_one_line_secret(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text(ENV)
        result = await call(read_file_handler, ctx, path=".env")
        assert f"1|# settings\n2|OPENAI_API_KEY={REDACTED}\n3|DEBUG=1" == result["content"]
        assert 3 == result["total_lines"] and "notes" not in result

    async def test_private_key_spanning_lines(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A multi-line key becomes one marker; the next line keeps its number and a note says why lines skip."""
        (tmp_path / "id").write_text(f"before\n{PEM}\nafter\n")
        result = await call(read_file_handler, ctx, path="id")
        assert f"1|before\n2|{REDACTED}\n6|after" == result["content"]
        assert 6 == result["total_lines"] and "their numbers are skipped" in result["notes"][0]

    async def test_window_offsets_unchanged(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text(ENV * 3)
        result = await call(read_file_handler, ctx, path=".env", offset=4, limit=2)
        assert f"4|# settings\n5|OPENAI_API_KEY={REDACTED}" == result["content"]
        window = (result["offset"], result["lines_returned"], result["total_lines"], result["next_offset"])
        assert (4, 2, 9, 6) == window

    async def test_central_pass_changes_nothing(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """The lead's one redaction pass over every tool result finds nothing left in read_file's."""
        (tmp_path / "id").write_text(f"x\n{PEM}\n{ENV}")
        raw = (await read_file_handler({"path": "id"}, ctx)).render()
        assert KEY not in raw and "MIIE" not in raw
        assert raw == redact_secrets(raw)


class TestMarkerOverSecret:
    """Writing back what a redacted read showed is refused where it would destroy a secret."""

    async def test_write_back_redacted_read_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text(ENV)
        seen = redact_secrets(ENV)
        result = await call(write_file_handler, ctx, path=".env", content=seen.replace("DEBUG=1", "DEBUG=0"))
        assert result["error"].startswith(f"Refused: {tmp_path / '.env'} holds a secret that you were shown as")
        assert "edit around it with patch" in result["error"] and "ask the user" in result["error"]
        assert ENV == (tmp_path / ".env").read_text()

    async def test_private_key_write_back_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "id").write_text(PEM + "\n")
        result = await call(write_file_handler, ctx, path="id", content=f"{REDACTED}\n# comment\n")
        assert "holds a secret" in result["error"]
        assert PEM + "\n" == (tmp_path / "id").read_text()

    async def test_marker_in_new_file_allowed(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        result = await call(write_file_handler, ctx, path="doc.md", content=f"Secrets show as {REDACTED}.\n")
        assert result["created"] is True

    async def test_existing_marker_text_kept(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A file that already held the marker text (and no secret) can be rewritten with it."""
        (tmp_path / "doc.md").write_text(f"Secrets show as {REDACTED}.\n")
        result = await call(write_file_handler, ctx, path="doc.md", content=f"Secrets show as {REDACTED}!\n")
        assert result["created"] is False
        assert f"Secrets show as {REDACTED}!\n" == (tmp_path / "doc.md").read_text()

    async def test_new_marker_in_a_file_with_secrets_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """With a secret in the file, a marker added anywhere is refused: it cannot be told from a lost secret."""
        (tmp_path / ".env").write_text(ENV)
        result = await call(patch_handler, ctx, path=".env", old_string="DEBUG=1", new_string=f"DEBUG={REDACTED}")
        assert "holds a secret" in result["error"] and f"no {REDACTED} in new_string" in result["error"]
        assert ENV == (tmp_path / ".env").read_text()

    async def test_existing_marker_kept_beside_a_secret(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A patch around a secret keeps the marker text the file already held."""
        (tmp_path / ".env").write_text(f"{ENV}# shown as {REDACTED}\n")
        result = await call(patch_handler, ctx, path=".env", old_string="DEBUG=1", new_string="DEBUG=0")
        assert 1 == result["replacements"]

    async def test_rewrite_without_marker_allowed(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """Removing a secret on purpose (no marker written) is an ordinary edit."""
        (tmp_path / ".env").write_text(ENV)
        assert "error" not in await call(write_file_handler, ctx, path=".env", content="DEBUG=1\n")

    async def test_patch_secret_to_marker_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text(ENV)
        result = await call(patch_handler, ctx, path=".env", old_string=KEY, new_string=REDACTED)
        assert "holds a secret" in result["error"]
        assert ENV == (tmp_path / ".env").read_text()

    async def test_patch_with_redacted_old_string_explains(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """Copying a redacted line into old_string never matches; the error says why and what to do."""
        (tmp_path / ".env").write_text(ENV)
        result = await call(
            patch_handler, ctx, path=".env", old_string=f"OPENAI_API_KEY={REDACTED}", new_string="OPENAI_API_KEY=x"
        )
        assert f"it contains {REDACTED}, which stands for a secret you were not shown" in result["error"]
        assert "Edit around the secret" in result["error"]

    async def test_patch_around_secret_allowed(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text(ENV)
        result = await call(patch_handler, ctx, path=".env", old_string="DEBUG=1", new_string="DEBUG=0")
        assert 1 == result["replacements"]
        assert ENV.replace("DEBUG=1", "DEBUG=0") == (tmp_path / ".env").read_text()


class TestHiddenSecrets:
    """hidden_secrets finds exactly what each marker of a redacted read stands for."""

    def test_values(self) -> None:
        text = f"a={KEY}\nliteral {REDACTED}\nurl=postgres://u:hunter2secret@db/x\n"
        assert frozenset({KEY, "hunter2secret"}) == hidden_secrets(text)

    def test_none(self) -> None:
        assert frozenset() == hidden_secrets(f"plain text with {REDACTED}\n")

    @given(
        st.lists(
            st.sampled_from(
                ["x = 1\n", f"k={KEY}\n", REDACTED, "ghp_" + "a1" * 18, " ", "\n", "Bearer abcdef0123456789xyz"]
            ),
            max_size=12,
        )
    )
    def test_writing_back_the_read_is_always_refused(self, parts: list[str]) -> None:
        """Whatever mix of secrets and literal markers a file holds, writing back its redacted read is refused."""
        text = "".join(parts)
        seen = redact_secrets(text)
        if seen == text:
            assert frozenset() == hidden_secrets(text)
            check_no_marker_over_secret(text, seen, "f")
            return
        assert all(secret and secret != REDACTED and secret in text for secret in hidden_secrets(text))
        with pytest.raises(MarkerOverSecret):
            check_no_marker_over_secret(text, seen, "f")


class TestCutLines:
    """A secret across the cut of a long line is redacted before the cut, so no piece of it shows."""

    async def test_read_file(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "wide.txt").write_text("x" * 1989 + " " + KEY + "\n")
        content = (await call(read_file_handler, ctx, path="wide.txt"))["content"]
        assert KEY[:10] not in content and content.endswith("[line truncated: 2,024 chars]")

    @pytest.mark.parametrize("ripgrep", ENGINES)
    async def test_search_files(self, ctx: LocalToolContext, tmp_path: Path, ripgrep: bool) -> None:
        (tmp_path / "wide.txt").write_text("x" * 494 + " " + KEY + " needle\n")
        result = await call(make_search_handler(RG, use_ripgrep=ripgrep), ctx, pattern="needle")
        [match] = result["matches"]
        assert match["content"].startswith("x" * 494 + " [") and KEY[:10] not in match["content"]


class TestPatchDiff:
    """patch's diff shows the file as read_file would: redacted."""

    async def test_context_lines(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A secret in the context lines of patch's diff is shown redacted, like read_file shows it."""
        (tmp_path / ".env").write_text(ENV)
        result = await call(patch_handler, ctx, path=".env", old_string="DEBUG=1", new_string="DEBUG=0")
        assert f" OPENAI_API_KEY={REDACTED}\n-DEBUG=1\n+DEBUG=0\n" in result["diff"]
        assert KEY not in result["diff"]
