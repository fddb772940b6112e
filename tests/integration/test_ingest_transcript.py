"""`loom ingest-transcript`: Markdown or JSON turns, batched embeds, idempotent re-runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chalicelib import cli
from chalicelib.ops.transcript_ingest import BATCH, ingest_turns
from chalicelib.store.namespaces import set_conversation_logging
from chalicelib.transcript_file import TranscriptError, parse_transcript

LOCOMO = Path(__file__).parents[1] / "fixtures" / "locomo26_sessions1-5.json"


@pytest.fixture
def cli_env(monkeypatch, database_url, org):
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    monkeypatch.setenv("LOOM_ORG", org)


def _turn_count(pool, org, namespace):
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT thread_id) FROM loom.conversations"
            " WHERE org = %s AND namespace = %s",
            (org, namespace),
        ).fetchone()
    return row


def test_markdown_sections_parse_in_order():
    text = "# user\nHello there\n\n# assistant\nHi!\nTwo lines.\n# USER\nbye\n"
    assert parse_transcript(text) == [
        ("user", "Hello there"),
        ("assistant", "Hi!\nTwo lines."),
        ("user", "bye"),
    ]


def test_bad_files_are_refused_with_a_reason():
    deep = "[" * 200_000 + "]" * 200_000  # past the JSON parser's recursion
    for text in (
        "just prose",
        '[{"role": "robot", "content": "x"}]',
        "[1]",
        "{}",
        deep,
        '{"role": "user", "content": ' + deep + "}",
    ):
        with pytest.raises(TranscriptError):
            parse_transcript(text)


def test_a_heading_inside_a_code_fence_is_the_turns_text():
    """GIVEN an assistant turn whose fenced code block holds a `# System` comment line
    WHEN the Markdown transcript is read THEN the fence stays in the assistant's turn."""
    code = "Like this:\n\n```python\n# System\nimport os\n```"
    text = f"# user\nshow me\n\n# assistant\n{code}\n\n# user\nthanks\n"
    assert parse_transcript(text) == [("user", "show me"), ("assistant", code), ("user", "thanks")]
    tilde = "~~~\n# assistant\n~~~"
    assert parse_transcript(f"# user\n{tilde}\n# assistant\nok") == [
        ("user", tilde),
        ("assistant", "ok"),
    ]


def test_a_json_lines_turn_holding_a_line_separator_is_one_turn():
    """GIVEN a JSON Lines transcript whose turn holds U+2028 and U+0085 unescaped (as
    JavaScript's JSON.stringify writes them) WHEN it is read THEN each line is one turn."""
    said = "first\u2028second\u0085third"
    text = json.dumps({"role": "user", "content": said}, ensure_ascii=False) + "\n"
    text += json.dumps({"role": "assistant", "content": "ok"}) + "\n"
    assert parse_transcript(text) == [("user", said), ("assistant", "ok")]


def test_locomo_conversation_ingests_once_and_a_rerun_adds_nothing(cli_env, pool, org, capsys):
    """GIVEN a LoCoMo conversation as JSON turns and a recording namespace
    WHEN it is ingested twice THEN every turn is stored once and the second run adds nothing."""
    turns = json.loads(LOCOMO.read_text())
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "locomo", True)
    args = ["ingest-transcript", "--namespace", "locomo", "--file", str(LOCOMO)]
    assert cli.main(args) == 0
    first = capsys.readouterr()
    assert f"{len(turns)} stored" in first.out
    assert f"{len(turns)}/{len(turns)} turns" in first.err  # the progress bar reached the end
    assert _turn_count(pool, org, "locomo") == (len(turns), 1)
    assert cli.main(args) == 0
    assert f"{len(turns)} duplicate" in capsys.readouterr().out
    assert _turn_count(pool, org, "locomo") == (len(turns), 1)


def test_dry_run_counts_and_appends_nothing(cli_env, pool, org, capsys, tmp_path):
    f = tmp_path / "t.md"
    f.write_text("# user\nhello\n# assistant\nhi\n# user\nhello\n")
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    assert cli.main(["ingest-transcript", "--namespace", "ns", "--file", str(f), "--dry-run"]) == 0
    assert "3 turns (1 assistant, 2 user)" in capsys.readouterr().out
    assert _turn_count(pool, org, "ns") == (0, 0)


