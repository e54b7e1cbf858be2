"""Tests of the provider layer and the scripted provider server."""
