"""Secret redaction: the table of credential kinds, the near misses, and the JSON form of tool results."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import secret_samples
from tests.tools.helpers import scans_for_secrets
from tests.tools.secret_samples import NEAR_MISSES, SAMPLES, Sample
from tools.redact import REDACTED, RepeatRedaction, redact_secrets, redact_tool_result

# Where the marker goes: the secret alone, so the text stays readable.
PLACEMENT = [
    ("API_KEY=abcdef123456", "API_KEY=[REDACTED]"),
    ("export DB_PASSWORD='hunter2!x'", "export DB_PASSWORD='[REDACTED]'"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
    ('curl -H "Authorization: Bearer tok_0123456789abcdef"', 'curl -H "Authorization: Bearer [REDACTED]"'),
    ("postgres://user:s3cr3t-pass@db.example.com:5432/app", "postgres://user:[REDACTED]@db.example.com:5432/app"),
    ("https://user:hunter2@github.com/org/repo.git", "https://user:[REDACTED]@github.com/org/repo.git"),
    ("Server=db;Uid=sa;Pwd=P@ssw0rd!;", "Server=db;Uid=sa;Pwd=[REDACTED];"),
    ("Server=db;User Id=sa;Password=P@ssw0rd!;", "Server=db;User Id=sa;Password=[REDACTED];"),
    ("DefaultEndpointsProtocol=https;AccountKey=abc+def/ghi==;", "DefaultEndpointsProtocol=https;AccountKey=[REDACTED];"),
    ('{"api_key": "abc123xyz", "region": "eu"}', '{"api_key": "[REDACTED]", "region": "eu"}'),
    ("  OPENAI_API_KEY: sk-proj-Ab3dEf9hIjKlMnOpQrStUvWx1234", "  OPENAI_API_KEY: [REDACTED]"),
    ("X-Api-Key: 0123456789abcdef", "X-Api-Key: [REDACTED]"),
    ("GET /cb?code=1&access_token=ya-tok-123&x=1", "GET /cb?code=1&access_token=[REDACTED]&x=1"),
    ("curl -u admin:hunter2 https://x", "curl -u admin:[REDACTED] https://x"),
    ("https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX", "https://hooks.slack.com/services/[REDACTED]"),
    ("password = 'correct horse battery'", "password = '[REDACTED]'"),
    ('curl -H "Authorization: Bearer $GITHUB_TOKEN" -u me:${PASS}', 'curl -H "Authorization: Bearer $GITHUB_TOKEN" -u me:${PASS}'),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n(cut off", REDACTED),
    ("QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\nYWJjZGVmZ2hpamtsbW5vcA==\n-----END RSA PRIVATE KEY-----\nnext", "[REDACTED]\nnext"),
]


class TestRedactSecrets:
    """Every kind of credential is replaced; look-alikes stay as they are."""

    @pytest.mark.parametrize("sample", SAMPLES, ids=[s.kind for s in SAMPLES])
    def test_every_kind_is_redacted_in_place(self, sample: Sample) -> None:
        assert sample.redacted == redact_secrets(sample.line)

    @pytest.mark.parametrize("text", NEAR_MISSES)
    def test_near_miss_is_kept(self, text: str) -> None:
        assert text == redact_secrets(text)

    @pytest.mark.parametrize(("text", "expected"), PLACEMENT)
    def test_marker_replaces_only_the_secret(self, text: str, expected: str) -> None:
        assert expected == redact_secrets(text)

    def test_all_kinds_in_one_file(self) -> None:
        text = "\n".join(sample.line for sample in SAMPLES)
        redacted = redact_secrets(text)
        assert "\n".join(sample.redacted for sample in SAMPLES) == redacted
        assert redacted == redact_secrets(redacted)

    def test_text_outside_ascii_keeps_its_offsets(self) -> None:
        """U+0130 lower-cases to two characters; the case-insensitive rules must not shift."""
        assert "İİ API_KEY=[REDACTED] İ" == redact_secrets("İİ API_KEY=abc123def İ")


class TestRedactToolResult:
    """A tool's JSON result is redacted string by string; a clean one comes back untouched."""

    def test_escaped_json_inside_a_result(self) -> None:
        content = 'config:\n{"api_key": "abc123xyz", "password": "pw-9876"}\nAPI_KEY=abcdef123456\n'
        result = json.loads(redact_tool_result(json.dumps({"content": content, "path": "/w/c.json"})))
        assert 'config:\n{"api_key": "[REDACTED]", "password": "[REDACTED]"}\nAPI_KEY=[REDACTED]\n' == result["content"]
        assert "/w/c.json" == result["path"]

    def test_secret_named_keys_of_the_result_itself(self) -> None:
        result = json.loads(redact_tool_result(json.dumps({"token": "abc123", "client_secret": "s3cret", "tokens": 12})))
        assert {"token": REDACTED, "client_secret": REDACTED, "tokens": 12} == result

    def test_clean_result_is_returned_as_is(self) -> None:
        result = json.dumps({"output": "key points: the token count is small", "exit_code": 0}, ensure_ascii=True)
        assert redact_tool_result(result) is result

    def test_text_result_is_redacted_as_text(self) -> None:
        assert "done. API_KEY=[REDACTED]" == redact_tool_result("done. API_KEY=abcdef123456")

    def test_too_deep_for_the_decoder_falls_back_to_text(self) -> None:
        result = "[" * 100_000 + '"sk-proj-Ab3dEf9hIjKlMnOpQrStUvWx1234"'
        assert "[" * 100_000 + '"[REDACTED]"' == redact_tool_result(result)

    def test_each_string_is_redacted_on_its_own(self) -> None:
        """A key cut at its end stops at its string; one cut at its start starts at its string."""
        tail = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n-----END RSA PRIVATE KEY-----\nnext"
        head = "-----BEGIN RSA PRIVATE KEY-----\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldY"
        value = ["a", tail, head, "kept", "API_KEY=abcdef1234"]
        expected = ["a", "[REDACTED]\nnext", REDACTED, "kept", "API_KEY=[REDACTED]"]
        assert expected == json.loads(redact_tool_result(json.dumps(value)))

    def test_many_strings(self) -> None:
        rows = [{"line": i, "text": f"token = 'v{i}x{i}'" if i % 3 == 0 else f"token_count = {i}"} for i in range(3000)]
        redacted = json.loads(redact_tool_result(json.dumps(rows)))
        expected = [{"line": i, "text": "token = '[REDACTED]'" if i % 3 == 0 else f"token_count = {i}"} for i in range(3000)]
        assert expected == redacted

    def test_nested_lists_keep_their_order(self) -> None:
        value = {"rows": [["a", "API_KEY=abcdef123456"], ["b", {"password": "hunter22"}], "c"]}
        expected = {"rows": [["a", "API_KEY=[REDACTED]"], ["b", {"password": REDACTED}], "c"]}
        assert expected == json.loads(redact_tool_result(json.dumps(value)))


