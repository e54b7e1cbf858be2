"""The Matrix bot's pure parts: Markdown as Matrix HTML and its split, how a reply or a reaction answers
a question, how a user's event is read, and how a Matrix destination is written."""

from __future__ import annotations

import pytest

from actors.platform.gateway.port import Choice
from markup import matrix_chunks, to_matrix_html
from actors.platform.gateway.replies import Question, chosen
from actors.platform.matrix.bot import reacted
from actors.platform.matrix.events import read_invite, read_message, read_reaction
from actors.platform.outbound import Destination, UnknownDestination

BOT = "@hermes:example.org"
APPROVAL = Question("$q", tuple(Choice(label, f"r:t:req_1:{n}") for n, label in enumerate(["Allow once", "Allow for this session", "Always allow", "Deny"])))
CLARIFY = Question("$c", (Choice("red", "r:t:req_2:0"), Choice("dark green", "r:t:req_2:1")))


class TestHtml:
    """Markdown becomes the HTML Matrix clients render, line breaks as <br> outside code; pieces fit the limit."""

    def test_inline_blocks_and_code(self) -> None:
        html = to_matrix_html("# Title\n**bold** & ||secret||\n> quoted\n```py\na < b\nc\n```")
        assert html == ('<b>Title</b><br><b>bold</b> &amp; <span data-mx-spoiler>secret</span><br><blockquote>quoted</blockquote>'
                        '<pre><code class="language-py">a &lt; b\nc</code></pre>')

    def test_split_keeps_each_piece_whole(self) -> None:
        pieces = matrix_chunks("\n\n".join(f"Paragraph {i}: " + "word " * 50 for i in range(20)), 1000)
        assert len(pieces) > 5 and all(len(body) <= 1000 and html.startswith("Paragraph") for body, html in pieces)


class TestAnswers:
    """A reply or a reaction names a choice; anything else is a message."""

    @pytest.mark.parametrize(("text", "index"), [("approve", 0), ("Approve session", 1), ("approve always", 2), ("deny", 3),
                                                 ("no", None), ("ok", None), ("4", 3), ("Allow once", 0), ("approve it all", None), ("hello", None)])
    def test_replies_to_an_approval(self, text: str, index: int | None) -> None:
        assert chosen(text, APPROVAL) == index

    def test_replies_and_reactions_to_a_question(self) -> None:
        assert (chosen("Dark green", CLARIFY), chosen("approve", CLARIFY), chosen("3", CLARIFY)) == (1, None, None)
        assert (reacted("2\ufe0f\u20e3", CLARIFY), reacted("👍", CLARIFY)) == (1, None)
        assert (reacted("👍", APPROVAL), reacted("👎", APPROVAL), reacted("🎉", APPROVAL)) == (0, 3, None)


class TestEvents:
    """Events are read as the spec writes them; anything else is None."""

    def test_a_mention_is_removed_and_a_thread_kept(self) -> None:
        event = {"sender": "@u:example.org", "content": {"msgtype": "m.text", "body": f"{BOT}: hi", "m.relates_to": {"rel_type": "m.thread", "event_id": "$root"}}}
        incoming = read_message("!r:example.org", event, BOT, private=False)
        assert incoming is not None and incoming.text == "hi" and incoming.addressed and incoming.chat.thread_id == "$root"

    def test_files_invites_reactions_and_junk(self) -> None:
        image = {"sender": "@u:example.org", "content": {"msgtype": "m.image", "body": "a.png", "url": "mxc://example.org/abc", "info": {"mimetype": "image/png", "size": 3}}}
        incoming = read_message("!r:example.org", image, BOT, private=True)
        assert incoming is not None and incoming.files[0].file_id == "mxc://example.org/abc" and incoming.files[0].kind == "image"
        assert read_message("!r:example.org", {"sender": "@u:example.org", "content": {"msgtype": "m.image", "body": "a"}}, BOT, private=True) is None
        assert read_message("!r:example.org", {"sender": 3, "content": {"msgtype": "m.text", "body": "a"}}, BOT, private=True) is None
        member = {"type": "m.room.member", "state_key": BOT, "sender": "@u:example.org", "content": {"membership": "invite", "is_direct": True}}
        invite = read_invite("!r:example.org", {"events": [member]}, BOT)
        assert invite is not None and invite.direct and invite.inviter == "@u:example.org"
        assert read_invite("!r:example.org", {"events": "x"}, BOT) is None
        assert read_reaction("!r:example.org", {"sender": "@u:example.org", "content": {"m.relates_to": {"rel_type": "m.annotation"}}}) is None


class TestDestinations:
    """A Matrix room is written with its server, whose colon is part of it."""

    def test_room_ids_and_aliases(self) -> None:
        assert Destination.parse("matrix:!abc:example.org") == Destination("matrix", "!abc:example.org")
        assert Destination.parse("matrix:#ops:example.org:8448") == Destination("matrix", "#ops:example.org:8448")
        assert Destination.parse("matrix:!abc:example.org:$event1") == Destination("matrix", "!abc:example.org", "$event1")
        assert Destination.parse("matrix") == Destination("matrix")
        for wrong in ("matrix:abc", "matrix:!abc", "matrix:!abc:example.org:thread"):
            with pytest.raises(UnknownDestination):
                Destination.parse(wrong)
