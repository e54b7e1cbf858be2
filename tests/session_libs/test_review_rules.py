"""When the learning loop reviews a turn: Hermes Agent's counting of user turns and model calls."""

from __future__ import annotations

from conversation.review import NudgeCounters, ReviewFocus, review_messages, turn_messages
from messages.chat import AssistantMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage, content_text


def call(name: str) -> AssistantMessage:
    return AssistantMessage(None, (ToolCall("c", name, "{}"),))


def turn(counters: NudgeCounters, messages: list, *, memory: int = 0, skills: int = 0) -> ReviewFocus:
    counters.start_turn(memory, has_memory=True)
    return counters.finish_turn(messages, skills, completed=True, has_skills=True)


class TestMemoryInterval:
    """Every nudge_interval user turns, unless the model wrote memory itself."""

    def test_every_third_turn(self) -> None:
        """Interval 3: turns 3 and 6 are due."""
        counters = NudgeCounters()
        due = [turn(counters, [AssistantMessage("ok")], memory=3).memory for _ in range(6)]
        assert due == [False, False, True, False, False, True]

    def test_a_memory_call_starts_the_count_again(self) -> None:
        """The model saved to memory in turn 2: turn 3 is not due, turn 5 is."""
        counters = NudgeCounters()
        plain, saved = [AssistantMessage("ok")], [call("memory"), AssistantMessage("saved")]
        due = [turn(counters, m, memory=3).memory for m in (plain, saved, plain, plain, plain)]
        assert due == [False, False, False, False, True]

    def test_a_woken_session_counts_from_its_history(self) -> None:
        """Two user turns stored, interval 3: the next turn is due."""
        counters = NudgeCounters()
        history = [SystemMessage("s"), HumanMessage("a"), AssistantMessage("b"), HumanMessage("c"), AssistantMessage("d")]
        counters.resume(history, 3)
        assert turn(counters, [AssistantMessage("ok")], memory=3).memory

    def test_zero_is_off_and_an_unfinished_turn_is_not_reviewed(self) -> None:
        """Interval 0 never reviews; a due turn that was interrupted is not reviewed."""
        counters = NudgeCounters()
        assert not any(turn(counters, [AssistantMessage("ok")], memory=0) for _ in range(20))
        counters.start_turn(1, has_memory=True)
        assert not counters.finish_turn([AssistantMessage("ok")], 0, completed=False, has_skills=True)


class TestSkillInterval:
    """After creation_nudge_interval model calls since the last skill_manage."""

    def test_counts_model_calls_across_turns(self) -> None:
        """Interval 4: two turns of two calls each make the second one due, and the count restarts."""
        counters = NudgeCounters()
        two_calls = [call("read_file"), ToolMessage("c", "x"), AssistantMessage("done")]
        assert [turn(counters, two_calls, skills=4).skills for _ in range(3)] == [False, True, False]

    def test_skill_manage_resets(self) -> None:
        """Calls before a skill_manage do not count."""
        counters = NudgeCounters()
        messages = [call("terminal"), call("terminal"), call("skill_manage"), AssistantMessage("done")]
        assert not turn(counters, messages, skills=2).skills
        assert counters.skill_calls == 1


class TestRequest:
    """What the reviewing model is shown."""

    def test_last_turn_and_transcript(self) -> None:
        """The last turn is what follows the last user message; the transcript shows calls, not the prompt."""
        history = [SystemMessage("SECRET PROMPT"), HumanMessage("hi"), call("terminal"), ToolMessage("c", "out"),
                   AssistantMessage("bye")]
        assert list(turn_messages(history)) == history[2:]
        system, user = review_messages(history, ReviewFocus(memory=True), memory_now="", skill_names=[])
        text = content_text(user.content)
        assert "terminal({})" in text and "user: hi" in text and "SECRET PROMPT" not in text
        assert "Current memory:\n(empty)" in content_text(system.content)

    def test_secrets_are_redacted(self) -> None:
        """A key the user pasted does not reach the review's model, which may be another provider."""
        key = "ghp_" + "a1b2c3d4e5" * 4
        history = [HumanMessage(f"my token is {key}"), AssistantMessage("noted")]
        _, user = review_messages(history, ReviewFocus(memory=True), memory_now="", skill_names=[])
        assert key not in content_text(user.content) and "[REDACTED]" in content_text(user.content)
