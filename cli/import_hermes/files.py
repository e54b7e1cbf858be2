"""The files ``import-hermes`` brings over: ``config.yaml``, ``.env``, ``SOUL.md``, the memories and the skills.

Each is planned as a :class:`Placement` (what to write where) and then placed by :class:`Placer`, the one
place that decides what happens when ours exists already: the same content is left alone, other content
is kept unless ``--force``, which first renames ours to ``NAME.bak-<time>``. Nothing here ever writes
into the Hermes home: it is only read.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import yaml

from cli.import_hermes.report import Report
from config.errors import ConfigError
from config.hermes import HERMES_NOTE, HERMES_SYNONYMS
from config.loader import known_sections, load_config, load_env_file, parse_config_text
from config.tools import MemoryConfig

__all__ = ["Placement", "Placer", "plan_config", "plan_env", "plan_memories", "plan_skills", "plan_soul"]

# Hermes's memory files and our names for them (the same names, the same "§" separator: tools/memory.py).
_MEMORY_FILES = {"MEMORY.md": "memory", "USER.md": "user"}
_HERMES_SEPARATOR = "\n§\n"
# The top-level Hermes sections whose keys ours reads under platforms.<name> (config/hermes.py).
_PLATFORM_SECTIONS = ("telegram", "discord", "slack", "matrix", "mattermost")
_NOTE = re.compile("^" + re.escape(HERMES_NOTE).replace(r"\{key\}", r"(?P<key>\S+)").replace(r"\{why\}", "(?P<why>.*)") + "$")
_UNKNOWN = re.compile(r"^unknown key (?P<key>\S+) \(ignored\)")


@attrs.frozen
class Placement:
    """One thing to write into our home.

    Attributes:
        item: how the report names it (``config.yaml``, ``skill devops/deploy-notes``).
        target: where it goes, under our home.
        data: a file's bytes, or None for a directory copied from ``source``.
        source: the Hermes directory copied (a skill), when ``data`` is None.
        mode: a new file's permissions.
        detail: what the report says about it once placed.
    """

    item: str
    target: Path
    data: bytes | None = None
    source: Path | None = None
    mode: int = 0o644
    detail: str = ""


@attrs.define
class Placer:
    """Writes placements into our home, never over ours without ``force`` (and then after a backup)."""

    report: Report
    force: bool
    dry_run: bool
    stamp: str = attrs.Factory(lambda: time.strftime("%Y%m%d-%H%M%S"))

    def place(self, placement: Placement) -> None:
        """Write ``placement`` (or, with ``dry_run``, only report what would happen); one that cannot be
        written is reported as left, with the system's reason, and the import goes on."""
        try:
            self._place(placement)
        except OSError as exc:
            self.report.left(placement.item, f"not written: {exc.strerror or exc}")

    def _place(self, placement: Placement) -> None:
        target = placement.target
        if target.exists() or target.is_symlink():
            if self._same(placement):
                self.report.left(placement.item, f"already in {target}, the same")
                return
            if not self.force:
                self.report.left(placement.item, f"{target} exists and differs (kept; --force replaces it)", refused=True)
                return
            backup = target.with_name(f"{target.name}.bak-{self.stamp}")
            if not self.dry_run:
                target.rename(backup)
            self.report.changed(placement.item, f"replaced {target} (ours kept as {backup.name})")
        else:
            self.report.took(placement.item, placement.detail or str(target))
        if not self.dry_run:
            self._write(placement)

    @staticmethod
    def _same(placement: Placement) -> bool:
        try:
            if placement.data is None:
                assert placement.source is not None
                return _files(placement.target) == _files(placement.source)
            return placement.target.read_bytes() == placement.data
        except OSError:
            return False

    @staticmethod
    def _write(placement: Placement) -> None:
        target = placement.target
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if placement.data is None:
            assert placement.source is not None
            # Symbolic links are not followed: a skill's link could point anywhere on the Hermes host.
            shutil.copytree(placement.source, target, symlinks=True, ignore=_links)
            return
        temporary = target.with_name(f".{target.name}.import-{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, placement.mode)
        with os.fdopen(fd, "wb") as out:
            out.write(placement.data)
        os.replace(temporary, target)


def _files(directory: Path) -> dict[Path, bytes]:
    """The regular files under ``directory`` (links not followed), by relative path, with their bytes."""
    return {
        path.relative_to(directory): path.read_bytes()
        for path in directory.rglob("*")
        if path.is_file() and not path.is_symlink()
    }


def _links(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if os.path.islink(os.path.join(directory, name))]


def plan_config(source: Path, home: Path, report: Report) -> Placement | None:
    """Hermes's ``config.yaml`` as ours: the settings we share kept, Hermes's names for ours renamed, the
    settings we lack left (each with why, from the compatibility table ``config/hermes_keys.py``).

    The file written is checked by loading it as the daemon would; a file the daemon would refuse is left.
    """
    path = source / "config.yaml"
    if not path.is_file():
        return None
    try:
        data = parse_config_text(path.read_text(encoding="utf-8"), path)
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        found: list[str] = []
        ours = known_sections(data, found)
    except (ConfigError, OSError, UnicodeDecodeError) as exc:
        report.left("config.yaml", f"not read: {exc}")
        return None
    for hermes, our_key in HERMES_SYNONYMS.items():
        if _has(data, hermes):
            report.changed(f"config {hermes}", f"written as {our_key}")
    for name in _PLATFORM_SECTIONS:
        moved = sorted(set(_keys(data.get(name))) & set(_keys(ours.get("platforms", {}).get(name))))
        for key in moved:
            report.changed(f"config {name}.{key}", f"written as platforms.{name}.{key}")
    for note in found:
        if matched := _NOTE.match(note):
            report.left(f"config {matched['key']}", matched["why"])
        elif matched := _UNKNOWN.match(note):
            report.left(f"config {matched['key']}", "a key neither Hermes 0.19 nor hermes-actors reads")
        else:
            report.changed("config", note)
    header = (
        f"# Imported from {path} by `hermes-actors import-hermes`.\n"
        "# Hermes settings this project does not use were left out: the import's report lists each with why.\n"
    )
    text = header + yaml.safe_dump(ours, sort_keys=False, allow_unicode=True)
    problem = _refusal(text)
    if problem is not None:
        report.left("config.yaml", f"the daemon would refuse it: {problem}")
        return None
    return Placement("config.yaml", home / "config.yaml", text.encode("utf-8"), mode=0o600, detail="settings hermes-actors shares with Hermes")


def _refusal(text: str) -> str | None:
    """Why the daemon would refuse ``text`` as its config.yaml, or None."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hermes-import-") as scratch:
        Path(scratch, "config.yaml").write_text(text, encoding="utf-8")
        try:
            load_config(Path(scratch), log_warnings=False)
        except ConfigError as exc:
            return str(exc).replace(f"{scratch}/", "")
    return None


def _keys(block: object) -> list[str]:
    return [str(key) for key in block] if isinstance(block, dict) else []


def _has(data: dict[str, object], dotted: str) -> bool:
    node: object = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def plan_env(source: Path, home: Path, report: Report) -> Placement | None:
    """Hermes's ``.env`` (provider and bot keys) as ours, private (0600); the report names its keys, never a value."""
    path = source / ".env"
    if not path.is_file():
        return None
    data = _read(path, ".env", report)
    if data is None:
        return None
    names = sorted(load_env_file(source))
    return Placement(".env", home / ".env", data, mode=0o600, detail=f"keys {', '.join(names) or '(none)'}")


def _read(path: Path, item: str, report: Report) -> bytes | None:
    """``path``'s bytes; None (reported as left) when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as exc:
        report.left(item, f"cannot read {path}: {exc.strerror or exc}")
        return None


def plan_soul(source: Path, home: Path, report: Report) -> Placement | None:
    """Hermes's ``SOUL.md`` (the agent's identity): the same file, read the same way here."""
    path = source / "SOUL.md"
    data = _read(path, "SOUL.md", report) if path.is_file() else None
    return None if data is None else Placement("SOUL.md", home / "SOUL.md", data, detail="the agent's identity")


def plan_memories(source: Path, home: Path, config: MemoryConfig, report: Report) -> Iterator[Placement]:
    """Hermes's ``memories/MEMORY.md`` and ``USER.md``: the same format here, entry by entry checked as the
    memory tool checks a write (threat patterns, the store's character limit)."""
    from tools.threats import find_threats

    for name, target in _MEMORY_FILES.items():
        path = source / "memories" / name
        if not path.is_file():
            continue
        limit = config.memory_char_limit if target == "memory" else config.user_char_limit
        data = _read(path, name, report)
        if data is None:
            continue
        kept: list[str] = []
        for number, entry in enumerate(_entries(data.decode("utf-8", errors="replace")), 1):
            threats = find_threats(entry)
            if threats:
                report.left(f"{name} entry {number}", f"matches the threat patterns {', '.join(threats)}")
            elif len(_HERMES_SEPARATOR.join([*kept, entry])) > limit:
                report.left(f"{name} entry {number}", f"over memory's {limit:,}-character limit for {name}")
            else:
                kept.append(entry)
        if kept:
            text = _HERMES_SEPARATOR.join(kept)
            yield Placement(name, home / "memories" / name, text.encode("utf-8"), mode=0o600, detail=f"{len(kept)} entr{'y' if len(kept) == 1 else 'ies'}")


def _entries(text: str) -> list[str]:
    return [entry.strip() for entry in f"\n{text}\n".split(_HERMES_SEPARATOR) if entry.strip()]


def plan_skills(source: Path, home: Path, report: Report) -> Iterator[Placement]:
    """The user's skills (``skills/<category>/<name>/SKILL.md`` and their linked files), each checked as
    ``skills create`` checks one; Hermes's bundled copies and its hub's state are left."""
    from tools.skills.format import SkillFormatError, parse_skill
    from tools.threats import find_threats

    root = source / "skills"
    if not root.is_dir():
        return
    bundled = _bundled_names(root / ".bundled_manifest")
    for skill_file in sorted(root.rglob("SKILL.md")):
        relative = skill_file.parent.relative_to(root)
        item = f"skill {relative}"
        if any(part.startswith(".") for part in relative.parts) or skill_file.is_symlink():
            continue  # Hermes's hub state, archives and links: not the user's skills
        if skill_file.parent.name in bundled:
            report.left(item, "a skill bundled with Hermes (.bundled_manifest); hermes-actors ships its own")
            continue
        try:
            text = skill_file.read_text(encoding="utf-8")
            parse_skill(text)
        except (OSError, UnicodeDecodeError, SkillFormatError) as exc:
            report.left(item, f"not a valid SKILL.md: {exc}")
            continue
        threats = find_threats(text)
        if threats:
            report.left(item, f"matches the threat patterns {', '.join(threats)}")
            continue
        yield Placement(item, home / "skills" / relative, source=skill_file.parent, detail=str(home / "skills" / relative))


def _bundled_names(manifest: Path) -> set[str]:
    try:
        lines = manifest.read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    return {line.partition(":")[0].strip() for line in lines if line.strip()}
