"""System prompt assembly, once per session (docs/DECISIONS.md#d-system-prompt).

The prompt is built when a session starts and then reused unchanged: rebuilding it mid-session would
break the provider's prompt cache (per-turn material, such as memory a provider recalls, would go into
the user message instead; there is no memory provider yet). Layers, in order: identity (``SOUL.md`` under the home
directory, else the default), platform hint, environment hint, tool-use enforcement for model families
that need it, behavioural guidance for the tools present, the skills index (when the skill tools are
present), project context files, memory block, and last the session line (:func:`session_line`): the day
the conversation started, the model and its provider, as Hermes Agent ends its prompt. It carries the
day and not the time, as Hermes's does, so that the one prompt stays byte-identical all day and across
restarts, and the provider keeps its cached prefix.
"""

from __future__ import annotations

import datetime
import os
import platform as host_platform
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs
import trio

from conversation.prompt.context_files import (
    CONTEXT_FILES_HEADER_SEPARATOR,
    ThreatScanner,
    blocked_line,
    load_context_files,
    truncate_middle,
)
from conversation.prompt.texts import (
    CONTEXT_FILES_HEADER,
    DEFAULT_IDENTITY,
    LEAF_CHILDREN_NOTE,
    MEMORY_GUIDANCE,
    OPENAI_EXECUTION_GUIDANCE,
    ORCHESTRATOR_ADDENDUM,
    PLATFORM_HINTS,
    SESSION_SEARCH_GUIDANCE,
    SUBAGENT_TEMPLATE,
    TOOL_USE_ENFORCEMENT,
)
from tools.skills import SkillRoots, discover, skills_prompt_section
from tools.threats import find_threats

# Model-name fragments of families that tend to describe actions instead of taking them.
ENFORCEMENT_MODEL_MARKERS = ("gpt", "gemini", "grok", "glm")
OPENAI_MODEL_MARKERS = ("gpt", "codex")

MemoryBlock = Callable[[Path], str]


def _model_matches(model: str, markers: tuple[str, ...]) -> bool:
    name = model.lower().rsplit("/", 1)[-1]
    return any(marker in name for marker in markers)


def needs_tool_use_enforcement(model: str) -> bool:
    """Whether ``model`` (optionally ``vendor/model``) belongs to a GPT, Gemini, Grok or GLM family."""
    return _model_matches(model, ENFORCEMENT_MODEL_MARKERS)


def _name_set(names: Iterable[str]) -> frozenset[str]:
    """The converter of a set of tool names (typed: a bare ``frozenset`` leaves the field's type unsolved)."""
    return frozenset(names)


@attrs.frozen
class PromptSpec:
    """Everything the system prompt depends on; equal specs give equal prompts."""

    # HERMES_ACTORS_HOME: where SOUL.md and the memory files live.
    home: Path
    # The working directory of the client that started the session.
    cwd: Path
    model: str
    # The model's provider as configured (``anthropic``, ``custom`` ...), named in the session line.
    provider: str = "openai"
    # The day the conversation started (the daemon's local date), named in the session line.
    started: datetime.date = attrs.field(factory=datetime.date.today)
    platform: str = attrs.field(default="cli", validator=attrs.validators.in_(tuple(PLATFORM_HINTS)))
    # Names of the tools frozen for this session; guidance is given only for tools that exist.
    tool_names: frozenset[str] = attrs.field(default=frozenset(), converter=_name_set)
    # The user's home directory shown in the environment hint (default: the daemon's).
    user_home: Path | None = None
    load_context_files: bool = True
    # ``skills.external_dirs``: more skill directories for the skills index.
    skills_external: tuple[str, ...] = attrs.field(default=(), converter=tuple[str, ...])


def environment_hint(spec: PromptSpec) -> str:
    """Host OS, user home and working directory, so the model uses real paths."""
    user_home = spec.user_home if spec.user_home is not None else Path.home()
    system = host_platform.system() or os.name
    return (
        f"Host: {system} ({host_platform.release()})\n"
        f"User home directory: {user_home}\n"
        f"Current working directory: {spec.cwd}"
    )


