"""The ``terminal`` tool's schema: Hermes Agent's parameters and defaults, in our own words."""

from __future__ import annotations

from typing import Any

__all__ = ["BACKGROUND_SILENT_HINT", "TERMINAL_SCHEMA"]

TERMINAL_SCHEMA: dict[str, Any] = {
    "name": "terminal",
    "description": (
        "Run a shell command (bash) on the user's machine and return its output and exit code. "
        "The working directory and exported variables persist between calls (cd and export work): set up "
        "a virtualenv or variables once, not before every command. "
        "The file tools do the file work better: to read files, not cat, head or tail but read_file; to "
        "search, not grep, rg or find but search_files; to list a directory, not ls but "
        "search_files(target='files'); to edit, not sed or awk but patch; to create a file, not echo or a "
        "cat heredoc but write_file. Keep the terminal for builds, installs, git, processes, scripts, the "
        "network and package managers. "
        "Output is cleaned of colour codes and long output keeps its beginning and end. A nonzero "
        "exit code that is an answer rather than a failure (grep found nothing, diff found differences) "
        "is explained in exit_code_meaning. "
        "Foreground commands may run up to 600 seconds and return as soon as they end; for servers, "
        "watchers and long jobs use background=true with notify_on_complete=true for anything that ends, "
        "then the process tool (poll, log, wait, kill, write, submit, close), never nohup, setsid or a "
        "trailing & in the foreground. After starting a server, check it is ready before testing against "
        "it. Interactive programs (vim, a REPL, a coding CLI) need pty=true; pipe git output that might "
        "page to cat. "
        "Dangerous commands (recursive deletes, formatting disks, stopping services, sh -c ...) need "
        "approval first; a few (rm -rf /, fork bombs, wiping a disk) are never run."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command to run."},
            "background": {
                "type": "boolean",
                "description": (
                    "Start the command in the background and return its session_id at once. Pair it with "
                    "notify_on_complete=true for anything that ends (tests, builds, deploys, batch jobs): "
                    "otherwise nothing tells you when it exits. Leave notify_on_complete off only for "
                    "processes that never exit (servers, watchers). Short commands run better in the "
                    "foreground with a generous timeout."
                ),
                "default": False,
            },
            "timeout": {
                "type": "integer",
                "description": (
                    "Seconds before a foreground command is stopped (default 180, at most 600). The call "
                    "returns as soon as the command ends, so a high value costs nothing; above 600 use "
                    "background=true."
                ),
                "minimum": 1,
            },
            "workdir": {
                "type": "string",
                "description": "Directory to run this one command in (default: the session's working directory).",
            },
            "pty": {
                "type": "boolean",
                "description": (
                    "Run the command on a pseudo-terminal, for interactive programs that need one (a REPL, "
                    "a coding CLI, a tool that checks for a terminal). Most useful with background=true, "
                    "answering its prompts with process(action='submit')."
                ),
                "default": False,
            },
            "notify_on_complete": {
                "type": "boolean",
                "description": (
                    "Background only: you are told once when the process exits, with its exit code and the "
                    "end of its output. The right choice for almost every long task. Excludes watch_patterns: "
                    "when both are set, watch_patterns are dropped."
                ),
                "default": False,
            },
            "watch_patterns": {
                "type": "array",
                "items": {"type": "string"},
                "description": (
                    "Background only: strings to watch for in the output of a process that never exits on "
                    "its own (['Application startup complete'] on a server). At most one notification per "
                    "15 seconds; after 3 windows in a row with dropped matches, or 8 notifications in all, the "
                    "watch is switched off and you are told once at exit instead. Not for end-of-run markers or "
                    "errors in loops: use notify_on_complete. Excludes notify_on_complete."
                ),
            },
        },
        "required": ["command"],
    },
}

BACKGROUND_SILENT_HINT = (
    "This process runs silently: without notify_on_complete=true nothing tells you when it exits. "
    "If it is a task that ends (a test suite, a build, a deploy, a CI poller), start it again with "
    "notify_on_complete=true, or learn the outcome yourself with process(action='poll') or "
    "process(action='wait'). Ignore this only for processes that never exit (servers, watchers, daemons)."
)
"""Hermes Agent's nudge on a background start with neither ``notify_on_complete`` nor ``watch_patterns``."""
