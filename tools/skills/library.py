"""Where skills come from, and which one a name means.

Four sources, in order of precedence when two hold the same name: the project's (``.hermes/skills``
in the session's workspace), the user's (``HERMES_ACTORS_HOME/skills``), directories named in
``skills.external_dirs``, and the skills bundled with hermes-actors. Project and external skills are
scanned for prompt injection whenever they are read (a checkout is untrusted); one that trips the scan
is skipped and reported. A skill is ``<root>/<name>/SKILL.md``
or ``<root>/<category>/<name>/SKILL.md``. Only user skills may be changed by the agent. Discovery reads
the file system: call it from a worker thread.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Final

import attrs

from tools.skills.format import LINKED_DIRS, SKILL_FILE, SkillFormatError, SkillHeader, check_name, parse_skill
from tools.threats import find_threats

__all__ = [
    "BUNDLED_DIR",
    "Skill",
    "SkillCatalog",
    "SkillChangeRefused",
    "SkillRoots",
    "SkillSource",
    "discover",
    "find_skill",
    "linked_file",
    "linked_files",
]

log = logging.getLogger(__name__)

BUNDLED_DIR: Final = Path(__file__).parent / "bundled"
#: A SKILL.md bigger than this is not read (the format's limit is 100,000 characters).
_MAX_SKILL_BYTES: Final = 400_000
#: Parsed skills kept, by file (far more than a library holds: the bundled, user and project skills).
_PARSED_SKILLS_KEPT: Final = 1024
_GENERAL: Final = "general"


class SkillChangeRefused(SkillFormatError):
    """What the rules do not allow: changing a bundled or project skill, a taken name, a threat, a bad path."""


class SkillSource(enum.Enum):
    """Where a skill was found; only ``user`` skills are the agent's to change."""

    PROJECT = "project"
    USER = "user"
    EXTERNAL = "external"
    BUNDLED = "bundled"


# Skills that arrive with a checkout or from elsewhere are scanned as context files are, each time they are
# read; the agent's own are scanned when written, bundled ones are ours.
_SCANNED: Final = frozenset({SkillSource.PROJECT, SkillSource.EXTERNAL})


@attrs.frozen
class Skill:
    """A skill found on disk: its checked header, its source and its directory."""

    header: SkillHeader
    source: SkillSource
    directory: Path
    category: str

    @property
    def name(self) -> str:
        """The skill's name."""
        return self.header.name

    @property
    def editable(self) -> bool:
        """Whether the agent may edit or delete it."""
        return self.source is SkillSource.USER

    @property
    def unlocks_environment(self) -> bool:
        """Whether loading it lets its ``required_environment_variables`` into the session's processes.

        Not for project skills: they arrive with a checkout, and a stranger's SKILL.md naming
        ``ANTHROPIC_API_KEY`` would otherwise hand the user's secrets to whatever the repository runs.
        """
        return self.source is not SkillSource.PROJECT


@attrs.frozen
class SkillRoots:
    """The directories skills are read from, for one session.

    Attributes:
        user: ``HERMES_ACTORS_HOME/skills``; where the agent creates skills.
        project: ``.hermes/skills`` of the session's workspace, if it has one.
        external: ``skills.external_dirs``, read only.
        bundled: The skills shipped with hermes-actors.
    """

    user: Path
    project: Path | None = None
    external: tuple[Path, ...] = ()
    bundled: Path = BUNDLED_DIR

    @classmethod
    def for_session(cls, home: Path, workspace: str | os.PathLike[str], external: tuple[str, ...] = ()) -> SkillRoots:
        """The roots of a session whose home is ``home`` and whose workspace is ``workspace``."""
        return cls(
            user=home / "skills",
            project=Path(workspace) / ".hermes" / "skills",
            external=tuple(Path(os.path.expanduser(path)) for path in external),
        )

    def in_precedence(self) -> Iterator[tuple[SkillSource, Path]]:
        """Each root with its source, the one that wins a name collision first."""
        if self.project is not None:
            yield SkillSource.PROJECT, self.project
        yield SkillSource.USER, self.user
        for path in self.external:
            yield SkillSource.EXTERNAL, path
        yield SkillSource.BUNDLED, self.bundled


