"""The Signal bot front door (``platform/signal``): a ``signal-cli`` daemon's JSON-RPC HTTP endpoint and its
event stream, spoken directly with the project's HTTP stack."""

from actors.platform.signal.bot import SIGNAL_SOURCE, SIGNAL_TOOLSETS, SignalBot, signal_session_id

__all__ = ["SIGNAL_SOURCE", "SIGNAL_TOOLSETS", "SignalBot", "signal_session_id"]
