"""Tests for hermes-actors."""