@attrs.frozen
class SkillCatalog:
    """The skills a session can see.

    Attributes:
        skills: By name, the one that wins each name, sorted by category then name.
        shadowed: Skills hidden by a same-named one of a higher source.
        problems: ``path: why`` for each SKILL.md that could not be read or broke the format.
    """

    skills: dict[str, Skill]
    shadowed: tuple[Skill, ...] = ()
    problems: tuple[str, ...] = ()

    def find(self, name: str) -> Skill | None:
        """The skill ``name`` means, or None."""
        return self.skills.get(name)

    def select(
        self, *, source: str | None = None, category: str | None = None, tag: str | None = None, query: str | None = None
    ) -> list[Skill]:
        """The skills matching every filter given: source (``"user"``), category, tag, and ``query``, a
        case-insensitive substring of the name or description."""
        needle = query.casefold() if query else None
        return [
            skill for skill in self.skills.values()
            if source in (None, skill.source.value)
            and category in (None, skill.category)
            and (tag is None or tag in skill.header.tags)
            and (needle is None or needle in skill.name or needle in skill.header.description.casefold())
        ]

    def holders(self, name: str) -> list[Skill]:
        """Every skill of that name, winner first (a name taken by any source cannot be created)."""
        return [skill for skill in (self.skills.get(name), *self.shadowed) if skill is not None and skill.name == name]


def discover(roots: SkillRoots) -> SkillCatalog:
    """Read every source's skills (blocking)."""
    found: dict[str, Skill] = {}
    shadowed: list[Skill] = []
    problems: list[str] = []
    for source, root in roots.in_precedence():
        shipped = source is SkillSource.BUNDLED and root == BUNDLED_DIR
        loaded, failed = _shipped() if shipped else _read_root(root, source)
        problems.extend(failed)
        for skill in loaded:
            if skill.name in found:
                shadowed.append(skill)
            else:
                found[skill.name] = skill
    if problems:
        log.info("skills: %d SKILL.md files skipped: %s", len(problems), "; ".join(problems))
    ordered = dict(sorted(found.items(), key=lambda item: (item[1].category, item[0])))
    return SkillCatalog(ordered, tuple(shadowed), tuple(problems))


def _read_root(root: Path, source: SkillSource) -> tuple[tuple[Skill, ...], tuple[str, ...]]:
    """The skills under ``root`` and ``path: why`` for each SKILL.md that could not be read."""
    loaded: list[Skill] = []
    problems: list[str] = []
    for skill_file, category in _skill_files(root):
        try:
            loaded.append(_load(skill_file, source, category))
        except (OSError, UnicodeDecodeError, SkillFormatError) as exc:
            problems.append(f"{skill_file}: {exc}")
    return tuple(loaded), tuple(problems)


@functools.cache
def _shipped() -> tuple[tuple[Skill, ...], tuple[str, ...]]:
    """The skills shipped with hermes-actors (:data:`BUNDLED_DIR`), read once per process: they change
    only with the package, and every new session lists them for its prompt (their scan was most of
    that listing)."""
    return _read_root(BUNDLED_DIR, SkillSource.BUNDLED)


def _skill_files(root: Path) -> Iterator[tuple[Path, str]]:
    """``(SKILL.md, category)`` for each skill directory under ``root``, one or two levels down."""
    for entry in _subdirectories(root):
        if (entry / SKILL_FILE).is_file():
            yield entry / SKILL_FILE, _GENERAL
            continue
        for inner in _subdirectories(entry):
            if (inner / SKILL_FILE).is_file():
                yield inner / SKILL_FILE, entry.name


def _subdirectories(path: Path) -> list[Path]:
    try:
        return sorted(Path(entry.path) for entry in os.scandir(path) if entry.is_dir() and not entry.name.startswith("."))
    except OSError:
        return []


