"""A conversation's pure libraries: what the session actor and its turn use to keep a history valid and
to decide what to send next. None of them starts a task or owns a mailbox; each is tested alone.

- ``history``: the role and tool-call rules a history must keep, and the repairs that restore them.
- ``prompt``: the system prompt (identity, context files, skills, memory) and a subagent's prompt.
- ``compression``: which messages a compression keeps, prunes and summarises; the summary's request.
- ``budget``: the iteration budget of one turn; ``guardrails``: a model stuck repeating itself.
- ``validation``: tool calls checked and repaired before anything runs.
- ``steer``: text from the user delivered into a running turn; ``fencing``: the memory-context scrubber.
- ``images``: a user's images as message content; ``tool_list``: a session's frozen tool list.
- ``errors``: what these raise.
"""
