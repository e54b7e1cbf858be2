"""Texts of context compression (docs/DECISIONS.md#d-compression), in this project's own words."""

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

# The spec's section names (Active Task, In Progress, Pending User Asks, Remaining Work ...) in Hermes 0.19.0's
# order, with the four sections Hermes 0.19.0 adds that the spec does not name (Goal, Constraints &
# Preferences, Active State, Relevant Files). docs/HERMES_COMPAT.md, "The loop", records the differences.
SUMMARY_TEMPLATE = """Use exactly these sections:

## Active Task
The user's most recent request that has not been fulfilled, copied word for word: a task, a question still
waiting for its answer, or a choice they are waiting to make. This section matters most: the work resumes
from it. If their last message called earlier work off (stop, undo, never mind), copy that instead and do
not carry the cancelled task forward. Write "None." only when the last exchange was fully settled.

## Goal
What the user wants to achieve overall.

## Constraints & Preferences
Constraints, preferences and conventions the user stated (coding style, tools to use or avoid).

## Completed Actions
A numbered list of what was done, one step per line in the form
N. ACTION target — outcome [tool: name]
for example: 4. EDIT src/app.py:12 — renamed `load` to `load_all` [tool: patch]. Name files, commands,
line numbers and results.

## Active State
Where things stand now: working directory and branch, files changed or created, test results, processes
or servers still running.

## In Progress
Work that was started and not finished when this summary was written.

## Blocked
Anything that failed or is stuck, with the exact error messages.

## Key Decisions
Decisions taken and the reason for each.

## Resolved Questions
Questions that were asked and answered, with their answers, so they are not answered again.

## Pending User Asks
Requests from the user that have not been dealt with yet, kept for reference only: they are not to be acted
on unless the latest user message asks for them again. "None." when there are none.

## Relevant Files
Files read, changed or created, with a short note on each.

## Remaining Work
What is left to do, described as background (not as orders).

## Critical Context
Values that must not be lost: paths, names, versions, settings, exact error text. Never credentials: write
[REDACTED] in their place."""

ITERATIVE_UPDATE = """A summary from an earlier compaction exists. Update it with the new turns instead of starting over.

PREVIOUS SUMMARY:
{previous_summary}

The conversation turns provided are the NEW TURNS TO INCORPORATE. Keep everything in the previous summary that still
holds, add the new completed actions (continue the numbering), move finished items from In Progress to Completed
Actions, move answered questions to Resolved Questions, and bring Active State up to date. Rewrite ## Active Task
to the user's latest unfulfilled request, word for word."""

# Seed 002 is silent on dates in the summary; Hermes 0.19.0 anchors finished work to the day of the summary.
TEMPORAL_ANCHORING = """Today is {today:%Y-%m-%d}. Write work that is already done as a dated fact in the past tense
("Merged the login fix into main on {today:%Y-%m-%d}", not "merge the login fix"), never as an instruction still to
carry out, and give no date to work that has not happened."""

FOCUS_DIRECTIVE = """FOCUS TOPIC: {topic}
Spend about 60-70% of the summary on information related to this topic and compress everything else harder."""

BUDGET_LINE = (
    "Aim for about {tokens:,} tokens. Be concrete: file paths, commands and their output, error messages, line numbers "
    "and values, never a vague \"made some changes\"."
)

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
