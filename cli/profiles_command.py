"""``hermes-actors profiles list|create|delete|show``: the profiles of one ``HERMES_ACTORS_HOME``.

Run locally (no daemon needed): a profile is a directory (see :mod:`control.profiles`); whether its daemon
runs is asked of its control socket.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.confirm import can_ask, confirmed
from control.client import ControlClient
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, DaemonNotRunning, ProfileError, ProtocolError
from control.lock import FileLock
from control.paths import DaemonPaths, ensure_private_dir
from control.profiles import PROFILES_DIR, Profile, profile_names

__all__ = ["add_profiles_parser", "run_profiles_command"]

#: What ``--clone`` copies (Hermes's ``--clone``): the settings, keys, persona, memories and skills.
CLONED = (".env", "config.yaml", "SOUL.md", "memories/MEMORY.md", "memories/USER.md", "skills")
# What ``--clone-all`` leaves behind: other profiles, the running daemon's files, and the history (the
# store, its logs) that would make the copy answer for the source's sessions.
_NOT_CLONED = frozenset({PROFILES_DIR, "run", "logs", "state.db", "state.db-wal", "state.db-shm", "sessions", "checkpoints"})
# Seeded in a new profile so its keys have a home of their own from the start (never the source's).
_ENV_HEADER = "# This profile's keys (NAME=value); the default profile's .env is not read.\n"


def add_profiles_parser(commands: Any, add_json: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``profiles`` command and its verbs."""
    profiles = commands.add_parser(
        "profiles", help="independent agents under one home, each with its own config, keys, store and daemon"
    )
    verbs = profiles.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_json(verbs.add_parser("list", help="every profile, its home, and whether its daemon runs"))
    create = verbs.add_parser("create", help="a new empty profile (nothing is copied unless asked)")
    create.add_argument("name", metavar="NAME")
    cloned = create.add_mutually_exclusive_group()
    cloned.add_argument(
        "--clone", action="store_true",
        help="copy config.yaml, .env, SOUL.md, the memories and the skills of the selected profile",
    )
    cloned.add_argument(
        "--clone-all", action="store_true",
        help="copy the whole selected profile but its sessions, logs and other profiles",
    )
    create.add_argument("--clone-from", metavar="SOURCE", help="the profile to copy from (implies --clone)")
    add_json(create)
    delete = verbs.add_parser("delete", help="delete a profile and everything in it (refused while its daemon runs)")
    delete.add_argument("name", metavar="NAME")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a terminal)")
    add_json(delete)
    show = verbs.add_parser("show", help="one profile: its home, its daemon, what it holds")
    show.add_argument("name", metavar="NAME")
    add_json(show)


def run_profiles_command(args: argparse.Namespace) -> int:
    """Run one ``profiles`` verb; the exit status.

    Raises:
        ProfileError: a bad or unknown name, or (create) one that exists.
    """
    from cli.commands import print_json

    selected = Profile.from_env()
    if args.verb == "list":
        rows = [_describe(selected.sibling(name), selected) for name in profile_names(selected.root)]
        if args.json:
            print_json({"profiles": rows})
        else:
            for row in rows:
                mark = "*" if row["selected"] else " "
                daemon = f"running (pid {row['daemon_pid']})" if row["running"] else "stopped"
                print(f"{mark} {row['name']:<16} {daemon:<22} {row['home']}")
        return 0
    if args.verb == "show":
        profile = selected.sibling(args.name).existing()
        row = _describe(profile, selected)
        if args.json:
            print_json(row)
        else:
            for key, value in row.items():
                print(f"{key + ':':<14} {value}")
        return 0
    if args.verb == "create":
        return _create(args, selected)
    return _delete(args, selected)


def _daemon_pid(profile: Profile) -> int | None:
    """The pid of the profile's daemon when one answers on its control socket, else None."""
    try:
        with ControlClient.connect(DaemonPaths(profile.home), client="hermes-actors profiles", timeout=5.0) as client:
            return int(client.welcome.daemon_pid)
    except (DaemonNotRunning, ProtocolError, TimeoutError):
        return None


