"""The ``hermes-actors`` command line.

Commands that only talk to the daemon import neither Trio nor the provider
SDKs: they use the blocking client in :mod:`control.client`, so
``hermes-actors tree --json`` answers in well under a quarter of a second.
Exit status: 0 success, 1 failure (no daemon, a refused request), 2 bad usage
or an unknown path or session. An argument that is not valid UTF-8 has each bad
byte replaced (U+FFFD), with a warning: see :mod:`cli.user_text`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from cli.user_text import replace_undecodable_arguments
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, InvalidText, PlatformError
from control.paths import home_from_env
from control.profiles import PROFILE_VARIABLE, Profile, canonical_name
from config.errors import ConfigError
from config.providers import KNOWN_PROVIDERS
from config.sandbox import LIMIT_NAMES, SANDBOX_MODES
from messages.session_records import EXPORT_FORMATS

__all__ = ["build_parser", "main"]

_EPILOG = """\
State lives under HERMES_ACTORS_HOME (default ~/.hermes-actors); -p NAME (or
HERMES_ACTORS_PROFILE) selects the profile in HERMES_ACTORS_HOME/profiles/NAME
instead, with a daemon of its own. Every command takes --json for a stable machine-readable form (see cli/README.md). Wherever a
PATH is asked for, a session id alone names that session.

examples:
  hermes-actors demo                      see the whole system work, no key needed
  hermes-actors chat -q "list the files"  one question, the answer, exit
  hermes-actors tree                      the live actor tree
  hermes-actors kill sessions/session:ab12/turn/tool:call_3
  hermes-actors mcp test github           connect to one MCP server, list its tools, time it
  hermes-actors cron add --schedule "0 9 * * 1-5" --prompt "summarise my inbox"
  hermes-actors pairing approve K7QX2M9P   let in the Telegram user who was given that code
  hermes-actors profiles create work && hermes-actors -p work chat   a second, separate agent
"""


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON (a stable schema) instead of text")


def _limit(value: str) -> tuple[str, int]:
    """``--limit``'s ``NAME=N``, refused (exit 2) unless NAME is a limit and N a whole number."""
    name, _, number = value.partition("=")
    if name not in LIMIT_NAMES or not number.isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=N with NAME one of {', '.join(LIMIT_NAMES)}, got {value!r}")
    return name, int(number)


def _provider_name(value: str) -> str:
    """``--provider``'s value, refused (exit 2, with the list) unless it is a known provider or, with a plugin
    installed, possibly one a plugin adds (the daemon refuses a name no loaded plugin adds)."""
    # Here, not at the top: finding plugins reads the installed packages' metadata, which only --provider needs.
    from config.plugin_providers import installed_plugin_names  # noqa: PLC0415

    if value not in KNOWN_PROVIDERS and not (value == value.strip().lower() and installed_plugin_names()):
        raise argparse.ArgumentTypeError(f"unknown provider {value!r}; known providers: {', '.join(KNOWN_PROVIDERS)}")
    return value


