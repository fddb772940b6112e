"""Loom: the memory service for AI agents."""
