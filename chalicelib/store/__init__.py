"""All SQL lives in this package, but conversation.search's own: chalicelib/search/store_*.py."""
