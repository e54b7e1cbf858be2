"""The Mattermost bot front door (``platform/mattermost``): the WebSocket events API and the REST API v4,
spoken directly with the project's HTTP stack and ``trio-websocket``."""

from actors.platform.mattermost.bot import MATTERMOST_SOURCE, MATTERMOST_TOOLSETS, MattermostBot, mattermost_session_id

__all__ = ["MATTERMOST_SOURCE", "MATTERMOST_TOOLSETS", "MattermostBot", "mattermost_session_id"]
