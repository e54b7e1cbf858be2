"""Scan text for prompt injection, exfiltration attempts and invisible Unicode.

Used before untrusted text becomes part of a prompt: memory entries written by
the model and context files (AGENTS.md, SOUL.md, ...) found on disk.  The
result is a list of pattern names so callers can say *why* text was blocked.
"""

from __future__ import annotations

import re

__all__ = ["INVISIBLE_UNICODE", "find_threats"]

_THREAT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("prompt_injection", r"ignore\s+(?:all\s+)?(?:previous|all|above|prior)\s+instructions"),
        ("disregard_rules", r"disregard\s+(?:your|all|any|the)\s+(?:previous\s+)?(?:instructions|rules|guidelines)"),
        ("deception_hide", r"do\s+not\s+tell\s+the\s+user"),
        ("sys_prompt_override", r"system\s+prompt\s+override"),
        ("exfil_curl", r"curl\s+[^\n]*\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD)"),
        ("exfil_wget", r"wget\s+[^\n]*\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD)"),
        ("read_secrets", r"cat\s+[^\n]*(?:\.env\b|credentials|\.netrc)"),
        ("ssh_backdoor", r"authorized_keys"),
        ("html_comment_injection", r"<!--[^>]*(?:ignore|override|system|secret|hidden)[^>]*-->"),
        ("hidden_div", r"<\s*div\s+style\s*=\s*[\"'][^\"']*display\s*:\s*none"),
    )
)

INVISIBLE_UNICODE: frozenset[str] = frozenset(
    "\u200b\u200c\u200d\u2060\ufeff\u180e"  # zero-width and joiners
    "\u202a\u202b\u202c\u202d\u202e"  # bidirectional embeddings and overrides
    "\u2066\u2067\u2068\u2069"  # bidirectional isolates
)
"""Characters a reader cannot see but a model reads: a classic way to hide instructions."""


def find_threats(text: str) -> list[str]:
    """Return the names of the threat patterns found in ``text`` (empty when clean).

    Names are returned once each, in a stable order; ``"invisible_unicode"``
    comes last when any invisible character is present.
    """
    found = [name for name, pattern in _THREAT_PATTERNS if pattern.search(text)]
    if not INVISIBLE_UNICODE.isdisjoint(text):
        found.append("invisible_unicode")
    return found
