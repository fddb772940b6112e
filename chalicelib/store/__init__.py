"""All SQL lives in this package."""