def test_a_file_starting_with_a_byte_order_mark_reads_as_its_text(cli_env, pool, org, tmp_path):
    """GIVEN a Markdown transcript saved with a UTF-8 byte order mark
    WHEN it is ingested THEN its two turns are stored (the mark is not text before the
    first heading)."""
    f = tmp_path / "bom.md"
    f.write_bytes("\ufeff# user\nhello\n# assistant\nhi\n".encode())
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    assert cli.main(["ingest-transcript", "--namespace", "ns", "--file", str(f)]) == 0
    assert _turn_count(pool, org, "ns") == (2, 1)


def test_dry_run_refuses_a_turn_a_real_run_would(cli_env, pool, org, capsys, tmp_path):
    """GIVEN a transcript holding a turn conversation.append would refuse (a NUL character)
    WHEN it is ingested with --dry-run THEN it exits 2 naming the turn, as a real run would."""
    f = tmp_path / "t.json"
    f.write_text(json.dumps([{"role": "user", "content": "a\u0000b"}]))
    args = ["ingest-transcript", "--namespace", "ns", "--file", str(f), "--dry-run"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "turn 1: text may not contain the NUL character" in err, err
    assert "A real run would append nothing" in err


def test_a_sent_file_sends_only_the_turns_after_those_counted(cli_env, pool, org, capsys, tmp_path):
    """GIVEN a recording namespace, a transcript of two turns and an empty state directory
    WHEN it is ingested with --sent-file, grows to three turns and is ingested again, is then
    rewound (its third turn now says something else), and its count is made larger than the
    file (another conversation's)
    THEN the first run stores two turns, the second the new one alone; after the rewind the
    turns are sent again from the first (the changed one stored); a count past the file's
    turns starts over too (all duplicate)."""
    f, sent = tmp_path / "t.md", tmp_path / "state" / "sent"
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    args = ["ingest-transcript", "--namespace", "ns", "--file", str(f), "--thread-id", "t-s"]
    args += ["--sent-file", str(sent)]

    def run(text: str) -> str:
        f.write_text(text)
        assert cli.main(args) == 0
        return capsys.readouterr().out.strip().split(": ", 1)[1]

    assert run("# user\nhello\n# assistant\nhi\n") == "2 stored"
    assert sent.read_text().startswith("2 ")
    assert run("# user\nhello\n# assistant\nhi\n# user\nbye\n") == "1 stored"
    assert sent.read_text().startswith("3 ")
    assert run("# user\nhello\n# assistant\nhi\n# user\nsee you\n") == "2 duplicate, 1 stored"
    sent.write_text("7 t6-abc\n")
    assert run("# user\nhello\n# assistant\nhi\n# user\nsee you\n") == "3 duplicate"
    assert _turn_count(pool, org, "ns") == (4, 1)


def test_clean_text_removes_what_a_turn_cannot_hold(cli_env, pool, org, capsys, tmp_path):
    """GIVEN a transcript whose turns hold a NUL and a lone surrogate, and one holding nothing
    else
    WHEN it is ingested with --clean-text THEN the turns are stored without them (the empty
    one left out), where without the flag the file is refused."""
    f = tmp_path / "t.json"
    turns = [{"role": "user", "content": "a\u0000b"}, {"role": "assistant", "content": "c\ud83d"},
             {"role": "user", "content": "\u0000"}]  # fmt: skip
    f.write_text(json.dumps(turns))
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    args = ["ingest-transcript", "--namespace", "ns", "--file", str(f), "--thread-id", "t-c"]
    assert cli.main(args) == 2
    assert cli.main([*args, "--clean-text"]) == 0
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT role, content FROM loom.conversations WHERE org = %s ORDER BY ts, msg_id",
            (org,),
        ).fetchall()
    assert sorted(rows) == [("assistant", "c"), ("user", "ab")]


def test_recording_off_appends_nothing_and_says_how_to_turn_it_on(cli_env, pool, org, capsys):
    assert cli.main(["ingest-transcript", "--namespace", "off", "--file", str(LOCOMO)]) == 2
    assert "conversation.set_logging" in capsys.readouterr().err
    assert _turn_count(pool, org, "off") == (0, 0)


