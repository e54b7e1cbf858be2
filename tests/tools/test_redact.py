"""Secret redaction."""

from __future__ import annotations

import pytest

from tools.redact import REDACTED, redact_secrets

SECRETS = [
    ("OPENAI_API_KEY=sk-proj-Ab3dEf9hIjKlMnOpQrStUvWx1234", "OPENAI_API_KEY=[REDACTED]"),
    ("key: sk-ant-api03-AbCdEf0123456789_ghIJklMNop-qrstuv", "key: [REDACTED]"),
    ("sk-or-v1-0123456789abcdef0123456789abcdef", "[REDACTED]"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ012345 end", "token [REDACTED] end"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "[REDACTED]"),
    ("aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED] here"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig123", "Authorization: Bearer [REDACTED]"),
    ("postgres://admin:s3cr3t-pass@db.example.com:5432/app", "postgres://admin:[REDACTED]@db.example.com:5432/app"),
    ("https://user:hunter2@github.com/org/repo.git", "https://user:[REDACTED]@github.com/org/repo.git"),
    ("Server=db;User Id=sa;Password=P@ssw0rd!;", "Server=db;User Id=sa;Password=[REDACTED];"),
    ("DefaultEndpointsProtocol=https;AccountKey=abc+def/ghi==;", "DefaultEndpointsProtocol=https;AccountKey=[REDACTED];"),
    ("slack xoxb-123456789012-abcdefABCDEF", "slack [REDACTED]"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "google [REDACTED]"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\ntail",
        "[REDACTED]\ntail",
    ),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n(truncated", "[REDACTED]"),
]

NEAR_MISSES = [
    "pip install scikit-learn sk-learn",
    "the task-list is long",
    "sk-this-is-a-kebab-case-identifier-without-digits",
    "ghp_short",
    "AKIA is a prefix, AKIA123 is too short",
    "the bearer of bad news",
    "Bearer token",
    "https://example.com:8080/path?q=1",
    "ssh://git@github.com/org/repo.git",
    "password: see the vault",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqh\n-----END PUBLIC KEY-----",
    "desk-0123456789012345678901234",
    "",
]


class TestRedactSecrets:
    """Credential-shaped text is replaced; look-alikes stay untouched."""

    @pytest.mark.parametrize(("text", "expected"), SECRETS)
    def test_secret_is_redacted(self, text: str, expected: str) -> None:
        assert expected == redact_secrets(text)

    @pytest.mark.parametrize("text", NEAR_MISSES)
    def test_near_miss_is_kept(self, text: str) -> None:
        assert text == redact_secrets(text)

    def test_several_secrets_in_one_text(self) -> None:
        text = "a=sk-proj-AAAAAAAAAAAAAAAAAAAA1111 b=AKIAIOSFODNN7EXAMPLE"
        assert f"a={REDACTED} b={REDACTED}" == redact_secrets(text)
