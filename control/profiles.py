"""Profiles: several independent agents on one machine, each a home of its own.

The default profile is ``HERMES_ACTORS_HOME`` itself, so no existing home moves. A named profile NAME
lives in ``HERMES_ACTORS_HOME/profiles/NAME``: its own ``config.yaml``, ``.env``, memories, skills, store,
cron jobs and bots, served by a daemon of its own (its own lock, control socket and jails; why:
docs/DECISIONS.md#d-profiles). It is chosen with ``hermes-actors -p NAME`` or ``HERMES_ACTORS_PROFILE``
(Hermes's ``-p`` and ``HERMES_PROFILE``).

Shared by the CLI and the daemon; imports neither Trio nor the configuration classes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import attrs

from control.errors import ProfileError

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES_DIR",
    "PROFILE_VARIABLE",
    "Profile",
    "canonical_name",
    "hidden_root",
    "profile_name_of",
    "profile_names",
]

#: The environment variable naming the selected profile (``-p`` sets it for the command's children).
PROFILE_VARIABLE = "HERMES_ACTORS_PROFILE"
#: The home variable (as :data:`control.paths.HOME_VARIABLE`, which imports this module).
_HOME_VARIABLE = "HERMES_ACTORS_HOME"
#: The name of the profile that is ``HERMES_ACTORS_HOME`` itself.
DEFAULT_PROFILE = "default"
#: Where named profiles live, under the default profile's home.
PROFILES_DIR = "profiles"
# Hermes's rule: one path component, lower case, so no "..", no "/", no hidden directory.
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Hermes refuses these (they collide with the program itself or a common command); ours too.
_RESERVED = frozenset({"hermes", "hermes-actors", "test", "tmp", "root", "sudo"})


def canonical_name(name: str) -> str:
    """The profile's name as stored on disk: stripped and lower-cased, as Hermes does.

    Raises:
        ProfileError: empty, not ``[a-z0-9][a-z0-9_-]{0,63}`` (so never a path), or reserved.
    """
    canon = name.strip().lower()
    if canon == DEFAULT_PROFILE:
        return canon
    if not _NAME.fullmatch(canon):
        raise ProfileError(f"invalid profile name {name!r}: use 1-64 of a-z, 0-9, '-' and '_', starting with a letter or digit")
    if canon in _RESERVED:
        raise ProfileError(f"profile name {canon!r} is reserved; choose another")
    return canon


@attrs.frozen
class Profile:
    """One profile: the default profile's home it belongs to, and its name.

    Attributes:
        root: The default profile's home (``HERMES_ACTORS_HOME``), which holds ``profiles/``.
        name: ``default`` or a canonical profile name.
    """

    root: Path
    name: str = DEFAULT_PROFILE

    @property
    def is_default(self) -> bool:
        """Whether this is the default profile (the root home itself)."""
        return self.name == DEFAULT_PROFILE

    @property
    def home(self) -> Path:
        """The profile's home: the root for the default profile, else ``root/profiles/NAME``."""
        return self.root if self.is_default else self.root / PROFILES_DIR / self.name

    def existing(self) -> Profile:
        """This profile, refused unless its home exists (the default profile always does: it is made on use).

        Raises:
            ProfileError: a named profile that was never created.
        """
        if self.is_default or self.home.is_dir():
            return self
        raise ProfileError(
            f"no profile {self.name!r} (no directory {self.home}); create it with "
            f"`hermes-actors profiles create {self.name}`"
        )

    def sibling(self, name: str) -> Profile:
        """The profile ``name`` of the same root.

        Raises:
            ProfileError: a bad name.
        """
        return Profile(self.root, canonical_name(name))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Profile:
        """The profile the environment selects.

        ``HERMES_ACTORS_HOME`` (default ``~/.hermes-actors``) is the root and ``HERMES_ACTORS_PROFILE`` the
        name. A child the CLI or daemon starts (the daemon, a session host) gets ``HERMES_ACTORS_HOME`` set to
        the profile's own home with the name kept: a home that already is ``…/profiles/NAME`` for the named
        profile is taken as that profile's, not nested again.

        Raises:
            ProfileError: ``HERMES_ACTORS_PROFILE`` holds a bad name.
        """
        env = os.environ if environ is None else environ
        value = env.get(_HOME_VARIABLE)
        base = (Path(value).expanduser() if value else Path.home() / ".hermes-actors").absolute()
        wanted = env.get(PROFILE_VARIABLE, "").strip()
        name = canonical_name(wanted) if wanted else DEFAULT_PROFILE
        if name != DEFAULT_PROFILE and base.name == name and base.parent.name == PROFILES_DIR:
            return cls(base.parent.parent, name)
        return cls(base, name)


def profile_names(root: Path) -> list[str]:
    """``default`` and every named profile under ``root`` (directories with a valid name), sorted (reads the
    disk)."""
    try:
        entries = sorted(entry.name for entry in (root / PROFILES_DIR).iterdir() if entry.is_dir())
    except FileNotFoundError:
        entries = []
    return [DEFAULT_PROFILE, *(name for name in entries if _NAME.fullmatch(name) and name not in _RESERVED)]


def _selected_for(home: Path, environ: Mapping[str, str] | None) -> Profile | None:
    """The profile the environment selects when ``home`` is its home, else None (a test's or the demo's
    home, given directly)."""
    selected = Profile.from_env(environ)
    return selected if os.path.realpath(selected.home) == os.path.realpath(home) else None


def hidden_root(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    """What a daemon of ``home`` hides whole from its sessions' jails.

    A named profile's daemon hides the default profile's home, which holds every profile's (its own too):
    no session of one profile reads another's ``.env``, config or store. The default profile's daemon
    hides its home, which holds ``profiles/``. A home the environment does not select is hidden alone.
    """
    selected = _selected_for(home, environ)
    return home if selected is None else selected.root


def profile_name_of(home: Path, environ: Mapping[str, str] | None = None) -> str:
    """The name of the profile a daemon of ``home`` serves (``default`` for a home the environment does not
    select)."""
    selected = _selected_for(home, environ)
    return DEFAULT_PROFILE if selected is None else selected.name
