"""The Python SDK of Loom, the memory service for AI agents."""

from loom.client import Agent, LoomError, Session

__all__ = ["Agent", "LoomError", "Session"]