def _embedded(prefix: str, sample: Sample, suffix: str) -> str:
    return f"{prefix}\n{sample.line}\n{suffix}"


class TestRedactionProperties:
    """For any text: no exception, bounded growth, idempotent, and no generated secret survives."""

    @given(st.text() | st.builds(_embedded, st.text(), secret_samples(), st.text()))
    @settings(max_examples=300, deadline=None)
    def test_idempotent_and_bounded(self, text: str) -> None:
        once = redact_secrets(text)
        assert once == redact_secrets(once)
        # Replaced spans are disjoint and never touch, so at most one marker per two characters.
        assert len(once) <= len(text) + len(REDACTED) * (len(text) // 2 + 1)

    @given(st.text(max_size=200), secret_samples(), st.text(max_size=200))
    @settings(max_examples=400, deadline=None)
    def test_generated_secret_never_survives(self, prefix: str, sample: Sample, suffix: str) -> None:
        text = _embedded(prefix, sample, suffix)
        assert sample.secret not in redact_secrets(text)
        result = redact_tool_result(json.dumps({"output": text}, ensure_ascii=False))
        assert sample.secret not in json.loads(result)["output"]

    @given(st.lists(st.text() | st.builds(_embedded, st.text(max_size=50), secret_samples(), st.text(max_size=50)), max_size=8))
    @settings(max_examples=300, deadline=None)
    def test_result_strings_redacted_as_if_alone(self, texts: list[str]) -> None:
        """One pass over all of a result's strings gives what a pass over each would."""
        redacted = json.loads(redact_tool_result(json.dumps({"rows": texts, "n": len(texts)})))
        assert {"rows": [redact_secrets(text) for text in texts], "n": len(texts)} == redacted

    @given(st.lists(secret_samples(), min_size=1, max_size=6))
    @settings(max_examples=100, deadline=None)
    def test_several_secrets_in_one_text(self, samples: list[Sample]) -> None:
        redacted = redact_secrets(" \n".join(sample.line for sample in samples))
        assert not [sample.kind for sample in samples if sample.secret in redacted]


class TestRepeatRedaction:
    """A run of texts is redacted as redact_secrets redacts each alone; a text that repeats the last but for its
    digits, and holds no secret's trigger, is told so in one look."""

    #: A trigger with a digit in it comes with the digits that change, a trigger without one with the digits
    #: taken out (``ke1y`` is ``key`` then), a secret whose rule needs a digit gets one.
    RUNS = [
        ["tok ya28.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxx end", "tok ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxx end"],
        ["ke1y=abcdef123456", "ke2y=abcdef123456", "ke2y=abcdef123456"],
        ["API_KEY=abcdef123456", "API_KEY=abcdef123457", "API_KEY=abcdef123458"],
        ["sk-proj-Ab3dEfAhIjKlMnOpQrStUvWx", "sk-proj-Ab3dEf9hIjKlMnOpQrStUvWx1234", "sk-proj-Ab3dEf8hIjKlMnOpQrStUvWx1234"],
        ["failed 1 times", "failed 2 times", "failed 10 times", "", "failed 3 times"],
        ["a lone \ud800 half, 1", "a lone \ud800 half, 2", "API_KEY=\udcff12345678", "API_KEY=\udcff12345679"],
    ]

    @pytest.mark.parametrize("texts", RUNS)
    def test_same_as_alone(self, texts: list[str]) -> None:
        redaction = RepeatRedaction()
        assert [redaction.redact(text) for text in texts] == [redact_secrets(text) for text in texts]

    @given(
        st.lists(st.text(max_size=40) | st.builds(_embedded, st.text(max_size=20), secret_samples(), st.text(max_size=20)), min_size=2, max_size=4),
        st.lists(st.text(alphabet="0123456789", max_size=4), min_size=1, max_size=6),
    )
    @settings(max_examples=300, deadline=None)
    def test_texts_that_differ_in_their_digits(self, parts: list[str], numbers: list[str]) -> None:
        texts = [number.join(parts) for number in numbers]
        redaction = RepeatRedaction()
        assert [redaction.redact(text) for text in texts] == [redact_secrets(text) for text in texts]

    def test_looked_at_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        looked = scans_for_secrets(monkeypatch)
        redaction = RepeatRedaction()
        texts = [f'{{"error": "no path"}} [Tool loop warning: count={n}; write_file has failed {n} times]' for n in range(2, 30)]
        assert [redaction.redact(text) for text in texts] == texts
        assert looked == texts[:1]
        secret = "tok ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxx end"
        assert redaction.redact(secret) == "tok [REDACTED] end" and looked[1:] == [secret]
