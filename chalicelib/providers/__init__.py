"""External services behind small Protocols, each with a real implementation and a Fake."""
