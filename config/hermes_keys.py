"""The Hermes Agent settings this project does not implement, and what covers each instead.

Every key is one Hermes Agent 0.19.0 reads, as pinned from its wheel in ``tests/fixtures/hermes_0_19/``
(``config_defaults.json``: its ``DEFAULT_CONFIG``; ``config_extra_keys.json``: the CLI's own defaults, the
other top-level keys, the messaging gateway's per-platform keys); ``tests/config/test_compat_table.py``
fails on a key 0.19.0 does not have. Each key is a dotted pattern, matched segment by segment with shell
wildcards (``terminal.docker_*``); a pattern also covers everything under it. A whole section is listed
only where this project has no section of that name, so a typo in one of our sections is still reported
as an unknown key.
"""

from __future__ import annotations

__all__ = ["HERMES_UNUSED"]

_OTHER_SPEECH = "only OpenAI-compatible speech-to-text services are built here (stt.openai, stt.groq)"
_GATEWAY = (
    "a setting of Hermes's messaging gateway that is not built here; each built platform is configured under "
    "platforms.NAME (its rows in docs/HERMES_COMPAT.md), scheduled jobs with hermes-actors cron"
)
_BOT = "a setting of Hermes's chat bots that is not built here (the bots' own settings are listed in docs/HERMES_COMPAT.md)"
_BUILT_PLATFORMS_ONLY = "read for each platform built here (its platforms.NAME rows); the other platforms are not built here"
_EXTENSIONS = "not built here: MCP servers (mcp_servers) and skills (skills.*) are the extension points"
_NOT_BUILT = "not built here (no issue covers it)"
_ONE_AUXILIARY = "one auxiliary model serves every side task here (auxiliary.model / provider / base_url)"
_COMPRESSOR = "a knob of Hermes's own compressor; this one follows seed 002 section 7 (compression.*)"
_CLI_UI = "a setting of Hermes's terminal UI; this daemon's clients have none"
_TERMINAL_BACKENDS = "only the local shell runs commands here (the jail is sandbox.*); other backends are " + _NOT_BUILT
_PROMPT_BLOCKS = "extra prompt blocks are " + _NOT_BUILT
_PARENT_MODEL = "subagents use the parent's model here"
_WHATSAPP_BRIDGE = "Hermes's WhatsApp bridge (Baileys, a personal account) is not built here; the Cloud API is platforms.whatsapp_cloud"
_CHECKPOINT_PRUNING = (
    "checkpoints are pruned as they are taken (checkpoints.max_snapshots, checkpoints.max_total_size_mb); "
    "no sweep by age runs here"
)

# Hermes's messaging platforms other than those built here (api_server, telegram, discord, slack, matrix,
# mattermost, signal, email, whatsapp_cloud, webhook).
_OTHER_PLATFORMS = (
    "bluebubbles", "dingtalk", "feishu", "google_chat", "homeassistant", "irc", "line",
    "msgraph_webhook", "ntfy", "photon", "qqbot", "raft", "relay", "simplex",
    "sms", "teams", "wecom", "wecom_callback", "weixin", "whatsapp", "yuanbao",
)
# Keys the gateway reads in every platform's block that the platforms built here do not implement.
_PLATFORM_KEYS = (
    "allow_admin_from", "allowed_topics", "api_key", "channel_overrides",
    "channel_skill_bindings", "cron_continuable_surface", "exclusive_bot_mentions",
    "gateway_restart_notification", "group_allow_admin_from",
    "group_policy", "group_user_allowed_commands", "notice_delivery",
    "observe_unmentioned_group_messages", "reply_in_thread", "reply_prefix", "reply_to_mode", "typing_indicator",
    "typing_status_text", "unauthorized_dm_behavior", "user_allowed_commands",
)

