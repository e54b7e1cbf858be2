"""Typed configuration loaded from HERMES_ACTORS_HOME/config.yaml."""
