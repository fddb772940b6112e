"""`loom demote-activity-narration`: a dry run without --apply; --apply demotes and labels
through memory.apply; --classifier fact_quality takes every junk class; --days leaves alone
what memory.get read by key; pinned rows and rows labelled before are left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib import cli
from chalicelib.deps import set_deps, utcnow
from tests.integration.test_memory_quality import quality
from tests.integration.test_memory_support import NS, NS2, Mem, audit_rows

ROWS = {
    "steps/tests": "Ran the tests",
    "steps/opened": "Opened billing/export.py",
    "talk/asked": "The user asked me to refactor the auth module",
    "probe/asdf": "asdf",
    "status/build": "The build is running now",
    "user/tests": "prefers pytest over unittest",
    "user/fridays": "deploys on Fridays are forbidden",
}


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


@pytest.fixture
def cli_env(monkeypatch, database_url, org, deps):
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    monkeypatch.setenv("LOOM_ORG", org)
    return deps


@pytest.fixture
def rows(m):
    for key, value in ROWS.items():
        m.set(key, value)
    m.set("steps/other-ns", "Ran the tests", namespace=NS2)
    return m


@pytest.fixture
def demote(cli_env):
    """`loom demote-activity-narration --namespace NS FLAGS...`, its exit code."""

    def run(*flags: str) -> int:
        try:
            return cli.main(["demote-activity-narration", "--namespace", NS, *flags])
        finally:
            set_deps(cli_env)  # the CLI swaps the process-wide Deps, and closes its own

    return run


def confidences(pool, org: str, namespace: str = NS) -> dict[str, float]:
    return {k: c for k, (c, _, _) in quality(pool, org, namespace).items()}


def test_a_dry_run_reports_and_changes_nothing(rows, pool, demote, capsys):
    """GIVEN steps, narration, a probe, a status and durable facts
    WHEN the command runs without --apply
    THEN it names what it found (trajectory 2, narration 1) and would change 3, and no row
    changes.
    """
    before = quality(pool, rows.org)

    code = demote()

    out = capsys.readouterr().out
    assert code == 0
    assert "junk found: narration 1, trajectory 2; would change 3" in out
    assert "dry run" in out
    assert quality(pool, rows.org) == before


def test_apply_demotes_and_labels_only_activity_narration_by_default(rows, pool, demote, capsys):
    """GIVEN the same rows, and a step in another namespace
    WHEN the command runs with --apply
    THEN the steps and the narration have confidence 0.25 and their class's tag; the probe,
    the status, the durable facts and the other namespace's row are unchanged; a progress line
    reached 7/7 on stderr; memory.apply audited the change.
    """
    code = demote("--apply")

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "7/7 memories" in captured.err
    got = quality(pool, rows.org)
    assert got["steps/tests"][:2] == (0.25, ["quality:trajectory"])
    assert got["talk/asked"][:2] == (0.25, ["quality:narration"])
    for key in ("probe/asdf", "status/build", "user/tests", "user/fridays"):
        assert got[key][:2] == (1.0, []), key
    assert confidences(pool, rows.org, NS2) == {"steps/other-ns": 1.0}
    assert [r["principal"] for r in audit_rows(pool, rows.org, "memory.apply")] == ["local"]


def test_the_fact_quality_classifier_takes_every_junk_class(rows, pool, demote, capsys):
    code = demote("--apply", "--classifier", "fact_quality")

    assert code == 0
    got = quality(pool, rows.org)
    assert got["probe/asdf"][:2] == (0.25, ["quality:probe"])
    assert got["status/build"][:2] == (0.25, ["quality:status"])
    assert confidences(pool, rows.org)["user/tests"] == 1.0
    assert confidences(pool, rows.org)["user/fridays"] == 1.0


def test_a_second_run_changes_nothing_more_and_restore_undoes_it(rows, pool, demote, capsys):
    """GIVEN a namespace the command demoted
    WHEN it runs again with --apply, then memory.apply restores a row
    THEN the second run changes nothing (rows labelled before are left alone), and the
    restored row is back at 1.0 without its tag.
    """
    assert demote("--apply") == 0
    capsys.readouterr()

    assert demote("--apply") == 0

    assert "changed 0" in capsys.readouterr().out
    assert confidences(pool, rows.org)["steps/tests"] == 0.25
    rows.ok("memory.apply", as_="admin", actions=[{"action": "restore", "key": "steps/tests"}])
    assert quality(pool, rows.org)["steps/tests"][:2] == (1.0, [])


def test_days_leaves_alone_what_memory_get_read_by_key(rows, pool, demote, capsys, clock):
    """GIVEN one step read by memory.get now and another read 30 days ago
    WHEN the command runs with --apply --days 7
    THEN the step read now is left alone (and said so); the one read 30 days ago is demoted.
    """
    rows.get("steps/tests")
    clock.now = utcnow() - timedelta(days=30)
    rows.get("steps/opened")
    clock.now = None

    code = demote("--apply", "--days", "7")

    assert code == 0
    assert "1 read by key recently" in capsys.readouterr().out
    assert confidences(pool, rows.org)["steps/tests"] == 1.0
    assert confidences(pool, rows.org)["steps/opened"] == 0.25


def test_pinned_rows_are_left_alone_and_label_only_keeps_confidence(rows, pool, demote, capsys):
    rows.set("steps/tests", "Ran the tests", pin=True)

    code = demote("--apply", "--label-only")

    assert code == 0
    got = quality(pool, rows.org)
    assert got["steps/tests"][:2] == (1.0, [])
    assert got["steps/opened"][:2] == (1.0, ["quality:trajectory"])
    assert "1 pinned or locked" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags", [["--days", "0"], ["--factor", "2"], ["--classifier", "everything"]]
)
def test_bad_flags_are_refused(demote, flags):
    with pytest.raises(SystemExit):
        demote(*flags)


def test_a_large_namespace_is_read_in_pages(m, pool, demote, capsys):
    """GIVEN 600 steps, more than a page
    WHEN the command runs with --apply
    THEN every one is demoted, with a progress line per page on stderr.
    """
    m.ok(
        "memory.bulk_set",
        entries=[{"key": f"steps/{i:03}", "value": f"Ran the tests {i}"} for i in range(500)],
    )
    m.ok(
        "memory.bulk_set",
        entries=[{"key": f"steps/{i:03}", "value": f"Ran the tests {i}"} for i in range(500, 600)],
    )

    assert demote("--apply") == 0

    captured = capsys.readouterr()
    assert "250/600" in captured.err and "600/600" in captured.err
    assert set(confidences(pool, m.org).values()) == {0.25}
