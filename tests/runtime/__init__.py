"""Tests of the actor runtime, supervisor and codec."""
