"""Tests of delegate_task subagents."""
