"""The offline embedder: loads from the installed wheel, ranks related text over its floor."""

from __future__ import annotations

import threading

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


def test_model_calls_run_on_the_instances_own_thread_whoever_calls():
    """GIVEN one local embedder
    WHEN a document call and a query call come from threads that live for one call each (as a
    server's request threads do)
    THEN both run on the same long-lived thread of the instance, none on the callers' threads:
    the engine's thread team is made once, not once a request.
    """
    emb = LocalEmbedder()
    emb.embed_query("load the model")
    model, ran_on = emb._model, []

    class Recording:
        def passage(self, texts: list[str]) -> np.ndarray:
            ran_on.append(threading.current_thread())
            return model.passage(texts)

        def query(self, text: str) -> np.ndarray:
            ran_on.append(threading.current_thread())
            return model.query(text)

    emb._model = Recording()
    callers = [
        threading.Thread(target=emb.embed_documents, args=(["a turn"],)),
        threading.Thread(target=emb.embed_query, args=("a question",)),
    ]
    for caller in callers:
        caller.start()
        caller.join()
    assert len(ran_on) == 2 and ran_on[0] is ran_on[1]
    assert ran_on[0] not in callers and ran_on[0] is not threading.main_thread()
