"""Tests of configuration loading."""
