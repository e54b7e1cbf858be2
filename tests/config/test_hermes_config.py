"""A Hermes Agent ``config.yaml`` copied as-is loads here, with every shared setting honoured.

The file (``tests/fixtures/hermes_config.yaml``) is written from Hermes Agent's documented example; the
warnings a user sees tell a Hermes setting this project lacks from a typo, and our old key names still
work with a warning that names the new key.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from messages.chat import HumanMessage, SystemMessage
from cli.config_check import warn_config
from conversation.compression import find_boundaries
from config.errors import ConfigError
from config.hermes import apply_hermes_forms
from config.loader import Config, load_config
from providers.anthropic_messages import build_anthropic_kwargs
from providers.recovery import load_provider_keys
from providers.types import ChatRequest
from tests.daemon.helpers import run_cli
from tests.session_libs.messages import assistant, user

HERMES_FILE = Path(__file__).parents[1] / "fixtures" / "hermes_config.yaml"


def _load(home: Path, text: str | None = None) -> tuple[Config, list[str]]:
    if text is None:
        shutil.copy(HERMES_FILE, home / "config.yaml")
    else:
        (home / "config.yaml").write_text(text, encoding="utf-8")
    found: list[str] = []
    return load_config(home, warnings=found, log_warnings=False), found


def _chars(message: Any) -> int:
    return len(str(message))


@pytest.fixture
def hermes(tmp_path: Path) -> tuple[Config, list[str]]:
    return _load(tmp_path)


class TestHermesFileLoads:
    """Every setting both projects have arrives in our Config from a real Hermes config.yaml."""

    def test_model_and_providers(self, hermes: tuple[Config, list[str]]) -> None:
        config, _ = hermes
        assert config.model.default == "anthropic/claude-sonnet-4.6"
        assert config.model.base_url == "https://openrouter.ai/api/v1"
        assert config.model.context_length == 131072
        assert config.model.provider is None, "Hermes's 'auto' means: not chosen"
        assert [(f.provider, f.model) for f in config.fallback_providers] == [
            ("openrouter", "deepseek/deepseek-chat"), ("anthropic", "claude-haiku-4.5"),
        ]
        assert config.prompt_caching.cache_ttl == "1h"
        assert (config.auxiliary.provider, config.auxiliary.model) == ("openrouter", "google/gemini-3-flash-preview")

    def test_retries_compression_and_approvals(self, hermes: tuple[Config, list[str]]) -> None:
        config, _ = hermes
        assert config.agent.api_max_retries == 5
        assert config.retry.max_retries == 5, "the recovery layer reads the Hermes key's value"
        compression = config.compression
        assert (compression.threshold, compression.target_ratio, compression.protect_last_n) == (0.6, 0.3, 12)
        assert compression.protect_first_n == 2
        approvals = config.approvals
        assert (approvals.mode, approvals.timeout, approvals.cron_mode) == ("smart", 120, "approve")
        assert approvals.allow == ("recursive delete",), "Hermes's command_allowlist"

    def test_tools_sections(self, hermes: tuple[Config, list[str]]) -> None:
        config, _ = hermes
        assert config.terminal.max_output_bytes == 40000, "Hermes's tool_output.max_bytes"
        assert config.terminal.env_passthrough == ("GITHUB_TOKEN",)
        assert (config.code_execution.timeout, config.code_execution.max_tool_calls) == (200, 40)
        assert (config.memory.user_profile_enabled, config.memory.memory_char_limit, config.memory.user_char_limit) == (
            False, 3000, 1500,
        )
        assert config.display.busy_input_mode == "queue"

    def test_agent_and_delegation(self, hermes: tuple[Config, list[str]]) -> None:
        config, _ = hermes
        assert config.agent.max_turns == 120
        delegation = config.delegation
        assert (delegation.max_iterations, delegation.max_concurrent_children) == (100, 4)
        assert delegation.max_spawn_depth == 2
        assert delegation.child_timeout_seconds is None, "Hermes's 0 means no timeout"

    def test_api_server(self, hermes: tuple[Config, list[str]]) -> None:
        server = hermes[0].platforms.api_server
        assert server.enabled is True
        assert server.key == "a-long-enough-api-server-key", "Hermes's platforms.api_server.extra.key"
        assert server.max_concurrent_runs == 4, "Hermes's gateway.api_server.max_concurrent_runs"

    def test_hermes_settings_we_lack_are_named_as_such(self, hermes: tuple[Config, list[str]]) -> None:
        found = hermes[1]
        assert "Hermes setting tts is not used here" not in " ".join(found), "not in the file, not reported"
        assert any(w.startswith("Hermes setting kanban is not used here: Kanban coordination") for w in found)
        telegram = "Hermes setting platforms.telegram.reply_to_mode is not used here:"  # the rest is ours now
        assert any(w.startswith(telegram) and "platforms.telegram" in w for w in found)
        assert any(w.startswith("Hermes setting terminal.home_mode") and "the jail" in w for w in found)

    def test_no_key_of_the_file_is_unknown(self, hermes: tuple[Config, list[str]]) -> None:
        assert [w for w in hermes[1] if w.startswith("unknown key")] == []

    def test_terminal_timeout(self, hermes: tuple[Config, list[str]]) -> None:
        assert hermes[0].terminal.timeout == 240

    def test_web_extract_char_limit(self, hermes: tuple[Config, list[str]]) -> None:
        assert hermes[0].web.extract_char_limit == 15000

    def test_guardrail_thresholds(self, hermes: tuple[Config, list[str]]) -> None:
        guardrails: Any = hermes[0].tool_loop_guardrails
        assert guardrails.hard_stop_enabled is True
        assert (guardrails.warn_after.exact_failure, guardrails.hard_stop_after.same_tool_failure) == (3, 9)


class TestWarningsTellHermesFromTypos:
    """A Hermes key this project lacks says so and what covers it; anything else is an unknown key."""

    def test_a_hermes_key_in_a_shared_section(self, tmp_path: Path) -> None:
        _, found = _load(tmp_path, "compression:\n  in_place: false\n  treshold: 0.4\n")
        assert found == [
            "Hermes setting compression.in_place is not used here: "
            "a knob of Hermes's own compressor; this one follows seed 002 section 7 (compression.*)",
            "unknown key compression.treshold (ignored): did you mean compression.threshold?",
        ]

    def test_a_whole_hermes_section_is_one_warning(self, tmp_path: Path) -> None:
        _, found = _load(tmp_path, "kanban:\n  failure_limit: 3\n  enabled: true\n")
        assert len(found) == 1 and found[0].startswith("Hermes setting kanban is not used here")

    def test_an_unknown_section_is_one_warning(self, tmp_path: Path) -> None:
        _, found = _load(tmp_path, "modle:\n  default: x\n")
        assert found == ["unknown key modle (ignored): did you mean model?"]

    def test_a_section_holding_hermes_keys_is_reported_key_by_key(self, tmp_path: Path) -> None:
        _, found = _load(tmp_path, "tool_output:\n  max_lines: 500\n  max_linez: 3\n")
        assert found == [
            "Hermes setting tool_output.max_lines is not used here: read_file's limit is bounded by its schema",
            "unknown key tool_output.max_linez (ignored)",
        ]

    def test_a_list_entry_names_its_index(self, tmp_path: Path) -> None:
        _, found = _load(tmp_path, "fallback_providers:\n  - {provider: openai, model: m, colour: red}\n")
        assert found == ["unknown key fallback_providers[0].colour (ignored)"]


class TestHermesForms:
    """Values Hermes writes its own way mean here what they mean there."""

    def test_model_as_a_bare_string(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "model: openai/gpt-5\n")
        assert (config.model.default, found) == ("openai/gpt-5", [])

    def test_an_empty_section_is_its_defaults(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "skills:\nagent:\n  max_turns: 7\ncompression:\n")
        assert (config.skills, config.agent.max_turns, found) == (Config().skills, 7, [])

    def test_model_key_model_is_default(self, tmp_path: Path) -> None:
        config, _ = _load(tmp_path, "model:\n  model: openai/gpt-5\n  provider: ''\n  base_url: ''\n")
        assert (config.model.default, config.model.provider, config.model.base_url) == ("openai/gpt-5", None, None)

    def test_model_key_name_is_default_after_model(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "model:\n  name: openai/gpt-5\n")
        assert (config.model.default, found) == ("openai/gpt-5", [])
        config, found = _load(tmp_path, "model:\n  model: openai/gpt-5\n  name: openai/gpt-4\n")
        assert (config.model.default, found) == ("openai/gpt-5", ["Hermes key model.name ignored: model.default is set too"])

    def test_our_own_key_wins_over_its_hermes_synonym(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "terminal: {max_output_bytes: 30000}\ntool_output: {max_bytes: 9000}\n")
        assert config.terminal.max_output_bytes == 30000
        assert found == ["Hermes key tool_output.max_bytes ignored: terminal.max_output_bytes is set too"]

    @pytest.mark.parametrize(
        ("mode", "expected"),
        [
            ("strict", []),
            ("project", ["code_execution.mode 'project' is not honoured: execute_code always runs in a temporary "
                         "directory (seed 000), as Hermes's 'strict' does"]),
            ("sandbox", ["code_execution.mode 'sandbox' is not a mode (Hermes has 'strict' and 'project'; ignored)"]),
        ],
    )
    def test_code_execution_mode(self, tmp_path: Path, mode: str, expected: list[str]) -> None:
        config, found = _load(tmp_path, f"code_execution:\n  mode: {mode}\n  timeout: 60\n")
        assert (config.code_execution.timeout, found) == (60, expected)


class TestDeprecatedNames:
    """Our old key names still load, read under the new name, with a warning naming it."""

    def test_old_names_arrive_under_the_new_ones(self, tmp_path: Path) -> None:
        text = "retry:\n  max_retries: 7\ncompression:\n  tail_ratio: 0.4\napprovals:\n  timeout_seconds: 30\n"
        config, found = _load(tmp_path, text)
        assert (config.retry.max_retries, config.agent.api_max_retries) == (7, 7)
        assert (config.compression.target_ratio, config.approvals.timeout) == (0.4, 30)
        assert found == [
            "deprecated key approvals.timeout_seconds: use approvals.timeout (read as approvals.timeout this time)",
            "deprecated key compression.tail_ratio: use compression.target_ratio "
            "(read as compression.target_ratio this time)",
            "deprecated key retry.max_retries: use agent.api_max_retries (read as agent.api_max_retries this time)",
        ]

    def test_config_check_shows_them(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("compression:\n  tail_ratio: 0.3\nmcp_servers: {}\n", encoding="utf-8")
        result = run_cli(tmp_path, "config", "check")
        assert result.returncode == 0, result.stderr
        assert "deprecated key compression.tail_ratio: use compression.target_ratio" in result.stderr
        assert "unknown key" not in result.stderr

    def test_config_check_shows_a_hermes_file(self, tmp_path: Path) -> None:
        shutil.copy(HERMES_FILE, tmp_path / "config.yaml")
        result = run_cli(tmp_path, "config", "check")
        assert result.returncode == 0, result.stderr
        assert "Hermes setting kanban is not used here" in result.stderr


class TestProtectLastN:
    """compression.protect_last_n keeps that many recent messages in the tail, whatever they cost."""

    def test_the_tail_keeps_protect_last_n_messages(self, tmp_path: Path) -> None:
        config, _ = _load(tmp_path, "compression:\n  protect_last_n: 6\n")
        history = [user("start")] + [assistant("a long answer " * 50) if i % 2 else user(f"q{i}") for i in range(20)]
        bounds = find_boundaries(
            history, protect_first_n=1, tail_budget=1, tokens=_chars, min_tail=config.compression.protect_last_n
        )
        assert len(history) - bounds.tail_start == 6
        seed_default = find_boundaries(history, protect_first_n=1, tail_budget=1, tokens=_chars)
        assert len(history) - seed_default.tail_start == Config().compression.protect_last_n == 3


class TestHermesSettingsHonoured:
    """Hermes settings that needed more than a new name work as Hermes describes them."""

    def test_credential_pool_strategies_per_provider(self, tmp_path: Path) -> None:
        text = (
            "credential_pool_strategies:\n  openrouter: round_robin\n"
            "credential_pool:\n  extra_keys: {openrouter: [OR_2], openai: [OA_2]}\n"
        )
        config, found = _load(tmp_path, text)
        assert found == []
        env = {"OPENROUTER_API_KEY": "or-1", "OR_2": "or-2", "OPENAI_API_KEY": "oa-1", "OA_2": "oa-2"}
        pools = load_provider_keys(config, env).pools
        assert (pools["openrouter"].strategy, pools["openai"].strategy) == ("round_robin", "fill_first")

    @pytest.mark.parametrize("written", ["off", "false", "none", "'disabled'", "null"])
    def test_prompt_caching_off_sends_no_breakpoints(self, tmp_path: Path, written: str) -> None:
        config, _ = _load(tmp_path, f"prompt_caching:\n  cache_ttl: {written}\n")
        assert config.prompt_caching.cache_ttl is None
        messages = [SystemMessage("rules"), HumanMessage("hi")]
        off = build_anthropic_kwargs(ChatRequest(messages, [], "m", cache_ttl=config.prompt_caching.cache_ttl), 1000)
        on = build_anthropic_kwargs(ChatRequest(messages, [], "m"), 1000)
        assert "cache_control" not in json.dumps(off) and "cache_control" in json.dumps(on)

    def test_a_ttl_that_is_not_one_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="prompt_caching"):
            _load(tmp_path, "prompt_caching:\n  cache_ttl: 2h\n")


class TestHermesValuesNotBuiltHere:
    """A Hermes value naming something not built here leaves our default, with a note; the file loads."""

    @pytest.mark.parametrize("written", ["unlimited", "inf"])
    def test_unlimited_turns(self, tmp_path: Path, written: str) -> None:
        config, found = _load(tmp_path, f"agent:\n  max_turns: {written}\n")
        assert config.agent.max_turns == Config().agent.max_turns == 90
        assert len(found) == 1 and found[0].startswith("agent.max_turns") and "90" in found[0]
        assert "unlimited in Hermes" not in found[0], "Hermes 0.19.0 has no unlimited budget"

    def test_null_turns_are_the_default_silently(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "agent:\n  max_turns: null\n")
        assert (config.agent.max_turns, found) == (90, [])

    def test_a_hermes_web_backend(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "web:\n  backend: firecrawl\n")
        assert config.web.backend == "auto"
        assert found == [
            "web.backend 'firecrawl' is a Hermes backend not built here: web.backend stays 'auto' (SearXNG or Brave)"
        ]

    def test_a_list_where_a_value_is_expected_is_still_an_error(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="web.backend"):
            _load(tmp_path, "web:\n  backend: [brave]\n")


class TestClientsCountHermesNotes:
    """chat and status say how many Hermes settings are unused in one line; a real typo is still listed."""

    def test_one_line_for_the_hermes_settings(self, tmp_path: Path) -> None:
        shutil.copy(HERMES_FILE, tmp_path / "config.yaml")
        with (tmp_path / "config.yaml").open("a", encoding="utf-8") as file:
            file.write("modle: {default: x}\n")
        out = io.StringIO()
        assert warn_config(tmp_path, out) is False, "the typo is a warning"
        lines = out.getvalue().splitlines()
        assert [line for line in lines if "modle" in line] == [
            f"hermes-actors: warning: {tmp_path / 'config.yaml'}: unknown key modle (ignored): did you mean model?"
        ]
        notes = [line for line in lines if line.startswith("hermes-actors: note:")]
        assert len(notes) == 1 and "Hermes Agent settings not used here" in notes[0], lines
        assert not any("Hermes setting kanban" in line for line in lines)

    def test_only_hermes_notes_are_no_warning(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("tts: {provider: edge}\n", encoding="utf-8")
        out = io.StringIO()
        assert warn_config(tmp_path, out) is True
        assert out.getvalue() == (
            f"hermes-actors: note: {tmp_path / 'config.yaml'}: 1 Hermes Agent setting not used here "
            "(`hermes-actors config check` lists them)\n"
        )


class TestAuxiliaryCompressionBlock:
    """Hermes's auxiliary.compression block names our auxiliary model; its other keys are reported."""

    def test_fold_and_report(self, tmp_path: Path) -> None:
        text = "auxiliary:\n  compression:\n    provider: auto\n    model: cheap-model\n    timeout: 60\n"
        config, found = _load(tmp_path, text)
        assert (config.auxiliary.model, config.auxiliary.provider) == ("cheap-model", None)
        assert found == [
            "Hermes setting auxiliary.compression.timeout is not used here: "
            "of this block only provider, model and base_url are read (as auxiliary.*)"
        ]

    def test_our_own_keys_win(self, tmp_path: Path) -> None:
        config, found = _load(tmp_path, "auxiliary:\n  model: ours\n  compression: {model: theirs}\n")
        assert (config.auxiliary.model, found) == ("ours", [])


