"""What a subscriber attaching mid-turn is given first: the running turn's start and its running tools."""

from __future__ import annotations

from actors.session import EventHub
from actors.session.hub import Subscription
from messages.events import TextDelta, ToolFinished, ToolStarted, TurnFinished, TurnStarted


def _drain(subscription: Subscription) -> list[tuple[type, str | None]]:
    """The buffered events' types (and call ids)."""
    kinds: list[tuple[type, str | None]] = []
    while (event := subscription.receive_nowait()) is not None:
        kinds.append((type(event), getattr(event, "call_id", None)))
    return kinds


class TestRunningTurn:
    """Only a person's client asks for the running turn; between turns there is nothing to give."""

    def test_mid_turn_subscriber_gets_turn_and_running_tools(self) -> None:
        """TurnStarted and the still-running ToolStarted come first; finished tools and text do not."""
        hub = EventHub("s1", "sessions/session:s1")
        hub.publish(TurnStarted, turn_id=1, text="go")
        hub.publish(TextDelta, text="thinking")
        hub.publish(ToolStarted, call_id="a", name="terminal", args_preview='{"command": "true"}')
        hub.publish(ToolFinished, call_id="a", name="terminal", duration_seconds=0.1, ok=True, result_preview="")
        hub.publish(ToolStarted, call_id="b", name="terminal", args_preview='{"command": "sleep 9"}')
        assert [(TurnStarted, None), (ToolStarted, "b")] == _drain(hub.subscribe("attach", running_turn=True))
        assert [] == _drain(hub.subscribe("api"))

    def test_nothing_between_turns(self) -> None:
        """After TurnFinished a new subscriber starts empty."""
        hub = EventHub("s1", "sessions/session:s1")
        hub.publish(TurnStarted, turn_id=1, text="go")
        hub.publish(ToolStarted, call_id="b", name="terminal", args_preview="{}")
        hub.publish(TurnFinished, turn_id=1, final_text="", reason="interrupted")
        assert [] == _drain(hub.subscribe("attach", running_turn=True))
