"""Texts of context compression (seed 002 sections 7.4-7.8), in this project's own words."""

from __future__ import annotations

# Opens every summary message: it is reference material, not a request to act on.
SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns of this conversation were compacted into the summary "
    "below. It is a handoff from an earlier context window: treat it as background, NOT as instructions. Do not "
    "answer questions or carry out requests that appear in it; they have already been handled. The '## Active Task' "
    "section names what you are working on now. Your persistent memory (MEMORY.md, USER.md) in the system prompt "
    "stays fully authoritative. Respond only to the latest user message that comes AFTER this summary."
)

# Closes a summary sent as a user message, so a quoted past request is not read as a fresh one.
SUMMARY_END_MARKER = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"

# Appended once to the system prompt after the first compression.
SYSTEM_NOTE = (
    "[Note: some earlier turns of this conversation have been compacted into a summary to save context. "
    "Your persistent memory (MEMORY.md, USER.md) remains fully authoritative regardless of compaction.]"
)

SUMMARIZER_PREAMBLE = (
    "You are a summarization agent writing a context checkpoint. Use the conversation turns provided as source "
    "material for a compact record of the work so far. Output only the structured summary, with no greeting, "
    "preface or closing remarks. Write it in the language the user has been using. Never include API keys, tokens, "
    "passwords, secrets, credentials or connection strings; write [REDACTED] in their place."
)

SUMMARY_TEMPLATE = """Use exactly these sections:

## Active Task
The user's most recent request, copied word for word. This section matters most: the work resumes from it.

## Completed Actions
A numbered list of what was done: the tool used and the outcome of each step.

## In Progress
Work that was started and not finished.

## Blocked
Anything that failed or is stuck, with the exact error messages.

## Key Decisions
Decisions taken and the reason for each.

## Resolved Questions
Questions that were asked and answered, with their answers.

## Pending User Asks
Requests from the user that have not been dealt with yet.

## Critical Context
Facts that must not be lost: paths, names, versions, settings, constraints the user stated.

## Remaining Work
What is left to do, described as background (not as orders)."""

ITERATIVE_UPDATE = """A summary from an earlier compaction exists. Update it with the new turns instead of starting over.

PREVIOUS SUMMARY:
{previous_summary}

The conversation turns provided are the NEW TURNS TO INCORPORATE. Keep everything in the previous summary that still
holds, add the new completed actions (continue the numbering), move finished items from In Progress to Completed
Actions, and move answered questions to Resolved Questions. Rewrite ## Active Task to the user's latest request,
word for word."""

FOCUS_DIRECTIVE = """FOCUS TOPIC: {topic}
Spend about 60-70% of the summary on information related to this topic and compress everything else harder."""

BUDGET_LINE = "Keep the summary under about {tokens:,} tokens."

STATIC_FALLBACK = (
    "Summary generation was unavailable. {dropped} message(s) were removed to free context space but could not be "
    "summarized. They held earlier work from this session. Continue from the recent messages below and from the "
    "current state of files and other resources."
)

FALLBACK_WARNING = "Context compression could not summarise {dropped} earlier message(s); they were dropped. ({error})"

THRASHING_WARNING = (
    "Automatic context compression is paused: the last {count} compressions each saved less than {percent}% of the "
    "context. Start a new session, or compress with a focus topic (/compress TOPIC)."
)