def _add_provider(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("provider (default: config.yaml's model section)")
    group.add_argument("--model", help="model name, e.g. gpt-4.1 or claude-sonnet-4")
    group.add_argument(
        "--provider", type=_provider_name, metavar="NAME", help=f"provider name: {', '.join(KNOWN_PROVIDERS)}"
    )
    group.add_argument("--base-url", dest="base_url", help="API base URL of an OpenAI- or Anthropic-compatible server")
    group.add_argument(
        "--api-mode",
        dest="api_mode",
        choices=("chat_completions", "anthropic_messages", "codex_responses"),
        help="wire protocol (detected from the provider and URL when omitted)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="hermes-actors",
        description="An LLM agent daemon: many concurrent sessions, a CLI that attaches to any of them, "
        "and commands that show and control the live actor tree.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-p", "--profile", metavar="NAME",
        help="the profile to use: HERMES_ACTORS_HOME/profiles/NAME, or 'default' for HERMES_ACTORS_HOME "
        "(default: HERMES_ACTORS_PROFILE, else 'default')",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    commands.add_parser("daemon", help="run the daemon in the foreground (for systemd); logs to stderr")
    stop = commands.add_parser("stop", help="stop the running daemon gracefully")
    _add_json(stop)
    status = commands.add_parser("status", help="is a daemon running, and what is it doing")
    _add_json(status)
    config = commands.add_parser("config", help="the configuration file (HERMES_ACTORS_HOME/config.yaml)")
    config_verbs = config.add_subparsers(dest="verb", metavar="VERB", required=True)
    check = config_verbs.add_parser("check", help="validate config.yaml: errors (exit 2), unknown keys, missing key")
    _add_json(check)

    chat = commands.add_parser("chat", help="start a session and attach to it (starts the daemon if needed)")
    chat.add_argument("-q", "--query", metavar="TEXT", help="send one message, print the answer and exit")
    chat.add_argument("--title", help="a unique title for the new session")
    chat.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        metavar="MODE",
        help=f"what the session's tools may touch: {', '.join(SANDBOX_MODES)} (default: config.yaml's "
        "sandbox.mode; never wider than sandbox.max_mode)",
    )
    chat.add_argument(
        "--limit",
        action="append",
        type=_limit,
        default=[],
        metavar="NAME=N",
        help=f"lower one of the session's sandbox.limits ({', '.join(LIMIT_NAMES)}); repeatable, never above config.yaml's",
    )
    _add_json(chat)
    _add_provider(chat)
    _add_yolo(chat)
    attach = commands.add_parser("attach", help="attach to a running or stored session")
    attach.add_argument("session", metavar="SESSION", help="session id or title")
    attach.add_argument(
        "--since", type=int, metavar="SEQ",
        help="replay the session's events after sequence number SEQ (instead of the stored conversation)",
    )
    shown = attach.add_mutually_exclusive_group()
    shown.add_argument(
        "--history", type=int, metavar="N",
        help="show the conversation's last N stored messages first (default: 10, none with --json; 0: none)",
    )
    shown.add_argument(
        "--all", action="store_true", help="show every stored message of the conversation first (with --json too)"
    )
    _add_json(attach)
    _add_yolo(attach)

    tree = commands.add_parser("tree", help="the live actor tree")
    tree.add_argument("path", nargs="?", default="", metavar="PATH", help="show only this subtree")
    _add_json(tree)
    ps = commands.add_parser("ps", help="live sessions and the work they are running")
    _add_json(ps)
    inspect = commands.add_parser("inspect", help="one actor's full snapshot, with its last error")
    inspect.add_argument("path", metavar="PATH")
    _add_json(inspect)
    kill = commands.add_parser("kill", help="stop an actor: a tool worker, a sandbox, a subagent, a turn, a session")
    kill.add_argument("path", metavar="PATH")
    kill.add_argument("--reason", default="killed by operator", help="recorded with the stop (default: %(default)s)")
    _add_json(kill)
    interrupt = commands.add_parser("interrupt", help="interrupt a session's running turn")
    interrupt.add_argument("session", metavar="SESSION")
    _add_json(interrupt)
    steer = commands.add_parser("steer", help="add text to the next tool result of a running turn")
    steer.add_argument("path", metavar="PATH", help="a session id, or a session's or subagent's path")
    steer.add_argument("text", metavar="TEXT")
    _add_json(steer)

    sessions = commands.add_parser("sessions", help="stored sessions: list, search, show, export, delete")
    verbs = sessions.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="sessions, newest first (subagents counted under their parent)")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--offset", type=int, default=0)
    listing.add_argument("--source", help="only sessions from this source (cli, api, subagent, ...)")
    listing.add_argument("--all", action="store_true", help="list subagent sessions too, each on its own row")
    _add_json(listing)
    search = verbs.add_parser("search", help="full-text search over every session")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--limit", type=int, default=3, help="sessions to return, 1-10 (default: %(default)s)")
    search.add_argument("--role", action="append", dest="roles", help="roles to search (repeatable; default user, assistant)")
    search.add_argument("--source")
    _add_json(search)
    show = verbs.add_parser("show", help="a session's first and last messages")
    show.add_argument("session", metavar="SESSION", help="session id or title")
    show.add_argument("--head", type=int, default=20)
    show.add_argument("--tail", type=int, default=10)
    _add_json(show)
    export = verbs.add_parser("export", help="a session as JSON lines, Markdown or a self-contained HTML page")
    export.add_argument("session", metavar="SESSION", help="session id or title")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")
    export.add_argument(
        "--format", choices=EXPORT_FORMATS,
        help="jsonl, md or html (default: from the -o file's suffix, .md or .html, else jsonl)",
    )
    delete = verbs.add_parser("delete", help="delete a session (stopping it first when live)")
    delete.add_argument("session", metavar="SESSION", help="session id or title")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a terminal)")
    _add_json(delete)

    _add_skills(commands)
    _add_memory(commands)
    from cli.mcp_command import add_mcp_parser

    add_mcp_parser(commands, _add_json)
    from cli.cron_command import add_cron_parser

    add_cron_parser(commands, _add_json)
    from cli.pairing_command import add_pairing_parser

    add_pairing_parser(commands, _add_json)
    from cli.profiles_command import add_profiles_parser

    add_profiles_parser(commands, _add_json)
    from cli.checkpoints_command import add_checkpoints_parser

    add_checkpoints_parser(commands, _add_json)
    from cli.extensions_command import add_extensions_parsers

    add_extensions_parsers(commands, _add_json)
    from cli.import_hermes import add_import_parser

    add_import_parser(commands, _add_json)

    demo = commands.add_parser("demo", help="a guided run against a built-in scripted model (no key, under 30 s)")
    demo.add_argument("--keep", action="store_true", help="keep the temporary home and print where it is")
    return parser


