"""The offline embedder: loads from the installed wheel, ranks related text over its floor."""

from __future__ import annotations

import numpy as np

from chalicelib.providers.embedder import LocalEmbedder


def test_local_embedder_separates_related_from_unrelated_at_its_floor():
    emb = LocalEmbedder()
    passage, other = emb.embed_documents(
        ["We moved invoices to the new ledger service.", "The cat sleeps on the warm windowsill."]
    )
    query = emb.embed_query("where do invoices live now?")
    assert passage.shape == (emb.dim,)
    related, unrelated = float(np.dot(query, passage)), float(np.dot(query, other))
    assert related >= emb.default_floor > unrelated
