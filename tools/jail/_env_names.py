"""The variable names the environment filter knows by name: Hermes's blocklist, and known non-secrets.

``HERMES_BLOCKLIST`` follows Hermes Agent's ``tools/environments/local.py``, which keeps from its
terminal's processes the credentials and endpoints of its model providers, the keys of its tools
and the settings of its messaging gateway. Hermes derives part of that list from its provider
registry and its table of optional variables; ours is written out. Many of these names also carry a
secret marker (``_API_KEY``, ``_TOKEN``); the list matters most for those that do not: a provider's
base URL, a gateway's home channel, an account address.

``KNOWN_NOT_SECRET`` holds names that contain a secret marker by accident and hold no credential:
the sockets and cookies files of the user's agents and desktop session (``SSH_AUTH_SOCK``,
``XAUTHORITY``), author names, keyboard settings. Dropping them breaks ``git push`` through an
ssh-agent, X11 and D-Bus programs, and commits.
"""

from __future__ import annotations

__all__ = ["HERMES_BLOCKLIST", "KNOWN_NOT_SECRET"]

_PROVIDERS: frozenset[str] = frozenset(
    {"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORG_ID", "OPENAI_ORGANIZATION",
     "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_TOKEN",
     "CLAUDE_CODE_OAUTH_TOKEN", "NOUS_API_KEY", "NOUS_BASE_URL", "LLM_MODEL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
     "GEMINI_BASE_URL", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "MISTRAL_API_KEY", "GROQ_API_KEY",
     "TOGETHER_API_KEY", "PERPLEXITY_API_KEY", "COHERE_API_KEY", "FIREWORKS_API_KEY", "XAI_API_KEY",
     "HELICONE_API_KEY", "GLM_API_KEY", "GLM_BASE_URL", "ZAI_API_KEY", "KIMI_API_KEY", "KIMI_BASE_URL",
     "MINIMAX_API_KEY", "MINIMAX_BASE_URL", "MINIMAX_CN_API_KEY", "MINIMAX_CN_BASE_URL", "HF_TOKEN",
     "NVIDIA_API_KEY", "NVIDIA_BASE_URL", "XIAOMI_API_KEY", "ARCEEAI_API_KEY", "OLLAMA_API_KEY",
     "DEEPINFRA_API_KEY", "KILOCODE_API_KEY", "AI_GATEWAY_API_KEY", "LM_API_KEY", "AZURE_OPENAI_API_KEY",
     "AZURE_OPENAI_ENDPOINT", "COPILOT_GITHUB_TOKEN"}
)  # fmt: skip

_TOOLS: frozenset[str] = frozenset(
    {"PARALLEL_API_KEY", "FIRECRAWL_API_KEY", "FIRECRAWL_API_URL", "EXA_API_KEY", "TAVILY_API_KEY",
     "BRAVE_API_KEY", "SEARXNG_URL", "BROWSERBASE_API_KEY", "BROWSERBASE_PROJECT_ID", "FAL_KEY",
     "ELEVENLABS_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "HONCHO_API_KEY", "GH_TOKEN", "GITHUB_APP_ID",
     "GITHUB_APP_PRIVATE_KEY_PATH", "GITHUB_APP_INSTALLATION_ID", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET",
     "DAYTONA_API_KEY", "VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_PROJECT_ID", "VERCEL_TEAM_ID",
     "SUDO_PASSWORD"}
)  # fmt: skip

_MESSAGING: frozenset[str] = frozenset(
    {"TELEGRAM_BOT_TOKEN", "TELEGRAM_ALLOWED_USERS", "TELEGRAM_HOME_CHANNEL", "TELEGRAM_HOME_CHANNEL_NAME",
     "DISCORD_BOT_TOKEN", "DISCORD_ALLOWED_USERS", "DISCORD_HOME_CHANNEL", "DISCORD_HOME_CHANNEL_NAME",
     "DISCORD_REQUIRE_MENTION", "DISCORD_FREE_RESPONSE_CHANNELS", "DISCORD_AUTO_THREAD", "SLACK_BOT_TOKEN",
     "SLACK_APP_TOKEN", "SLACK_HOME_CHANNEL", "SLACK_HOME_CHANNEL_NAME", "SLACK_ALLOWED_USERS",
     "WHATSAPP_ENABLED", "WHATSAPP_MODE", "WHATSAPP_ALLOWED_USERS", "SIGNAL_HTTP_URL", "SIGNAL_ACCOUNT",
     "SIGNAL_ALLOWED_USERS", "SIGNAL_GROUP_ALLOWED_USERS", "SIGNAL_HOME_CHANNEL", "SIGNAL_HOME_CHANNEL_NAME",
     "SIGNAL_IGNORE_STORIES", "HASS_TOKEN", "HASS_URL", "EMAIL_ADDRESS", "EMAIL_PASSWORD", "EMAIL_IMAP_HOST",
     "EMAIL_SMTP_HOST", "EMAIL_HOME_ADDRESS", "EMAIL_HOME_ADDRESS_NAME", "GATEWAY_ALLOWED_USERS"}
)  # fmt: skip

HERMES_BLOCKLIST: frozenset[str] = _PROVIDERS | _TOOLS | _MESSAGING
"""Provider, tool and gateway variables never given to a terminal process (unless passed through)."""

KNOWN_NOT_SECRET: frozenset[str] = frozenset(
    {"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "XAUTHORITY", "ICEAUTHORITY", "DBUS_SESSION_BUS_ADDRESS",
     "GNOME_KEYRING_CONTROL", "PASSWORD_STORE_DIR", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
     "TOKENIZERS_PARALLELISM", "KEYTIMEOUT", "KEYMAP", "KEYBOARD", "XKB_DEFAULT_LAYOUT"}
)  # fmt: skip
"""Names that contain a secret marker but name no secret (a socket, a cookie file's path, a setting)."""
