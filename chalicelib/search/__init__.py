"""conversation.search: the vector and lexical legs, their fusion, and the windows BM25 reads."""
