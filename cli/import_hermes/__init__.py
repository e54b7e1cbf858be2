"""``hermes-actors import-hermes [PATH]``: move a Hermes Agent 0.19 home over to hermes-actors.

It reads the Hermes home (PATH; else ``HERMES_HOME``; else ``~/.hermes``, as Hermes finds it; with
``--hermes-profile NAME`` the profile ``PATH/profiles/NAME``) and writes into ``HERMES_ACTORS_HOME``: the
settings both projects share (``config.yaml``, mapped through the compatibility table), ``.env``,
``SOUL.md``, the memories, the user's skills, and the sessions of ``state.db``. The Hermes home is only
read. Ours is never overwritten without ``--force`` (which keeps a backup of each file replaced). It works
with the daemon stopped and holds the daemon's lock meanwhile: a running daemon keeps its configuration
and sessions in memory, so the import refuses to write under it (``--dry-run`` runs anyway).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.import_hermes.report import Report
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND
from control.paths import DaemonPaths, ensure_private_dir, home_from_env

if TYPE_CHECKING:
    from config.loader import Config

__all__ = ["add_import_parser", "run_import_hermes"]

# What a Hermes home holds that the import does not bring over, and why.
_NOT_IMPORTED = {
    "auth.json": "Hermes's OAuth logins and credential pool: sign in again, or put the keys in .env",
    "cron": "Hermes's scheduled jobs: add them again with hermes-actors cron add",
    "pairing": "Hermes's bot pairings: pair again (hermes-actors pairing)",
    "hooks": "Hermes's hooks are not built here",
    "plugins": "Hermes's plugins are not built here",
    "sessions": "Hermes's JSON transcripts: the same sessions come from state.db",
    "checkpoints": "Hermes's filesystem checkpoints are not built here",
}


def add_import_parser(commands: Any, add_json: Any) -> None:
    """``import-hermes``'s arguments."""
    parser = commands.add_parser(
        "import-hermes", help="bring a Hermes Agent home over: settings, keys, memories, skills, SOUL.md, sessions"
    )
    parser.add_argument("path", nargs="?", metavar="PATH", help="the Hermes home (default: $HERMES_HOME, else ~/.hermes)")
    parser.add_argument("--hermes-profile", metavar="NAME", help="import the Hermes profile NAME (PATH/profiles/NAME); -p before the command names the hermes-actors profile it goes into")
    parser.add_argument("--dry-run", action="store_true", help="report what would be imported; write nothing")
    parser.add_argument("--force", action="store_true", help="replace files of ours that differ (each kept as NAME.bak-TIME)")
    add_json(parser)


def _hermes_home(args: argparse.Namespace) -> Path:
    if args.path:
        home = Path(args.path).expanduser()
    else:
        value = os.environ.get("HERMES_HOME", "").strip()
        home = Path(value).expanduser() if value else Path.home() / ".hermes"
    if args.hermes_profile:
        if args.hermes_profile in (".", "..") or "/" in args.hermes_profile:
            raise _Refused(f"not a profile name: {args.hermes_profile!r}", "invalid", EXIT_NOT_FOUND)
        home = home / "profiles" / args.hermes_profile
    return home.absolute()


class _Refused(Exception):
    """The import cannot run: ``code`` names why for --json, ``status`` is the exit status."""

    def __init__(self, message: str, code: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def run_import_hermes(args: argparse.Namespace) -> int:
    """Run ``import-hermes``; returns the exit status (1 when something of ours was kept for want of ``--force``)."""
    try:
        source = _hermes_home(args)
        home = home_from_env().absolute()
        if not source.is_dir():
            raise _Refused(f"no Hermes home at {source}", "not_found", EXIT_NOT_FOUND)
        if source.resolve() == home.resolve():
            raise _Refused(f"{source} is this hermes-actors home itself", "invalid", EXIT_NOT_FOUND)
        report = Report(str(source), str(home), args.dry_run)
        if args.dry_run:
            _import(source, home, args, report)
        else:
            _import_locked(source, home, args, report)
    except _Refused as exc:
        return _fail(args, exc)
    except OSError as exc:  # our home cannot be made or locked (another user's, a read-only disk)
        return _fail(args, _Refused(f"cannot use {home_from_env()}: {exc.strerror or exc}", "io", EXIT_FAILURE))
    if args.json:
        print(report.dumps())
    else:
        print(report.text())
    return EXIT_FAILURE if report.refused else 0


def _fail(args: argparse.Namespace, refused: _Refused) -> int:
    """A refusal as every command reports one: ``{"error": {"code", "message"}}`` with --json, a line on stderr."""
    if args.json:
        from cli.commands import print_json

        print_json({"error": {"code": refused.code, "message": str(refused)}})
    print(f"hermes-actors: {refused}", file=sys.stderr)
    return refused.status


def _import_locked(source: Path, home: Path, args: argparse.Namespace, report: Report) -> None:
    """The import holding the daemon's lock: no daemon runs on this home while it writes."""
    from control.lock import InstanceLock

    paths = DaemonPaths(home)
    ensure_private_dir(home)
    ensure_private_dir(paths.run_dir)
    lock = InstanceLock(paths.lock_file, home)
    if not lock.acquire_nowait():
        raise _Refused(
            f"a daemon is running for {home}: stop it with `hermes-actors stop`, then import "
            "(it keeps its settings and sessions in memory; `--dry-run` works while it runs)",
            "daemon_running",
            EXIT_FAILURE,
        )
    try:
        _import(source, home, args, report)
    finally:
        lock.release()


def _import(source: Path, home: Path, args: argparse.Namespace, report: Report) -> None:
    from cli.import_hermes import files
    from config.loader import Config, ConfigError, load_config

    placer = files.Placer(report, force=args.force, dry_run=args.dry_run)
    config_file = files.plan_config(source, home, report)
    if config_file is not None:
        placer.place(config_file)
    try:
        config = load_config(home, log_warnings=False)
    except ConfigError as exc:
        report.left("sessions", f"our config.yaml cannot be read, so neither can the store it chooses: {exc}")
        config = None
    for planned in (files.plan_env(source, home, report), files.plan_soul(source, home, report)):
        if planned is not None:
            placer.place(planned)
    for planned in files.plan_memories(source, home, (config or Config()).memory, report):
        placer.place(planned)
    for planned in files.plan_skills(source, home, report):
        placer.place(planned)
    if config is not None:
        _sessions(source, home, config, args.dry_run, report)
    for name, why in _NOT_IMPORTED.items():
        if (source / name).exists():
            report.left(name, why)
    if (source / "profiles").is_dir() and not args.hermes_profile:
        names = sorted(p.name for p in (source / "profiles").iterdir() if p.is_dir())
        if names:
            report.left("profiles", f"{', '.join(names)}: import each with --hermes-profile NAME, into the hermes-actors home meant for it")


def _sessions(source: Path, home: Path, config: Config, dry_run: bool, report: Report) -> None:
    from cli.import_hermes.sessions import StateDbError, plan_sessions, read_state_db, write_sessions

    path = source / "state.db"
    if not path.is_file():
        return
    try:
        sessions = read_state_db(path)
    except StateDbError as exc:
        report.left("state.db", str(exc))
        return
    if dry_run:
        plan_sessions(sessions, report)
        return
    import trio

    from store.errors import StoreError
    from store.factory import open_store

    async def write() -> None:
        async with open_store(config.store, home) as store:
            await write_sessions(store, sessions, report)

    try:
        trio.run(write)
    except StoreError as exc:
        report.left("sessions", f"the store refused them: {exc}")
