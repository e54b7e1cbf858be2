"""What a subscriber attaching mid-turn is given first: the running turn's start, its text so far and its running tools."""

from __future__ import annotations

from actors.session import EventHub
from actors.session.hub import Subscription
from messages.events import ApprovalRequested, TextDelta, ToolFinished, ToolStarted, TurnFinished, TurnStarted


def _drain(subscription: Subscription) -> list[tuple[type, str | None]]:
    """The buffered events' types (and call ids)."""
    kinds: list[tuple[type, str | None]] = []
    while (event := subscription.receive_nowait()) is not None:
        kinds.append((type(event), getattr(event, "call_id", None)))
    return kinds


class TestRunningTurn:
    """Only a person's client asks for the running turn; between turns there is nothing to give."""

    def test_mid_turn_subscriber_gets_turn_and_running_tools(self) -> None:
        """TurnStarted, the text so far and the still-running ToolStarted come first; finished tools do not."""
        hub = EventHub("s1", "sessions/session:s1")
        hub.publish(TurnStarted, turn_id=1, text="go")
        hub.publish(TextDelta, text="thinking")
        hub.publish(ToolStarted, call_id="a", name="terminal", args_preview='{"command": "true"}')
        hub.publish(ToolFinished, call_id="a", name="terminal", duration_seconds=0.1, ok=True, result_preview="")
        hub.publish(ToolStarted, call_id="b", name="terminal", args_preview='{"command": "sleep 9"}')
        assert [(TurnStarted, None), (TextDelta, None), (ToolStarted, "b")] == _drain(
            hub.subscribe("attach", running_turn=True)
        )
        assert [] == _drain(hub.subscribe("api"))

    def test_text_so_far_is_one_delta_numbered_as_the_last(self) -> None:
        """The turn's deltas come joined, with the last one's seq (a resume after it repeats nothing);
        a subagent's text and the previous turn's are not part of it."""
        hub = EventHub("s1", "sessions/session:s1")
        hub.publish(TurnStarted, turn_id=1, text="first")
        hub.publish(TextDelta, text="old ")
        hub.publish(TurnFinished, turn_id=1, final_text="old ", reason="completed")
        hub.publish(TurnStarted, turn_id=2, text="go")
        hub.publish(TextDelta, text="alpha ")
        hub.relay(TextDelta(session_id="s1", seq=0, path="sessions/session:s1/subagent:x", text="elsewhere"))
        last = hub.publish(TextDelta, text="beta")
        subscription = hub.subscribe("attach", running_turn=True)
        started, text = subscription.receive_nowait(), subscription.receive_nowait()
        assert isinstance(started, TurnStarted) and started.text == "go"
        assert isinstance(text, TextDelta) and text.text == "alpha beta" and text.seq == last.seq
        assert subscription.receive_nowait() is None

    def test_nothing_between_turns(self) -> None:
        """After TurnFinished a new subscriber starts empty."""
        hub = EventHub("s1", "sessions/session:s1")
        hub.publish(TurnStarted, turn_id=1, text="go")
        hub.publish(ToolStarted, call_id="b", name="terminal", args_preview="{}")
        hub.publish(TurnFinished, turn_id=1, final_text="", reason="interrupted")
        assert [] == _drain(hub.subscribe("attach", running_turn=True))

    def test_pending_questions_come_in_sequence_order(self) -> None:
        """A pending approval older than a running tool comes before it (a client skipping by seq skips nothing new)."""
        hub = EventHub("s1", "sessions/session:s1")
        hub.publish(TurnStarted, turn_id=1, text="go")
        hub.publish(ToolStarted, call_id="a", name="terminal", args_preview="{}")
        asked = hub.publish(ApprovalRequested, request_id="r1", command="rm x", description="delete")
        hub.publish(ToolStarted, call_id="b", name="terminal", args_preview="{}")
        subscription = hub.subscribe("attach", also=[asked], running_turn=True)
        seqs = []
        while (event := subscription.receive_nowait()) is not None:
            seqs.append(event.seq)
        assert seqs == [1, 2, 3, 4]
