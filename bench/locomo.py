"""Loader for the LoCoMo development conversations."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DATA_DIR = Path(
    os.environ.get(
        "LOOM_LOCOMO_DIR",
        Path(__file__).resolve().parents[1].parent / "shared/data/locomo-dev",
    )
)

CATEGORIES = (1, 2, 3, 4)
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation."""

    conv_id: str
    dia_id: str
    speaker: str
    text: str
    session: int
    session_date: str


@dataclass(frozen=True)
class Question:
    """One answerable question with the dia_ids of its evidence turns."""

    conv_id: str
    question: str
    answer: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    """A conversation with its turns and answerable questions."""

    conv_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def turn_index(self) -> dict[str, int]:
        """Map each dia_id to its position in `turns`."""
        return {t.dia_id: i for i, t in enumerate(self.turns)}


def turn_text(turn: Turn) -> str:
    """Text of a turn as indexed for retrieval."""
    return f"{turn.speaker}: {turn.text}"


def split_evidence(raw: list[str]) -> list[str]:
    """Split messy evidence entries into individual dia_ids."""
    return [part for item in raw for part in _EVIDENCE_SPLIT.split(str(item)) if part]


def _session_numbers(data: dict) -> list[int]:
    """Numbers of the sessions that hold at least one turn, in order."""
    numbers = []
    for key, value in data.items():
        match = _SESSION_KEY.fullmatch(key)
        if match and isinstance(value, list) and value:
            numbers.append(int(match.group(1)))
    return sorted(numbers)


def _turns(conv_id: str, data: dict) -> list[Turn]:
    """All turns of a conversation, session by session."""
    turns = []
    for n in _session_numbers(data):
        date = data.get(f"session_{n}_date_time", "")
        for raw in data[f"session_{n}"]:
            turns.append(Turn(conv_id, raw["dia_id"], raw["speaker"], raw["text"], n, date))
    return turns


def _questions(conv_id: str, data: dict, known: set[str]) -> list[Question]:
    """Category 1-4 questions with at least one resolvable evidence id."""
    questions = []
    for raw in data.get("qa", []):
        if raw.get("category") not in CATEGORIES:
            continue
        evidence = split_evidence(raw.get("evidence", []))
        if not any(e in known for e in evidence):
            continue
        questions.append(
            Question(
                conv_id, raw["question"], str(raw.get("answer", "")), raw["category"], evidence
            )
        )
    return questions


def load_file(path: Path) -> Conversation:
    """Load one conversation file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conv_id = path.stem
    turns = _turns(conv_id, data)
    known = {t.dia_id for t in turns}
    return Conversation(
        conv_id, data["speaker_a"], data["speaker_b"], turns, _questions(conv_id, data, known)
    )


def load(conv_ids: list[str] | None = None, data_dir: Path | None = None) -> list[Conversation]:
    """Load the conversations, all of them or those named by `conv_ids`."""
    root = Path(data_dir or DATA_DIR)
    paths = sorted(root.glob("*.json"), key=lambda p: p.stem)
    if conv_ids is not None:
        wanted = {str(c) for c in conv_ids}
        paths = [p for p in paths if p.stem in wanted]
    return [load_file(p) for p in paths]
