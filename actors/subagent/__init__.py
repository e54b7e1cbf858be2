"""subagent package."""
