"""Loom behind agent frameworks' own storage interfaces.

Each adapter lives in its own module and imports its framework only there, so `loom` needs
neither package: `loom.adapters.openai_agents.LoomSession` (the OpenAI Agents SDK's `Session`)
and `loom.adapters.langgraph.LoomStore` (LangGraph's `BaseStore`).
"""
