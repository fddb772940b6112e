"""Scheduled and queue workers: plain functions of (deps), run by Lambda or by `loom serve`."""