def find_skill(roots: SkillRoots, name: str) -> Skill | None:
    """The skill ``name`` means, looked up by its directory (blocking): no other skill is read.

    A directory of that name that holds no valid skill is passed over, as :func:`discover` does.

    Raises:
        SkillFormatError: ``name`` is not a skill name (a path such as ``/x/y`` or ``../y`` would otherwise
            reach a SKILL.md anywhere on the host, outside every source and the session's jail).
    """
    check_name(name)
    for source, root in roots.in_precedence():
        candidates = [(root / name / SKILL_FILE, _GENERAL)]
        candidates += [(group / name / SKILL_FILE, group.name) for group in _subdirectories(root)]
        for skill_file, category in candidates:
            if skill_file.is_file():
                try:
                    return _load(skill_file, source, category)
                except (OSError, UnicodeDecodeError, SkillFormatError):
                    continue
    return None


def _load(skill_file: Path, source: SkillSource, category: str) -> Skill:
    stat = skill_file.stat()
    if stat.st_size > _MAX_SKILL_BYTES:
        raise SkillFormatError(f"larger than {_MAX_SKILL_BYTES:,} bytes")
    # Every new session lists the skills for its prompt: a file unchanged since it was last read is
    # not read, parsed and scanned again (an edit, even of the same size, changes its ctime).
    return _parsed(skill_file, source, category, (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))


@functools.lru_cache(maxsize=_PARSED_SKILLS_KEPT)
def _parsed(skill_file: Path, source: SkillSource, category: str, identity: tuple[int, ...]) -> Skill:
    """The skill in ``skill_file`` as it is while its file's ``identity`` (inode, size, times) holds."""
    text = skill_file.read_text(encoding="utf-8")
    header = parse_skill(text)
    if source in _SCANNED:
        threats = find_threats(text)
        if threats:
            raise SkillFormatError(f"blocked: it matches the threat patterns {', '.join(threats)}")
    if header.name != skill_file.parent.name:
        # A skill is found by its directory's name: the two must agree.
        raise SkillFormatError(f"its directory is {skill_file.parent.name!r} but it names the skill {header.name!r}")
    return Skill(header, source, skill_file.parent, header.category or category)


def linked_file(skill: Skill, raw: object) -> Path:
    """The path of the linked file ``raw`` (``scripts/check.sh``) of ``skill``, refused if it could be elsewhere.

    Raises:
        SkillChangeRefused: not relative, not under a linked-files directory, ``..`` in it, or through a symlink.
    """
    if not isinstance(raw, str) or not raw:
        raise SkillChangeRefused("'file_path' is required, e.g. 'scripts/check.sh'.")
    relative = PurePosixPath(raw)
    if relative.is_absolute() or ".." in relative.parts or len(relative.parts) < 2 or relative.parts[0] not in LINKED_DIRS:
        allowed = ", ".join(sorted(LINKED_DIRS))
        raise SkillChangeRefused(f"'file_path' {raw!r} must be a relative path under one of: {allowed}.")
    current = skill.directory
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise SkillChangeRefused(f"'file_path' {raw!r} goes through a symbolic link; it is refused.")
    return current


def linked_files(skill: Skill, limit: int = 200) -> dict[str, list[str]]:
    """The skill's linked files by directory (``{"scripts": ["scripts/check.sh"]}``), symlinks left out."""
    found: dict[str, list[str]] = {}
    count = 0
    for group in sorted(LINKED_DIRS):
        top = skill.directory / group
        if top.is_symlink() or not top.is_dir():
            continue
        for directory, subdirectories, files in os.walk(top):
            subdirectories[:] = sorted(d for d in subdirectories if not os.path.islink(os.path.join(directory, d)))
            for name in sorted(files):
                path = Path(directory, name)
                if path.is_symlink() or count >= limit:
                    continue
                found.setdefault(group, []).append(path.relative_to(skill.directory).as_posix())
                count += 1
    return found
