"""The Slack app front door (``platform/slack``): Socket Mode's WebSocket for events, the Web API for
replies, both spoken directly (slack_sdk's async client is asyncio-only)."""

from actors.platform.slack.bot import (
    SLACK_SOURCE,
    SLACK_TOOLSETS,
    SlackBot,
    SlackTokens,
    slack_session_id,
)

__all__ = ["SLACK_SOURCE", "SLACK_TOOLSETS", "SlackBot", "SlackTokens", "slack_session_id"]
