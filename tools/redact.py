"""Secret redaction: one function for transcripts, logs, summaries and sandbox output.

Anything shaped like a credential is replaced by ``[REDACTED]``.  Where a
secret sits inside a larger structure (a URL, a header, a ``key=value``
connection string) only the secret part is replaced, so the text stays
readable and the model can still tell what was there.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact_secrets"]

REDACTED = "[REDACTED]"

# Prefix-shaped API keys.  The look-behind keeps them from matching in the
# middle of an identifier; the digit look-ahead keeps long kebab-case words
# such as ``sk-learn-compatible-estimators`` out.
_KEY_PATTERNS: tuple[re.Pattern[str], ...] = (
    # OpenAI, Anthropic (sk-ant-...), OpenRouter (sk-or-...)
    re.compile(r"(?<![\w-])sk-(?=[\w-]*\d)[A-Za-z0-9_-]{20,}"),
    re.compile(r"(?<![\w-])gh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub tokens
    re.compile(r"(?<![\w-])github_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),  # AWS access key ids
    re.compile(r"(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])"),  # Google API keys
    re.compile(r"(?<![\w-])(?:hf|glpat|npm)_[A-Za-z0-9_-]{20,}"),  # Hugging Face, GitLab, npm
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

# ``Authorization: Bearer <token>``; short words ("bearer of bad news") stay.
_BEARER = re.compile(r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/-]{16,}=*")

# ``scheme://user:password@host`` (database URLs, git remotes, proxies).
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)")

# ``Password=...;`` style connection strings and Azure account keys.
_KV_SECRET = re.compile(
    r"(?i)(\b(?:password|passwd|pwd|accountkey|sharedaccesskey|client_secret)\s*=\s*)([^;\s'\"]+)"
)


def redact_secrets(text: str) -> str:
    """Return ``text`` with every credential-shaped substring replaced by ``[REDACTED]``.

    Args:
        text: any text that may reach a log, a transcript, a summary or a model.
    """
    if not text:
        return text
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _KV_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text