HERMES_UNUSED: dict[str, str] = {
    # Sections and top-level keys this project does not have.
    "_config_version": "Hermes's own migration counter",
    "always_log_local": _GATEWAY,
    "bedrock": "AWS Bedrock is " + _NOT_BUILT,
    "browser.allow_private_urls": "guards Hermes's cloud browsers; the browser here is the session's own, limited by "
    "sandbox.network and browser.allowed_domains",
    "browser.allow_unsafe_evaluate": "browser_console's expression runs as given, in the session's jailed browser",
    "browser.auto_local_for_private_urls": "there is no cloud browser here: every page opens in the session's own",
    "browser.camofox": "the Camofox backend is " + _NOT_BUILT,
    "browser.cdp_url": "attaching to a running browser is " + _NOT_BUILT + "; without it Hermes offers no browser_cdp either",
    "browser.engine": "the browser is Chromium (browser.executable_path); Lightpanda is " + _NOT_BUILT,
    "browser.record_sessions": "session recordings are " + _NOT_BUILT,
    "browser.restrict_evaluate": "browser_console's expression runs as given, in the session's jailed browser",
    "checkpoints.auto_prune": _CHECKPOINT_PRUNING,
    "checkpoints.delete_orphans": _CHECKPOINT_PRUNING,
    "checkpoints.min_interval_hours": _CHECKPOINT_PRUNING,
    "checkpoints.retention_days": _CHECKPOINT_PRUNING,
    "computer_use": "computer-use tools are " + _NOT_BUILT,
    "context": "the context engine is the built-in compressor (compression.*)",
    "context_file_max_chars": "context files are capped at the seed's 20,000 characters",
    "cron": "scheduled jobs are hermes-actors cron and the cronjob tool here; a job's script has Hermes's 3,600 s "
    "timeout, with no key; the rest of Hermes's cron section tunes its own scheduler",
    "curator.min_idle_hours": "the curator runs beside the sessions (a job of its own, off every turn's path), "
    "so it waits for no idle time",
    "curator.prune_builtins": "the curator never touches bundled skills here: they change only with hermes-actors",
    "custom_providers": "named providers are " + _NOT_BUILT + "; use model.base_url and model.api_key_env",
    "dashboard": "the web dashboard is " + _NOT_BUILT,
    "desktop": "the desktop app is " + _NOT_BUILT,
    "discord": _BOT,
    "fallback_model": "use fallback_providers",
    "file_read_max_chars": "read_file's results are capped by tools.max_result_size_chars",
    "filter_silence_narration": _GATEWAY,
    "gateway": _GATEWAY,
    "goals": "/goal loops are " + _NOT_BUILT,
    "group_sessions_per_user": "use platforms.telegram.group_sessions_per_user and platforms.discord's",
    "honcho": "Honcho memory is " + _NOT_BUILT,
    "hooks.transform_*": "hooks that rewrite a tool's result or the reply are " + _NOT_BUILT,
    "hooks.pre_verify": "the verification loop is " + _NOT_BUILT,
    "hooks.*_api_request": "hooks around each provider request are " + _NOT_BUILT + " (a turn's hooks are pre_llm_call and post_llm_call)",
    "hooks.api_request_error": "hooks around each provider request are " + _NOT_BUILT,
    "hooks.on_session_finalize": "hooks on a session's reset or close are " + _NOT_BUILT,
    "hooks.on_session_reset": "hooks on a session's reset or close are " + _NOT_BUILT,
    "hooks.subagent_*": "hooks on subagents are " + _NOT_BUILT,
    "hooks.pre_gateway_dispatch": _GATEWAY,
    "hooks.kanban_*": "Kanban coordination is " + _NOT_BUILT,
    "hooks.output_spill": "a pre_llm_call hook's context is added whole here; none is spilled to a file",
    "hooks_auto_accept": (
        "no consent prompt here: the daemon has no terminal to ask at, and the hooks in config.yaml are the "
        "user's own, so they run"
    ),
    "human_delay": _GATEWAY,
    "image_gen": "image generation is " + _NOT_BUILT,
    "kanban": "Kanban coordination is " + _NOT_BUILT,
    "known_plugin_toolsets": "a loaded plugin's toolsets join every platform toolset; tools.disabled_toolsets removes one",
    "logging": "the daemon logs to HERMES_ACTORS_HOME/logs",
    "lsp": "language-server diagnostics are " + _NOT_BUILT,
    "matrix": _BOT,
    "mattermost": _BOT,
    "max_concurrent_sessions": "use daemon.max_running_turns",
    "max_live_sessions": "idle sessions leave memory after daemon.hibernate_after_seconds",
    "mcp": "serving Hermes's own tools over MCP is " + _NOT_BUILT + "; the MCP client is mcp_servers",
    "mcp_discovery_timeout": (
        "MCP discovery never holds a start here: each server connects on its own, within "
        "mcp_servers.NAME.connect_timeout"
    ),
    "moa": "mixture of agents is " + _NOT_BUILT,
    "model_catalog": "model catalogs are " + _NOT_BUILT,
    "multiplex_profiles": "a daemon serves one profile here; each profile runs its own (hermes-actors -p NAME)",
    "network": "forcing IPv4 is " + _NOT_BUILT,
    "onboarding": "first-run hints are " + _NOT_BUILT,
    "openrouter": "OpenRouter response caching is " + _NOT_BUILT,
    "paste_collapse_*": _CLI_UI,
    "personalities": "personalities are " + _NOT_BUILT,
    "platform_hints": _GATEWAY,
    "platform_toolsets": "use tools.enabled_toolsets",
    "prefill_messages_file": "prefill messages are " + _NOT_BUILT,
    "privacy": _GATEWAY,
    "profile_routes": "routing a chat to another profile is not built here: each profile's daemon runs its own bots",
    "providers": "named providers are " + _NOT_BUILT + "; use model.base_url and model.api_key_env",
    "quick_commands": "quick commands are " + _NOT_BUILT,
    "reset_triggers": _GATEWAY,
    "secrets": "external secret managers are " + _NOT_BUILT + "; keys come from the environment or .env",
    "security": "secrets are always redacted here, and the jail (sandbox.*) is the guard",
    "session_reset": "a session lasts until it is closed or reset by its client here",
    "sessions": "automatic pruning of old sessions is " + _NOT_BUILT,
    "signal": _BOT,
    "slack": _BOT,
    "smart_model_routing": "model routing is " + _NOT_BUILT,
    "telegram": _BOT,
    "thread_sessions_per_user": _GATEWAY,
    "toolsets": "use tools.enabled_toolsets (Hermes ignores this key too)",
    "tts": "text-to-speech is " + _NOT_BUILT,
    "unauthorized_dm_behavior": "use platforms.telegram.dm_policy and platforms.discord's",
    "updates": "updates come from the package manager",
    "vertex": "Google Vertex AI is " + _NOT_BUILT,
    "video_gen": "video generation is " + _NOT_BUILT,
    "voice": "voice mode is " + _NOT_BUILT,
    "whatsapp": _WHATSAPP_BRIDGE,
    "x_search": "X search (xAI) is " + _NOT_BUILT,
    # Hermes keys inside sections this project shares.
    "agent.coding_*": "the coding posture prompt is " + _NOT_BUILT,
    "agent.environment_*": "environment hints are " + _NOT_BUILT,
    "agent.gateway_*": _GATEWAY,
    "agent.image_input_mode": "use model.vision",
    "agent.intent_ack_continuation": _PROMPT_BLOCKS,
    "agent.local_stream_stale_timeout": "use streaming.stale_timeout_seconds",
    "agent.max_verify_nudges": "verify-on-stop is " + _NOT_BUILT,
    "agent.parallel_tool_call_guidance": _PROMPT_BLOCKS,
    "agent.personalities": "personalities are " + _NOT_BUILT,
    "agent.prefill_messages_file": "prefill messages are " + _NOT_BUILT,
    "agent.reasoning_*": "reasoning effort is " + _NOT_BUILT,
    "agent.restart_drain_timeout": "use daemon.shutdown_timeout_seconds",
    "agent.service_tier": "fast mode is " + _NOT_BUILT,
    "agent.system_prompt": "the system prompt is built as seed 002 says",
    "agent.task_completion_guidance": _PROMPT_BLOCKS,
    "agent.tool_use_enforcement": _PROMPT_BLOCKS,
    "agent.verbose": "the daemon's log level is set where it starts",
    "agent.verify_*": "verify-on-stop is " + _NOT_BUILT,
    "approvals.destructive_slash_confirm": _CLI_UI,
    "approvals.mcp_reload_confirm": "/reload-mcp always asks before it reloads here",
    "auxiliary.approval": _ONE_AUXILIARY,
    "auxiliary.background_review.api_key": "the review's key comes from its provider's usual place (.env, the credential pool)",
    "auxiliary.background_review.extra_body": "the review sends no per-task request options here",
    "auxiliary.background_review.reasoning_effort": "the review sends no per-task request options here",
    "auxiliary.compression.*": "of this block only provider, model and base_url are read (as auxiliary.*)",
    "auxiliary.curator.api_key": "the curator's key comes from its provider's usual place (.env, the credential pool)",
    "auxiliary.curator.extra_body": "the curator sends no per-task request options here",
    "auxiliary.curator.reasoning_effort": "the curator sends no per-task request options here",
    "auxiliary.goal_judge": _ONE_AUXILIARY,
    "auxiliary.kanban_decomposer": _ONE_AUXILIARY,
    "auxiliary.mcp": "MCP sampling (a server asking for a completion) is " + _NOT_BUILT,
    "auxiliary.memory_query_rewrite": _ONE_AUXILIARY,
    "auxiliary.moa_*": "mixture of agents is " + _NOT_BUILT,
    "auxiliary.monitor": _ONE_AUXILIARY,
    "auxiliary.profile_describer": _ONE_AUXILIARY,
    "auxiliary.skills_hub": _EXTENSIONS,
    "auxiliary.title_generation": _ONE_AUXILIARY,
    "auxiliary.transient_retries": "auxiliary calls are retried as retry.* says",
    "auxiliary.triage_specifier": _ONE_AUXILIARY,
    "auxiliary.tts_*": "text-to-speech is " + _NOT_BUILT,
    "auxiliary.vision": "vision tools are " + _NOT_BUILT,
    "auxiliary.web_extract": "web_extract calls no model here",
    "compression.abort_on_summary_failure": _COMPRESSOR,
    "compression.codex_*": _COMPRESSOR,
    "compression.hygiene_hard_message_limit": _GATEWAY,
    "compression.in_place": _COMPRESSOR,
    "delegation.api_key": _PARENT_MODEL,
    "delegation.api_mode": _PARENT_MODEL,
    "delegation.base_url": _PARENT_MODEL,
    "delegation.inherit_mcp_toolsets": "a subagent gets its parent's tools, MCP tools among them",
    "delegation.max_summary_chars": "a child's summary is capped as seed 002 says",
    "delegation.model": _PARENT_MODEL,
    "delegation.provider": _PARENT_MODEL,
    "delegation.reasoning_effort": "reasoning effort is " + _NOT_BUILT,
    "display.bell_on_*": _CLI_UI,
    "display.busy_steer_ack_enabled": _CLI_UI,
    "display.cli_*": _CLI_UI,
    "display.compact": _CLI_UI,
    "display.copy_shortcut": _CLI_UI,
    "display.credits_notices": _CLI_UI,
    "display.ephemeral_system_ttl": _GATEWAY,
    "display.file_mutation_verifier": _CLI_UI,
    "display.final_response_markdown": _CLI_UI,
    "display.friendly_tool_labels": _CLI_UI,
    "display.inline_diffs": _CLI_UI,
    "display.interface": _CLI_UI,
    "display.interim_assistant_messages": _GATEWAY,
    "display.language": _CLI_UI,
    "display.persist*": _CLI_UI,
    "display.personality": "personalities are " + _NOT_BUILT,
    "display.pet": _CLI_UI,
    "display.platforms": _GATEWAY,
    "display.reasoning_*": _CLI_UI,
    "display.resume_*": _CLI_UI,
    "display.runtime_footer": _GATEWAY,
    "display.show_*": _CLI_UI,
    "display.skin": _CLI_UI,
    "display.status_phrases": _CLI_UI,
    "display.streaming": _CLI_UI,
    "display.timestamp*": _CLI_UI,
    "display.tool_p*": _CLI_UI,
    "display.tui_*": _CLI_UI,
    "display.turn_*": _CLI_UI,
    "display.user_message_preview": _CLI_UI,
    "memory.provider": "external memory providers are " + _NOT_BUILT,
    "memory.write_approval": "memory writes are not staged for approval here",
    "model.api_key": "keys are read from the environment or .env only: set model.api_key_env",
    "platforms.api_server.dm_policy": _BOT,
    "platforms.api_server.extra": "only the key (platforms.api_server.extra.key) is read here",
    "platforms.api_server.home_channel": _BOT,
    "platforms.api_server.require_mention": _BOT,
    "platforms.api_server.token": "use platforms.api_server.key",
    "platforms.email.extra": (
        "address, imap_host, smtp_host and skip_attachments are read (as platforms.email.*); "
        "require_authenticated_sender and authserv_id are not: SPF, DKIM and DMARC are the mail server's to check, "
        "and platforms.email.check_envelope refuses a mail whose Return-Path is not in its From's domain"
    ),
    "platforms.email.extra.require_authenticated_sender": (
        "SPF, DKIM and DMARC are the receiving mail server's to check here; the bot trusts a mail whose envelope "
        "sender (Return-Path) is in its From's domain"
    ),
    "platforms.email.extra.authserv_id": "Authentication-Results are not read here (see require_authenticated_sender)",
    "platforms.webhook.extra": "only routes, rate_limit and max_body_bytes are read here (as platforms.webhook.*); the hooks"
    " are served on platforms.api_server's host and port, and each route has its own secret",
    **{f"platforms.{name}": _GATEWAY for name in _OTHER_PLATFORMS},
    "platforms.whatsapp": _WHATSAPP_BRIDGE,
    **{f"platforms.*.{key}": _BOT for key in _PLATFORM_KEYS},
    "platforms.*.allow_from": _BUILT_PLATFORMS_ONLY,
    "platforms.*.group_allow_from": _BUILT_PLATFORMS_ONLY,
    "platforms.*.group_allowed_chats": _BUILT_PLATFORMS_ONLY,
    "platforms.*.channel_prompts": _BUILT_PLATFORMS_ONLY,
    "platforms.*.free_response_channels": _BUILT_PLATFORMS_ONLY,
    "platforms.*.mention_patterns": _BUILT_PLATFORMS_ONLY,
    "platforms.*.allowed_chats": "Telegram's name (Hermes reads it there only), read as platforms.telegram.allowed_channels",
    "platforms.*.extra": _BOT,
    "skills.guard_agent_created": "every SKILL.md the agent writes is scanned here, always",
    "skills.inline_shell": "running a skill author's shell snippets on the host, unapproved and unjailed, is refused by design",
    "skills.inline_shell_timeout": "no inline shell in skills here (skills.inline_shell)",
    "skills.write_approval": "staged skill writes for review are " + _NOT_BUILT,
    "streaming.buffer_threshold": _GATEWAY,
    "streaming.cursor": _GATEWAY,
    "streaming.edit_interval": _GATEWAY,
    "streaming.enabled": _GATEWAY,
    "streaming.fresh_final_after_seconds": _GATEWAY,
    "streaming.transport": _GATEWAY,
    "terminal.auto_source_bashrc": "the shell starts as a login shell (seed 000)",
    "terminal.backend": _TERMINAL_BACKENDS,
    "terminal.container_*": _TERMINAL_BACKENDS,
    "terminal.cwd": "a session works in the directory its client gives (or platforms.api_server.cwd)",
    "terminal.daemon_term_grace_seconds": "use terminal.kill_grace_seconds",
    "terminal.daytona_*": _TERMINAL_BACKENDS,
    "terminal.docker_*": _TERMINAL_BACKENDS,
    "terminal.env_type": _TERMINAL_BACKENDS,
    "terminal.home_mode": "tools keep the user's HOME; the jail decides what is visible",
    "terminal.lifetime_seconds": _TERMINAL_BACKENDS,
    "terminal.modal_*": _TERMINAL_BACKENDS,
    "stt.deepinfra": _OTHER_SPEECH,
    "stt.elevenlabs": _OTHER_SPEECH,
    "stt.local": "no on-machine speech engine ships here; use stt.provider: openai or groq",
    "stt.mistral": _OTHER_SPEECH,
    "terminal.persistent_shell": _TERMINAL_BACKENDS,
    "terminal.shell_init_files": "the shell starts as a login shell (seed 000)",
    "terminal.singularity_image": _TERMINAL_BACKENDS,
    "tool_output.max_line_length": "read_file cuts a line at 2,000 characters (Hermes's default)",
    "tool_output.max_lines": "read_file's limit is bounded by its schema",
    "tools.tool_search": _EXTENSIONS,
    "web.extract_backend": "web_extract fetches pages itself here (no backend)",
}
"""Dotted Hermes key pattern -> why it does nothing here and what to use instead (or which issue covers it)."""