def test_thread_id_flag_and_repeated_turns_stay_distinct(cli_env, pool, org, tmp_path, capsys):
    f = tmp_path / "t.json"
    f.write_text(json.dumps([{"role": "user", "content": "ok"}, {"role": "user", "content": "ok"}]))
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    args = ["ingest-transcript", "--namespace", "ns", "--file", str(f), "--thread-id", "t-1"]
    assert cli.main(args) == 0
    with pool.connection() as conn:
        threads = conn.execute(
            "SELECT thread_id, count(*) FROM loom.conversations WHERE org = %s GROUP BY 1", (org,)
        ).fetchall()
    assert threads == [("t-1", 2)]


@pytest.mark.parametrize(
    ("turns", "flags", "said"),
    [
        ([{"role": "user", "content": "fine"}, {"role": "user", "content": "a\u0000b"}], [],
         "turn 2: text may not contain the NUL character"),
        ([{"role": "user", "content": "fine"}], ["--thread-id", "t" * 300], "thread_id"),
        ([{"role": "user", "content": "half a pair \ud83d"}], [], "turn 1: text may not contain"),
    ],
)  # fmt: skip
def test_a_turn_append_would_refuse_refuses_the_file_and_nothing_is_written(
    cli_env, pool, org, tmp_path, capsys, turns, flags, said
):
    """GIVEN a recording namespace and a JSON transcript holding a turn conversation.append
    would refuse (a NUL character, a thread id over 256 characters, a lone surrogate)
    WHEN it is ingested
    THEN the command exits 2 naming the file, the turn and the problem, and writes nothing."""
    f = tmp_path / "t.json"
    f.write_text(json.dumps(turns))
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    assert cli.main(["ingest-transcript", "--namespace", "ns", "--file", str(f), *flags]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and said in err and "Nothing was appended" in err, err
    assert _turn_count(pool, org, "ns") == (0, 0)


def test_turns_are_embedded_in_batches(deps, embedder, pool, org):
    turns = [("user" if i % 2 else "assistant", f"turn number {i}") for i in range(BATCH + 10)]
    with pool.connection() as conn:
        set_conversation_logging(conn, org, "ns", True)
    counts = ingest_turns(deps, org=org, namespace="ns", agent="a", thread_id="t", turns=turns)
    assert counts == {"stored": BATCH + 10}
    # One call a batch, each turn in it once (context vectors are derived from stored ones).
    assert embedder.batches == [BATCH, 10]


def test_a_json_lines_turn_of_an_unknown_role_is_skipped_not_fatal():
    """GIVEN JSON Lines holding, between two turns, a line of a role no turn has (a client's
    bookkeeping) WHEN the file is read THEN the two turns are read and that line skipped."""
    lines = [
        '{"role": "user", "content": "hello"}',
        '{"role": "checkpoint", "content": "saved"}',
        '{"role": "assistant", "content": "hi"}',
    ]
    assert parse_transcript("\n".join(lines)) == [("user", "hello"), ("assistant", "hi")]


def test_cursors_plain_text_transcript_is_read_without_its_thinking_and_tool_parts():
    """GIVEN Cursor's plain-text agent transcript WHEN it is read THEN each `user:` block is
    what the person typed (inside <user_query>) and each `A:` block the reply's text, its
    [Thinking] lines and [Tool call] / [Tool result] parts left out."""
    text = (
        Path(__file__).parents[1] / "fixtures" / "capture" / "cursor-transcript.txt"
    ).read_text()
    assert parse_transcript(text) == [
        ("user", "Add a retry with backoff to the webhook sender in notify/webhook.ts."),
        ("assistant", "I'll wrap the POST in a retry loop: three attempts, doubling the delay"
         " from 200 ms.\nDone. sendWebhook now retries 429 and 5xx answers up to three times."),
        ("user", "Don't retry on 4xx other than 429."),
        ("assistant", "Right: only 429 and 5xx are retried; any other 4xx fails at once."),
    ]  # fmt: skip


def test_brief_and_extract_need_a_server_and_a_sent_file(cli_env, pool, org, capsys, tmp_path):
    """GIVEN --brief or --extract WHEN there is no --url, or no --sent-file to keep their
    progress beside THEN the command exits 2 saying which, before anything is sent."""
    f = tmp_path / "t.md"
    f.write_text("# user\nhello\n\n# assistant\nhi\n")
    base = ["ingest-transcript", "--namespace", "ns", "--file", str(f)]
    assert cli.main([*base, "--extract"]) == 2
    assert "give --url" in capsys.readouterr().err
    assert cli.main([*base, "--brief", "session_end", "--url", "http://127.0.0.1:9"]) == 2
    assert "give one" in capsys.readouterr().err