def _describe(profile: Profile, selected: Profile) -> dict[str, Any]:
    """What ``list`` and ``show`` tell of a profile (names of files only: never a key's value)."""
    home = profile.home
    pid = _daemon_pid(profile)
    skills = home / "skills"
    return {
        "name": profile.name,
        "home": str(home),
        "selected": profile.name == selected.name,
        "running": pid is not None,
        "daemon_pid": pid,
        "config": (home / "config.yaml").is_file(),
        "env_file": (home / ".env").is_file(),
        "skills": sum(1 for _ in skills.rglob("SKILL.md")) if skills.is_dir() else 0,
        "store": (home / "state.db").is_file(),
    }


def _create(args: argparse.Namespace, selected: Profile) -> int:
    from cli.commands import print_json

    profile = selected.sibling(args.name)
    if profile.is_default:
        raise ProfileError("the default profile is HERMES_ACTORS_HOME itself; it cannot be created")
    if profile.home.exists():
        raise ProfileError(f"profile {profile.name!r} already exists ({profile.home})")
    source = (selected.sibling(args.clone_from) if args.clone_from else selected).existing()
    ensure_private_dir(profile.root)
    ensure_private_dir(profile.home.parent)
    if args.clone_all:
        shutil.copytree(source.home, profile.home, symlinks=True, ignore=_clone_all_ignored(source.home))
        copied = sorted(entry.name for entry in profile.home.iterdir())
    else:
        ensure_private_dir(profile.home)
        copied = _clone(source.home, profile.home) if (args.clone or args.clone_from) else []
    ensure_private_dir(profile.home)
    env_file = profile.home / ".env"
    if not env_file.exists():
        env_file.write_text(_ENV_HEADER)
    os.chmod(env_file, 0o600)
    if args.json:
        print_json({"name": profile.name, "home": str(profile.home), "copied": copied, "source": source.name})
    else:
        print(f"created profile {profile.name!r} at {profile.home}")
        if copied:
            print(f"copied from {source.name!r}: {', '.join(copied)}")
        print(f"use it with `hermes-actors -p {profile.name} chat` (or HERMES_ACTORS_PROFILE={profile.name})")
    return 0


def _clone(source: Path, target: Path) -> list[str]:
    """Copy :data:`CLONED` from ``source`` to ``target``; what was there to copy."""
    copied = []
    for name in CLONED:
        origin = source / name
        if not origin.exists():
            continue
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if origin.is_dir():
            shutil.copytree(origin, destination, symlinks=True)
        else:
            shutil.copy2(origin, destination)
        copied.append(name)
    return copied


def _clone_all_ignored(source: Path) -> Callable[[str, list[str]], set[str]]:
    """``copytree``'s filter for ``--clone-all``: :data:`_NOT_CLONED` at the top of ``source`` only."""

    def ignored(directory: str, names: list[str]) -> set[str]:
        return set(names) & _NOT_CLONED if Path(directory) == source else set()

    return ignored


def _delete(args: argparse.Namespace, selected: Profile) -> int:
    from cli.commands import _fail, print_json

    profile = selected.sibling(args.name)
    if profile.is_default:
        raise ProfileError("the default profile is HERMES_ACTORS_HOME itself and holds every other; it is never deleted")
    profile.existing()
    paths = DaemonPaths(profile.home)
    ensure_private_dir(paths.run_dir)
    # Held until the files are gone: a daemon starting meanwhile finds its lock taken and gives up.
    lock = FileLock(paths.lock_file)
    if not lock.acquire_nowait():
        message = f"the daemon of profile {profile.name!r} is running; stop it first (`hermes-actors -p {profile.name} stop`)"
        return _fail(args, "running", message, EXIT_FAILURE)
    try:
        if not args.yes:
            if not can_ask():
                return _fail(args, "invalid", "deleting a profile needs --yes when there is no terminal to ask", EXIT_NOT_FOUND)
            if not confirmed(f"Delete profile {profile.name!r} and everything in {profile.home}?"):
                print("not deleted")
                return EXIT_FAILURE
        shutil.rmtree(profile.home)
    finally:
        lock.release()
    if args.json:
        print_json({"deleted": True, "name": profile.name, "home": str(profile.home)})
    else:
        print(f"deleted profile {profile.name!r} ({profile.home})")
    return 0
