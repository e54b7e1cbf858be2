"""The actor runtime: actor base, mailboxes, request/reply, spawner and registry."""
