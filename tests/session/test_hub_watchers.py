"""Who keeps a session awake: every live subscriber but the passive ones (a platform's chat follower)."""

from __future__ import annotations

from actors.session import EventHub


def test_only_watchers_keep_a_session_awake() -> None:
    hub = EventHub("s1", "sessions/session:s1")
    follower = hub.subscribe("telegram/1", passive=True)
    assert (hub.subscriber_count, hub.watcher_count) == (1, 0)
    client = hub.subscribe("attach")
    assert (hub.subscriber_count, hub.watcher_count) == (2, 1)
    client.close()
    assert hub.watcher_count == 0
    follower.close()
    assert hub.subscriber_count == 0
