"""Shared helpers for the rmqproto test-suite."""
