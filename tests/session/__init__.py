"""Tests of the session actor against the scripted provider through the real SDKs."""
