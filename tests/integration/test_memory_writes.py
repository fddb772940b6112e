"""The memory plane's writes: versions and verdicts, the blacklist, locks, pins, get, delete and
the hash-only audit row."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from chalicelib.services.memory_writer import Entry, write_entries
from tests.integration.test_memory_support import (
    NS,
    NS2,
    Mem,
    audit_rows,
    canonical_sha,
    fact,
    facts_of,
    live_setting,
    memory_rows,
    reply,
    scripted,
    turns,
    verdicts,
    version_rows,
)


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def test_set_writes_version_one_then_unchanged_then_a_new_version(m, pool):
    """GIVEN an empty namespace
    WHEN memory.set writes a value, the same value again, then a new value
    THEN the verdicts are created (version 1), unchanged (version 1) and updated (version 2);
    memory.get serves the new value and loom.memory_versions holds both versions.
    """
    first = m.set("user/home_city", "The user lives in Lisbon.")
    again = m.set("user/home_city", "The user lives in Lisbon.")
    changed = m.set("user/home_city", "The user lives in Porto.")

    assert (first["conflict_verdict"], first["version"]) == ("created", 1)
    assert (again["conflict_verdict"], again["version"]) == ("unchanged", 1)
    assert (changed["conflict_verdict"], changed["version"]) == ("updated", 2)
    got = m.get("user/home_city")["memory"]
    assert (got["value"], got["version"]) == ("The user lives in Porto.", 2)
    assert version_rows(pool, m.org, "user/home_city") == [
        (1, "The user lives in Lisbon.", "created"),
        (2, "The user lives in Porto.", "updated"),
    ]


def test_bulk_set_answers_a_verdict_for_each_row(m, pool):
    """GIVEN a stored row, a locked row and a blacklisted pattern
    WHEN memory.bulk_set writes the stored value again, a new value over the locked row, a new
    key, a changed value and a blacklisted value in one call
    THEN each row gets its own verdict, in the order sent, and a row names its subject's peers.
    """
    m.set("user/home_city", "The user lives in Lisbon.")
    m.set("user/employer", "The user works at Initech.")
    m.set("user/vault", "The vault code is kept by the user.", lock=True)
    m.blacklist("top.?secret")

    out = m.ok(
        "memory.bulk_set",
        entries=[
            {"key": "user/home_city", "value": "The user lives in Lisbon."},
            {"key": "user/vault", "value": "The vault code changed."},
            {"key": "user/pet", "value": "The user has a cat called Miso."},
            {"key": "user/employer", "value": "The user works at Globex."},
            {"key": "user/codename", "value": "Project is top secret."},
        ],
    )

    assert [(w["key"], w["conflict_verdict"], w["version"]) for w in out["written"]] == [
        ("user/home_city", "unchanged", 1),
        ("user/vault", "locked", 1),
        ("user/pet", "created", 1),
        ("user/employer", "updated", 2),
        ("user/codename", "blacklisted", 0),
    ]
    pet = next(w for w in out["written"] if w["key"] == "user/pet")
    assert {"user/home_city", "user/employer"} <= set(pet["peers"])
    assert "user/pet" not in pet["peers"]
    stored = facts_of(pool, m.org)
    assert stored["user/employer"] == "The user works at Globex."
    assert stored["user/vault"] == "The vault code is kept by the user."
    assert "user/codename" not in stored


def test_bulk_set_naming_one_key_twice_is_refused_and_writes_nothing(m, pool):
    """GIVEN an empty namespace
    WHEN memory.bulk_set names one key twice in a call
    THEN it answers 400 and writes no row.
    """
    status, data = m.post(
        "memory.bulk_set",
        entries=[
            {"key": "user/drink", "value": "tea"},
            {"key": "user/other", "value": "x"},
            {"key": "user/drink", "value": "coffee"},
        ],
    )

    assert status == 400, data
    assert memory_rows(pool, m.org) == []


def test_a_namespace_blacklist_refuses_matching_values_there_only(m, pool):
    """GIVEN a blacklist pattern set by an admin for one namespace
    WHEN a value matching it (in another case) is written there and in another namespace
    THEN the write there is blacklisted (version 0, nothing written) and the other namespace's
    is created; once the pattern is removed, the write there is created too.
    """
    listed = m.blacklist("acme-internal")
    assert listed["listed"] is True

    refused = m.set("team/wiki", "Docs live on ACME-INTERNAL wiki.")
    elsewhere = m.set("team/wiki", "Docs live on ACME-INTERNAL wiki.", namespace=NS2)

    assert (refused["conflict_verdict"], refused["version"]) == ("blacklisted", 0)
    assert m.get("team/wiki")["found"] is False
    assert [r["namespace"] for r in memory_rows(pool, m.org)] == [NS2]
    assert elsewhere["conflict_verdict"] == "created"

    m.blacklist("acme-internal", remove=True)
    assert m.set("team/wiki", "Docs live on ACME-INTERNAL wiki.")["conflict_verdict"] == "created"


def test_an_org_wide_blacklist_refuses_in_every_namespace_of_that_org_only(m, api, deps, pool):
    """GIVEN a blacklist pattern for the whole org (namespace "")
    WHEN matching values are written in two namespaces, and in another org
    THEN both namespaces refuse them (blacklisted), and the other org writes its row.
    """
    m.blacklist(r"\bssn\b", namespace="")

    a = m.set("user/note", "my SSN is on file", namespace=NS)
    b = m.set("user/note", "the ssn field is required", namespace=NS2)
    other = Mem.open(api, deps, m.org + "-b")
    c = other.set("user/note", "my SSN is on file")

    assert a["conflict_verdict"] == b["conflict_verdict"] == "blacklisted"
    assert memory_rows(pool, m.org) == []
    assert c["conflict_verdict"] == "created"


def test_a_blacklist_pattern_that_is_not_a_regular_expression_matches_as_text(m):
    """GIVEN a blacklist pattern that does not compile as a regular expression
    WHEN a value holding it as plain text is written, and one that does not
    THEN the first is blacklisted and the second created.
    """
    m.blacklist("c++ (beta")

    assert (
        m.set("user/lang", "The user writes C++ (beta) code.")["conflict_verdict"] == "blacklisted"
    )
    assert m.set("user/lang", "The user writes C++ code.")["conflict_verdict"] == "created"


def test_a_locked_row_is_never_changed(m, pool):
    """GIVEN a row written with lock true
    WHEN memory.set writes a new value, then a new value with lock false, then the row is deleted
    THEN every write answers locked at version 1, the value stays, and the delete retires nothing.
    """
    m.set("policy/refunds", "Refunds over $500 go to a human.", lock=True)

    first = m.set("policy/refunds", "Refunds are automatic.")
    second = m.set("policy/refunds", "Refunds are automatic.", lock=False)
    deleted = m.ok("memory.delete", key="policy/refunds")

    assert (first["conflict_verdict"], first["version"]) == ("locked", 1)
    assert (second["conflict_verdict"], second["version"]) == ("locked", 1)
    assert deleted["deleted"] is False
    got = m.get("policy/refunds")["memory"]
    assert (got["value"], got["locked"]) == ("Refunds over $500 go to a human.", True)
    assert version_rows(pool, m.org, "policy/refunds") == [
        (1, "Refunds over $500 go to a human.", "created")
    ]


def test_a_pinned_row_is_not_revised_by_extraction_but_is_by_memory_set(m, deps, pool):
    """GIVEN a row written with pin true, and value updates on for extraction
    WHEN an extraction states the same attribute with a new value, then memory.set does
    THEN the extraction's row answers pinned and the value stays; memory.set's answers updated.
    """
    m.set("user/home_city", "The user lives in Lisbon.", pin=True)
    scripted(deps, reply(fact("user", "home city", "The user lives in Berlin.")))

    with live_setting(pool, memory_extract_value_updates="true"):
        out = m.extract_ok(turns(("user", "I moved to Berlin.")))
        assert verdicts(out) == {"user/home_city": "pinned"}
        assert m.get("user/home_city")["memory"]["value"] == "The user lives in Lisbon."

        row = m.set("user/home_city", "The user lives in Madrid.")

    assert (row["conflict_verdict"], row["version"]) == ("updated", 2)
    got = m.get("user/home_city")["memory"]
    assert (got["value"], got["pinned"]) == ("The user lives in Madrid.", True)


def test_get_returns_the_row(m):
    """GIVEN a row written with tags and a pin
    WHEN memory.get reads it, and a key never written
    THEN the row comes back with its value, kind, sorted tags, version and flags; the other is
    not found.
    """
    m.set("user/pet", "The user has a cat called Miso.", tags=["pets", "family"], pin=True)

    got = m.get("user/pet")
    missing = m.get("user/none")

    assert got["found"] is True
    row = got["memory"]
    assert row["key"] == "user/pet" and row["value"] == "The user has a cat called Miso."
    assert (row["kind"], row["tags"], row["version"]) == ("fact", ["family", "pets"], 1)
    assert (row["user_id"], row["pinned"], row["locked"]) == ("-", True, False)
    assert missing == {"found": False, "memory": None, "ignored_args": []}


def test_delete_retires_a_row_so_it_is_no_longer_found(m, pool):
    """GIVEN a stored row
    WHEN memory.delete retires it, and is asked again
    THEN the first answers deleted, the second does not; get and search no longer find it, and
    a later set creates the key again.
    """
    m.set("user/pet", "The user has a cat called Miso.")
    assert m.hit_keys("Miso cat") == ["user/pet"]

    first = m.ok("memory.delete", key="user/pet")
    second = m.ok("memory.delete", key="user/pet")

    assert (first["deleted"], second["deleted"]) == (True, False)
    assert m.get("user/pet")["found"] is False
    assert m.hit_keys("Miso cat") == []
    assert m.hit_keys("Miso cat", search_mode="lexical") == []
    (row,) = memory_rows(pool, m.org)
    assert row["retired_at"] is not None
    assert m.set("user/pet", "The user has a dog.")["conflict_verdict"] == "created"


def test_each_write_leaves_one_hash_only_audit_row(m, pool):
    """GIVEN an empty namespace
    WHEN memory.set creates a row, writes it unchanged, updates it, and bulk_set writes two rows
    THEN loom.audit_log holds one memory.write row per row written (four), each carrying the
    value's content hash and never the value itself.
    """
    values = ["Secretive plan alpha", "Secretive plan beta", "Plan gamma", "Plan delta"]
    m.set("plan/a", values[0])
    m.set("plan/a", values[0])
    m.set("plan/a", values[1])
    m.ok(
        "memory.bulk_set",
        entries=[{"key": "plan/c", "value": values[2]}, {"key": "plan/d", "value": values[3]}],
    )

    rows = audit_rows(pool, m.org, "memory.write")
    assert [r["body_sha256"] for r in rows] == [canonical_sha(v) for v in values]
    assert {r["namespace"] for r in rows} == {NS}
    assert {r["principal"] for r in rows} == {f"token:writer-{m.org}"}
    every = str(audit_rows(pool, m.org))
    assert not any(v in every for v in values)


def test_a_pattern_re_cannot_compile_is_matched_as_plain_text(m, pool):
    """GIVEN blacklisted patterns Python's re cannot compile: a repeat count past its range and
    an unbalanced bracket
    WHEN values are written THEN each answers, never 500: one holding a pattern's text is
    refused, a plain one is stored."""
    m.blacklist("a{4294967296}")
    m.blacklist("code [x")
    out = m.ok(
        "memory.bulk_set",
        entries=[
            {"key": "user/plain", "value": "The user likes tea."},
            {"key": "user/odd", "value": "It says a{4294967296} in the log."},
            {"key": "user/code", "value": "The code [x is secret."},
        ],
    )
    verdicts = {w["key"]: w["conflict_verdict"] for w in out["written"]}
    assert verdicts["user/plain"] != "blacklisted"
    assert verdicts["user/odd"] == verdicts["user/code"] == "blacklisted"


@pytest.mark.parametrize(
    ("source", "third"), [("extraction", ("conflict", 1)), ("set", ("updated", 2))]
)
def test_one_write_naming_a_key_again_answers_each_entry_from_the_row_just_written(
    m, deps, pool, source, third
):
    """GIVEN one write (what extraction's chunks and digest go through) naming key k/a three
    times: a value, the same value, another value; and k/b twice: locked, then changed
    WHEN it is written
    THEN it never fails: k/a is created, then unchanged, then a conflict (extraction) or a
    new version (memory.set's source); k/b is created locked, then locked.
    """
    entries = [
        Entry(key="k/a", value="The first value."),
        Entry(key="k/a", value="the first value"),
        Entry(key="k/a", value="Another value."),
        Entry(key="k/b", value="A locked value.", locked=True),
        Entry(key="k/b", value="A changed value."),
    ]

    out = write_entries(
        deps,
        org=m.org,
        namespace=NS,
        user_id="-",
        entries=entries,
        source=source,
        value_updates=source
        == "set",  # extraction's default: LOOM_MEMORY_EXTRACT_VALUE_UPDATES off
    )

    assert [(w.key, w.conflict_verdict, w.version) for w in out] == [
        ("k/a", "created", 1),
        ("k/a", "unchanged", 1),
        ("k/a", *third),
        ("k/b", "created", 1),
        ("k/b", "locked", 1),
    ]
    rows = {r["key"]: r for r in memory_rows(pool, m.org)}
    expected = "Another value." if third[0] == "updated" else "The first value."
    assert rows["k/a"]["value"] == expected
    assert (rows["k/b"]["value"], rows["k/b"]["locked"]) == ("A locked value.", True)


def test_two_first_writes_of_one_key_take_turns(m, deps, pool):
    """GIVEN an empty namespace, and each write held for a moment once it has read the rows of
    its keys
    WHEN an explicit set and an extraction (value updates off) write one new key at once, with
    different values
    THEN they take turns: one creates version 1 and the other gets its verdict from that row
    (an extraction's different value is a conflict, an explicit set's is version 2); the live
    row and its history agree.
    """
    read = threading.Barrier(2)

    def held_once_read(org, keys):
        with contextlib.suppress(threading.BrokenBarrierError):
            read.wait(timeout=1.0)  # both reads at once, unless one waits on the other

    deps.hooks.on("memories.locked", held_once_read)

    def write(source_value):
        source, value = source_value
        (out,) = write_entries(
            deps,
            org=m.org,
            namespace=NS,
            user_id="-",
            entries=[Entry(key="user/home_city", value=value)],
            source=source,
            value_updates=False,
        )
        return source, out.conflict_verdict, out.version

    with ThreadPoolExecutor(2) as runner:
        answers = sorted(
            runner.map(
                write,
                [("set", "The user lives in Lisbon."), ("extraction", "The user lives in Porto.")],
            )
        )
    assert answers in (
        [("extraction", "conflict", 1), ("set", "created", 1)],
        [("extraction", "created", 1), ("set", "updated", 2)],
    ), answers
    live = [r for r in memory_rows(pool, m.org, NS) if r["key"] == "user/home_city"]
    history = version_rows(pool, m.org, "user/home_city")
    assert [(live[0]["version"], live[0]["value"])] == [history[-1][:2]]


def test_a_deleted_rows_pin_does_not_come_back_with_its_key(m, deps, pool):
    """GIVEN a pinned memory, deleted
    WHEN the key is written again with no pin, then an extraction (value updates on) states a
    new value for it
    THEN the new row is created unpinned, and the extraction updates it (not `pinned`)."""
    m.set("user/home_city", "The user lives in Lisbon.", pin=True)
    assert m.ok("memory.delete", key="user/home_city")["deleted"] is True
    assert m.set("user/home_city", "The user lives in Faro.")["conflict_verdict"] == "created"
    assert m.get("user/home_city")["memory"]["pinned"] is False
    (out,) = write_entries(
        deps,
        org=m.org,
        namespace=NS,
        user_id="-",
        entries=[Entry(key="user/home_city", value="The user lives in Porto.")],
        source="extraction",
        value_updates=True,
    )
    assert out.conflict_verdict == "updated"
