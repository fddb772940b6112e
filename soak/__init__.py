"""`make soak`: sustained mixed load and faults against a real `loom serve` on loopback."""