def session_line(started: datetime.date, model: str, provider: str) -> str:
    """The prompt's closing lines, as Hermes's: the day the conversation started, the model, the provider."""
    return f"Conversation started: {started:%A, %B %d, %Y}\nModel: {model}\nProvider: {provider}"


def _identity(home: Path, scan: ThreatScanner) -> str:
    soul = home / "SOUL.md"
    if not soul.is_file():
        return DEFAULT_IDENTITY
    text = soul.read_text(encoding="utf-8", errors="replace").strip()
    if not text:
        return DEFAULT_IDENTITY
    threats = scan(text)
    if threats:
        return f"{DEFAULT_IDENTITY}\n\n{blocked_line('SOUL.md', threats)}"
    return truncate_middle(text, "SOUL.md")[0]


def _context_section(spec: PromptSpec, scan: ThreatScanner) -> str:
    if not spec.load_context_files:
        return ""
    files = load_context_files(spec.cwd, scan=scan)
    if not files:
        return ""
    body = CONTEXT_FILES_HEADER_SEPARATOR.join(f"## {f.name}\n\n{f.content}" for f in files)
    return f"{CONTEXT_FILES_HEADER}\n\n{body}"


def assemble_system_prompt(spec: PromptSpec, *, memory: str = "", scan: ThreatScanner = find_threats) -> str:
    """Build the system prompt, reading files on the calling thread (use :func:`build_system_prompt` from Trio).

    Args:
        spec: what the prompt depends on.
        memory: the memory block (MEMORY.md and USER.md), placed before the session line.
        scan: the threat scanner applied to SOUL.md and context files.
    """
    layers = [_identity(spec.home, scan), PLATFORM_HINTS[spec.platform], environment_hint(spec)]
    if needs_tool_use_enforcement(spec.model):
        layers.append(TOOL_USE_ENFORCEMENT)
        if _model_matches(spec.model, OPENAI_MODEL_MARKERS):
            layers.append(OPENAI_EXECUTION_GUIDANCE)
    if "memory" in spec.tool_names:
        layers.append(MEMORY_GUIDANCE)
    if "session_search" in spec.tool_names:
        layers.append(SESSION_SEARCH_GUIDANCE)
    if "skill_view" in spec.tool_names:
        layers.append(skills_prompt_section(discover(SkillRoots.for_session(spec.home, spec.cwd, spec.skills_external))))
    layers.append(_context_section(spec, scan))
    layers.append(memory)
    layers.append(session_line(spec.started, spec.model, spec.provider))
    return "\n\n".join(layer.strip() for layer in layers if layer and layer.strip())


async def build_system_prompt(spec: PromptSpec, *, memory_block: MemoryBlock | None = None, scan: ThreatScanner = find_threats) -> str:
    """Build the session's system prompt with all file reads, the memory block's too, in one worker thread.

    Args:
        spec: what the prompt depends on.
        memory_block: blocking ``home -> block`` such as ``MemoryStore(home).prompt_block_blocking`` (MEMORY.md
            and USER.md with usage indicators), or ``None`` when memory is off.
        scan: the threat scanner applied to SOUL.md and context files.
    """

    def build() -> str:
        memory = "" if memory_block is None else memory_block(spec.home)
        return assemble_system_prompt(spec, memory=memory, scan=scan)

    return await trio.to_thread.run_sync(build)


def build_subagent_prompt(
    goal: str,
    context: str | None,
    workspace_path: str | Path,
    *,
    orchestrator: bool = False,
    child_depth: int = 1,
    max_spawn_depth: int = 1,
) -> str:
    """The focused system prompt of a delegated child (docs/DECISIONS.md#d-system-prompt).

    An orchestrator child also gets the spawning guidance with its depth and the tree's depth limit.
    """
    prompt = SUBAGENT_TEMPLATE.format(
        goal=goal.strip(),
        context=(context or "").strip() or "(none given)",
        workspace_path=workspace_path,
    )
    if not orchestrator:
        return prompt
    addendum = ORCHESTRATOR_ADDENDUM.format(child_depth=child_depth, max_spawn_depth=max_spawn_depth)
    if child_depth + 1 >= max_spawn_depth:
        addendum = f"{addendum} {LEAF_CHILDREN_NOTE}"
    return f"{prompt}\n\n{addendum}"
