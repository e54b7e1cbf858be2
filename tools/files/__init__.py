"""File tools: ``read_file``, ``write_file`` and ``patch``.

Paths are relative to the session's working directory (``ctx.shell.cwd``);
all file I/O runs in worker threads, never on the Trio loop.  Every path obeys
the session's sandbox policy (``ctx.jail.policy``) as a jailed process would
see it: resolved, checked, and checked again once opened (``_guard``).  Reads
are redacted, and an edit never writes the redaction marker over a secret
(``_markers``).  ``patch`` finds ``old_string`` through Hermes Agent's fuzzy
chain (``_strategies``, ``_fuzzy``) or applies V4A patches (``_v4a``,
``_v4a_apply``); both edit tools refuse sensitive paths, syntax-check what
they wrote and warn on a file changed since the model saw it
(``_write_guards``); writes are atomic (``_atomic``).
"""

from __future__ import annotations

from tools.files._atomic import atomic_write
from tools.files._paths import resolve_path
from tools.files._read import MAX_LIMIT, READ_FILE_SCHEMA, ReadWindow, read_file_handler, read_window
from tools.files._write import (
    PATCH_SCHEMA,
    WRITE_FILE_SCHEMA,
    check_patch_args,
    check_write_file_args,
    patch_handler,
    write_file_handler,
)

__all__ = [
    "MAX_LIMIT",
    "PATCH_SCHEMA",
    "READ_FILE_SCHEMA",
    "WRITE_FILE_SCHEMA",
    "ReadWindow",
    "atomic_write",
    "check_patch_args",
    "check_write_file_args",
    "patch_handler",
    "read_file_handler",
    "read_window",
    "resolve_path",
    "write_file_handler",
]