class TestHermesProviderNames:
    """Hermes's local-server provider names are ours; one this project lacks is refused, naming ours."""

    def test_local_servers_are_custom(self, tmp_path: Path) -> None:
        text = (
            "model:\n  provider: lmstudio\n  default: qwen\n"
            "fallback_providers:\n  - {provider: ollama, model: m, base_url: 'http://h:11434/v1'}\n"
        )
        config, found = _load(tmp_path, text)
        assert (config.model.provider, config.model.base_url) == ("custom", "http://127.0.0.1:1234/v1")
        fallback = config.fallback_providers[0]
        assert (fallback.provider, fallback.base_url) == ("custom", "http://h:11434/v1")
        assert found == []

    def test_a_provider_we_lack_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"model.provider 'nous' is not a provider here \(known: openai, "):
            _load(tmp_path, "model:\n  provider: nous\n")

    def test_the_callers_mapping_is_left_alone(self) -> None:
        data = {"model": {"provider": "vllm"}, "fallback_providers": [{"provider": "llamacpp", "model": "m"}]}
        apply_hermes_forms(data, [])
        assert data == {"model": {"provider": "vllm"}, "fallback_providers": [{"provider": "llamacpp", "model": "m"}]}


class TestEnvironmentReferences:
    """${NAME} in a value is read from the environment or .env, as Hermes does; an unset name is named."""

    def test_expanded_from_dot_env(self, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text("LLM_HOST=http://10.0.0.5:8000\n", encoding="utf-8")
        config, found = _load(tmp_path, "model:\n  base_url: '${LLM_HOST}/v1'\n  default: m\n")
        assert (config.model.base_url, found) == ("http://10.0.0.5:8000/v1", [])

    def test_an_unset_name_stays_and_is_named(self, tmp_path: Path) -> None:
        text = "fallback_providers:\n  - {provider: custom, model: m, base_url: '${NOT_SET_HERE_X}'}\n"
        config, found = _load(tmp_path, text)
        assert config.fallback_providers[0].base_url == "${NOT_SET_HERE_X}"
        assert found == ["fallback_providers[0].base_url names ${NOT_SET_HERE_X}, which is not set (left as written)"]
