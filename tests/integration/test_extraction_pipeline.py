"""The extraction pipeline: the default steps in the spec's order, pipeline_steps that reorder,
skip or name an operator's step, and steps that fail open."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib.extraction import pipeline
from chalicelib.providers.llm import ScriptedLLM
from tests.integration.test_memory_support import (
    NS2,
    SPEC_STEPS,
    Mem,
    drop_rows,
    evidence_rows,
    fact,
    facts_of,
    keys,
    live_setting,
    memory_rows,
    reply,
    scripted,
    turns,
    verdicts,
)

COFFEE = fact("user", "drink", "The user drinks black coffee.")
SAID = turns(("user", "I only drink black coffee."))


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


@dataclass
class Watching(ScriptedLLM):
    """A scripted model that notes, at each call, the turns already stored as evidence."""

    pool: Any = None
    org: str = ""
    evidence_at_call: list[list[str]] = field(default_factory=list)

    def complete(self, system, user, *, json_output=False, model=None):
        self.evidence_at_call.append([r["content"] for r in evidence_rows(self.pool, self.org)])
        return super().complete(system, user, json_output=json_output, model=model)


# Seven facts for one coding capture. Each but the last is caught by one step and could be
# caught by every step after it too, so the step that drops it shows which ran first.
RAN_PYTEST = "User ran pytest right now"  # a recall echo, then every later step's catch
RAN_RUFF = "User ran ruff right now"  # a session echo, narration, a snapshot, stored
RAN_MYPY = "User ran mypy right now"  # narration, a snapshot, stored
BUILD_GREEN = "The build is green right now"  # a snapshot, the verifier's pick, stored
PORT = "The service exposes port 8080"  # the verifier's pick, stored
TABS = "The user prefers tabs over spaces"  # stored already
FRIDAYS = "The user deploys on Fridays"  # new: written
SEVEN = (
    fact("pytest", "run", RAN_PYTEST),
    fact("ruff", "run", RAN_RUFF),
    fact("mypy", "run", RAN_MYPY),
    fact("build", "status", BUILD_GREEN),
    fact("service", "port", PORT),
    fact("user", "indentation", TABS),
    fact("user", "deploy day", FRIDAYS),
)


def test_the_default_pipeline_runs_every_step_in_the_spec_order(m, deps, pool):
    """GIVEN a namespace holding a memory tagged category:ops and the values of six of seven
    facts the model will return, a verifier model, and a coding capture whose session was
    served pytest/last_run and carried the ruff sentence
    WHEN the transcript is sent without pipeline_steps
    THEN the steps' effects come in the spec's order: the turn is stored before the model is
    called; the model's prompt already holds the category and the stored memories; each fact
    is dropped by the first step that catches it (recall echo, session echo, narration,
    non-durable, verifier, hash dedup), counted in that order; only the new fact is written,
    and it is linked to its turn; stage_ms times every step, in that order.
    """
    m.set("ops/oncall", "The team rotates on-call weekly.", tags=["category:ops"])
    for i, value in enumerate((RAN_PYTEST, RAN_RUFF, RAN_MYPY, BUILD_GREEN, PORT, TABS)):
        m.set(f"seed/{i}", value)
    llm = Watching(
        replies=deque([reply(*SEVEN), json.dumps({"non_durable": [0]})]),
        name=f"watching-{m.org}",
        pool=pool,
        org=m.org,
    )
    deps._llm = llm
    said = turns(("user", "Ran the checks; we deploy on Fridays."))

    with live_setting(pool, memory_extract_verify_models='["verifier-a"]'):
        out = m.extract_ok(
            said,
            extra_tags=["source:claude-code"],
            recalled_keys=["pytest/last_run"],
            session_values=[RAN_RUFF],
        )

    assert llm.evidence_at_call == [[said[0]["content"]]] * 2  # stored before any call
    extract_prompt = llm.prompts[0][1]
    assert "Namespace categories: category:ops" in extract_prompt
    assert "- ops/oncall: The team rotates on-call weekly." in extract_prompt
    assert f"- seed/5: {TABS}" in extract_prompt
    assert [(d["stage"], d["reason"], d["count"]) for d in drop_rows(pool, m.org)] == [
        ("loom.drop_recall_echoes", "recall_echo", 1),
        ("loom.drop_session_echoes", "session_echo", 1),
        ("loom.drop_activity_narration", "activity_narration", 1),
        ("loom.drop_non_durable", "status_snapshot", 1),
        ("loom.verify_durable", "non_durable", 1),
        ("loom.hash_dedup", "duplicate", 1),
    ]
    assert [d["detail"] for d in drop_rows(pool, m.org)] == [
        RAN_PYTEST, RAN_RUFF, RAN_MYPY, BUILD_GREEN, PORT, TABS
    ]  # fmt: skip
    assert verdicts(out) == {"user/deploy_day": "created"}
    ev = m.ok("memory.evidence", as_="viewer", key="user/deploy_day")["turns"]
    assert [t["content"] for t in ev] == [said[0]["content"]]
    step_keys = [k for k in out["stage_ms"] if k.startswith("step.")]
    assert step_keys == [f"step.{s}" for s in SPEC_STEPS]
    assert out["pipeline_errors"] == []


def test_the_extraction_prompt_carries_the_namespaces_categories_and_nearest_memories(m, deps):
    """GIVEN a namespace holding memories tagged with two categories, and another namespace
    holding a memory of its own
    WHEN a transcript is extracted
    THEN the prompt the model was sent names the namespace's categories and lists its stored
    memories with their keys, and nothing of the other namespace.
    """
    m.set("user/breakfast", "The user eats porridge for breakfast.", tags=["category:food"])
    m.set("user/lunch", "The user eats soup for lunch.", tags=["category:food"])
    m.set("user/team", "The user works on the payments team.", tags=["category:work"])
    m.set("user/dinner", "The user skips dinner on Mondays.", namespace=NS2)
    llm = scripted(deps, reply(COFFEE))

    m.extract_ok(turns(("user", "For breakfast I only have porridge and black coffee.")))

    (system, prompt), *_ = llm.prompts
    assert "Namespace categories: category:food, category:work" in prompt
    assert "- user/breakfast: The user eats porridge for breakfast." in prompt
    assert "- user/team: The user works on the payments team." in prompt
    assert "skips dinner" not in prompt
    assert "Use the namespace's categories as tags" in system


def test_stage_ms_also_times_the_bulk_writes_phases(m, deps):
    """GIVEN a model that extracts one fact
    WHEN it is written through memory.bulk_set
    THEN stage_ms times the write's phases as bulk.<phase> beside the step.<id> timings.
    """
    scripted(deps, reply(COFFEE))

    out = m.extract_ok(SAID)

    assert keys(out) == ["user/drink"]
    assert any(k.startswith("bulk.") for k in out["stage_ms"]), out["stage_ms"]


def test_skipping_hash_dedup_writes_a_stored_duplicate_again_as_unchanged(m, deps, pool):
    """GIVEN a fact already stored by an earlier extraction
    WHEN the same fact is extracted again with the default pipeline, then with pipeline_steps
    that leave out loom.hash_dedup
    THEN the default run drops it (nothing written, a duplicate drop counted) and the run
    without hash dedup writes it again, with verdict unchanged.
    """
    scripted(deps, reply(COFFEE), reply(COFFEE), reply(COFFEE))
    m.extract_ok(SAID)

    deduped = m.extract_ok(turns(("user", "Black coffee, as always.")))
    steps = [s for s in SPEC_STEPS if s != "loom.hash_dedup"]
    again = m.extract_ok(turns(("user", "Black coffee, again.")), pipeline_steps=steps)

    assert deduped["written"] == []
    assert verdicts(again) == {"user/drink": "unchanged"}
    assert [k for k in again["stage_ms"] if k.startswith("step.")] == [f"step.{s}" for s in steps]


def test_pipeline_steps_reorder_the_steps(m, deps):
    """GIVEN a fact that restates a key the session was served
    WHEN the echo drop runs after the extraction (the default), then before it
    THEN the default run drops the echo, and the reordered run, whose echo drop saw no facts
    yet, writes it.
    """
    scripted(deps, reply(COFFEE), reply(COFFEE))
    dropped = m.extract_ok(SAID, recalled_keys=["user/drink"])
    order = ["loom.drop_recall_echoes", "loom.llm_extract", "loom.bulk_write"]

    kept = m.extract_ok(SAID, recalled_keys=["user/drink"], pipeline_steps=order)

    assert dropped["written"] == []
    assert keys(kept) == ["user/drink"]
    assert [k for k in kept["stage_ms"] if k.startswith("step.")] == [f"step.{s}" for s in order]


def test_an_unknown_step_is_named_in_pipeline_errors_and_the_rest_runs(m, deps):
    """GIVEN pipeline_steps naming a step no one registered
    WHEN a transcript is sent
    THEN it answers 200 with unknown_step:<id> in pipeline_errors, and the known steps still
    write the fact.
    """
    scripted(deps, reply(COFFEE))

    out = m.extract_ok(
        SAID, pipeline_steps=["loom.llm_extract", "acme.no_such_step", "loom.bulk_write"]
    )

    assert "unknown_step:acme.no_such_step" in out["pipeline_errors"]
    assert keys(out) == ["user/drink"]


def test_an_http_hook_step_is_refused_before_anything_is_stored(m, deps, pool):
    """GIVEN pipeline_steps naming an HTTP hook.* step
    WHEN a transcript is sent
    THEN it answers 400, calls no model and stores neither evidence nor memory.
    """
    llm = scripted(deps, reply(COFFEE))

    status, data = m.extract(
        SAID, pipeline_steps=["loom.llm_extract", "hook.acme", "loom.bulk_write"]
    )

    assert status == 400, data
    assert llm.prompts == []
    assert evidence_rows(pool, m.org) == [] and memory_rows(pool, m.org) == []


@pytest.fixture
def operator_steps():
    """Two in-process steps an operator registered: one tags every fact, one raises."""

    def tag_every_fact(run):
        for f in run.facts:
            f.tags = sorted({*f.tags, "reviewed:acme"})

    def broken(run):
        raise RuntimeError("operator step broke")

    pipeline.step("acme.tag")(tag_every_fact)
    pipeline.step("acme.broken")(broken)
    yield
    pipeline.STEPS.pop("acme.tag", None)
    pipeline.STEPS.pop("acme.broken", None)


def test_an_operators_in_process_step_runs_where_named(m, deps, operator_steps):
    """GIVEN an in-process step an operator registered
    WHEN pipeline_steps names it between the extraction and the write
    THEN it runs there: the written fact carries the tag it adds, and it is timed.
    """
    scripted(deps, reply(COFFEE))

    out = m.extract_ok(SAID, pipeline_steps=["loom.llm_extract", "acme.tag", "loom.bulk_write"])

    assert "reviewed:acme" in m.get("user/drink")["memory"]["tags"]
    assert "step.acme.tag" in out["stage_ms"]


def test_a_step_that_raises_fails_open_and_is_named(m, deps, operator_steps):
    """GIVEN an operator's step that raises
    WHEN it runs in the pipeline before the write
    THEN it is named in pipeline_errors and the fact is still written.
    """
    scripted(deps, reply(COFFEE))

    out = m.extract_ok(SAID, pipeline_steps=["loom.llm_extract", "acme.broken", "loom.bulk_write"])

    assert any(e.startswith("acme.broken") for e in out["pipeline_errors"]), out
    assert keys(out) == ["user/drink"]


def test_a_failing_embedder_fails_fetch_existing_memories_open(m, deps, embedder, pool):
    """GIVEN an embedder that fails (so the nearest existing memories cannot be fetched)
    WHEN a transcript is sent with the default pipeline
    THEN loom.fetch_existing_memories is named in pipeline_errors, and the fact is still written
    (without a vector).
    """
    scripted(deps, reply(COFFEE))
    embedder.failing = True

    out = m.extract_ok(SAID)

    assert any(e.startswith("loom.fetch_existing_memories") for e in out["pipeline_errors"])
    assert verdicts(out) == {"user/drink": "created"}
    assert facts_of(pool, m.org) == {"user/drink": "The user drinks black coffee."}


def test_a_drop_after_the_write_leaves_each_memory_linked_to_its_own_turn(m, deps):
    """GIVEN two facts, the first citing turn 0 and the second (activity narration) turn 1, and
    pipeline_steps that drop narration after the write
    WHEN the transcript is sent
    THEN each written memory's evidence is the turn its fact cites: the drop after the write
    shifts no link onto another memory."""
    said = turns(("user", "I live in Lisbon."), ("user", "I read lines 1-1000 of billing.py."))
    scripted(
        deps,
        reply(
            fact("user", "home city", "The user lives in Lisbon.", indices=[0]),
            fact("user", "activity", "User read lines 1-1000 of billing.py", indices=[1]),
        ),
    )
    steps = ["loom.llm_extract", "loom.bulk_write", "loom.drop_activity_narration"]
    out = m.extract_ok(said, pipeline_steps=steps)
    assert sorted(keys(out)) == ["user/activity", "user/home_city"]
    for key, turn in (("user/home_city", 0), ("user/activity", 1)):
        ev = m.ok("memory.evidence", as_="viewer", key=key)["turns"]
        assert [t["content"] for t in ev] == [said[turn]["content"]], key


def test_a_digest_the_database_refuses_fails_open_after_the_facts(m, deps, pool):
    """GIVEN a stored memory the transcript asks to forget, and a namespace, user and session
    id of 256 four-byte characters each: the digest key `digest:<session_id>` is too wide for
    the memories index
    WHEN an extraction writes a fact, forgets the old memory and drafts a digest
    THEN it answers 200: the fact is written, the old memory forgotten and the turns stored as
    evidence, and the digest's refusal is named in pipeline_errors (a step after the
    extraction call fails open, as the pipeline's own do).
    """
    # Four-byte characters that do not repeat, so the index cannot compress the key.
    ns, user, session = ("".join(chr(0x20000 + 997 * i + k) for i in range(256)) for k in range(3))
    m.ok("memory.set", namespace=ns, user_id=user, key="user/old_job", value="Works at Acme.")
    scripted(
        deps,
        reply(
            fact("user", "home city", "The user lives in Lisbon."),
            forget=[{"subject": "user", "attribute": "old job", "text": ""}],
            digest="The user moved to Lisbon and asked to forget the old job.",
        ),
    )
    out = m.extract_ok(SAID, namespace=ns, user_id=user, session_id=session)

    assert [e.split(":", 1)[0] for e in out["pipeline_errors"]] == ["loom.session_digest"]
    assert verdicts(out) == {"user/home_city": "created"}
    assert out["forgotten_keys"] == ["user/old_job"]
    assert out["evidence_ids"] and len(evidence_rows(pool, m.org)) == len(SAID)
    live = {r["key"] for r in memory_rows(pool, m.org) if r["retired_at"] is None}
    assert live == {"user/home_city"}