def _add_skills(commands: Any) -> None:
    """``skills list|view|create|delete|log`` (run locally by :mod:`cli.skills_cli`) and ``skills curate``
    (the daemon's curator, :mod:`cli.curate_command`)."""
    skills = commands.add_parser("skills", help="the skills the agent can load: list, view, create, delete")
    verbs = skills.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="every skill: name, category, source, description")
    listing.add_argument("--source", choices=["project", "user", "external", "bundled"])
    listing.add_argument("--category")
    listing.add_argument("--tag")
    listing.add_argument("--query", help="a piece of the name or description (any case)")
    view = verbs.add_parser("view", help="a skill's SKILL.md body and its linked files")
    view.add_argument("name")
    create = verbs.add_parser("create", help="a user skill from a SKILL.md file ('-' reads standard input)")
    create.add_argument("name")
    create.add_argument("--from-file", required=True, metavar="FILE")
    create.add_argument("--category")
    delete = verbs.add_parser("delete", help="delete a user skill")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    log = verbs.add_parser("log", help="what the background review and the curator changed in the skills, and why")
    log.add_argument("--limit", type=int, default=20, help="the newest this many changes (default 20)")
    curate = verbs.add_parser("curate", help="run the daemon's skills curator now: archive the long unused, merge duplicates")
    curate.add_argument("--dry-run", action="store_true", help="change nothing; print what would change")
    curate.add_argument("--consolidate", action="store_true",
                        help="also run the model's merging pass (default: as curator.consolidate says)")
    for parser in (listing, view, create, delete, log, curate):
        _add_json(parser)


def _add_memory(commands: Any) -> None:
    """``memory show|log`` (run locally by :mod:`cli.learning_cli`)."""
    memory = commands.add_parser("memory", help="what the agent remembers, and what the background review changed")
    verbs = memory.add_subparsers(dest="verb", metavar="VERB")
    show = verbs.add_parser("show", help="the entries of MEMORY.md and USER.md, and the latest review changes (default)")
    log = verbs.add_parser("log", help="what the background review changed in memory, and why")
    log.add_argument("--limit", type=int, default=20, help="the newest this many changes (default 20)")
    for parser in (memory, show, log):
        _add_json(parser)


def _add_yolo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yolo", action="store_true",
        help="approve every dangerous command of the session without asking (the hardline blocklist, "
        "such as rm -rf /, is still refused); /yolo toggles it in a session",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hermes-actors`` console script; returns the exit status."""
    try:
        try:
            return _run(argv)
        finally:
            # Flushed here (after --help's SystemExit too), where a reader that left is handled, not at exit.
            sys.stdout.flush()
    except BrokenPipeError:
        # `hermes-actors sessions list | head -2`: the reader has what it wanted. The socket's own errors are
        # translated by the client, so this is stdout; the rest of the output is dropped, not flushed again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    replace_undecodable_arguments(args)
    try:
        _select_profile(args)
        if args.command == "daemon":
            from actors.platform.daemon import run_daemon

            return run_daemon(home_from_env())
        if args.command == "demo":
            from cli.demo import run_demo

            return run_demo(keep=args.keep)
        if args.command == "config":
            from cli.config_check import run_config_check

            return run_config_check(args)
        if args.command == "skills" and args.verb == "curate":
            from cli.curate_command import run_curate_command

            return run_curate_command(args)
        if args.command == "skills":
            from cli.skills_cli import run_skills_command

            return run_skills_command(args)
        if args.command == "memory":
            from cli.learning_cli import run_memory_command

            return run_memory_command(args)
        if args.command == "mcp":
            from cli.mcp_command import run_mcp_command

            return run_mcp_command(args)
        if args.command == "cron":
            from cli.cron_command import run_cron_command

            return run_cron_command(args)
        if args.command == "pairing":
            from cli.pairing_command import run_pairing_command

            return run_pairing_command(args)
        if args.command == "profiles":
            from cli.profiles_command import run_profiles_command

            return run_profiles_command(args)
        if args.command == "checkpoints":
            from cli.checkpoints_command import run_checkpoints_command

            return run_checkpoints_command(args)
        if args.command in ("plugins", "hooks"):
            from cli.extensions_command import run_extensions_command

            return run_extensions_command(args)
        if args.command == "import-hermes":
            from cli.import_hermes import run_import_hermes

            return run_import_hermes(args)
        if args.command in ("chat", "attach"):
            from cli.attach import run_attach_command

            return run_attach_command(args)
        from cli.commands import run_command

        return run_command(args)
    except KeyboardInterrupt:
        return 130
    except TimeoutError:
        print("hermes-actors: the daemon did not answer in time (see its log: logs/daemon.log)", file=sys.stderr)
        return EXIT_FAILURE
    except (ConfigError, InvalidText) as exc:
        print(f"hermes-actors: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except PlatformError as exc:
        print(f"hermes-actors: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND if getattr(exc, "code", None) == "not_found" else EXIT_FAILURE


def _select_profile(args: argparse.Namespace) -> None:
    """Make ``-p NAME`` the selected profile for this command and every process it starts, as Hermes's
    ``-p`` does, and refuse a named profile that does not exist (but to the ``profiles`` command).

    Raises:
        ProfileError: a bad name, or no such profile.
    """
    if args.profile is not None:
        os.environ[PROFILE_VARIABLE] = canonical_name(args.profile)
    if args.command not in ("profiles", "demo"):
        Profile.from_env().existing()
