"""Typed messages of every conversation in hermes-actors, and the one wire codec."""
