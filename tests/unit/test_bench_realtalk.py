"""The REALTALK bench reads the ten conversations and never the held-out LoCoMo folder beside them."""

from __future__ import annotations

import json
from pathlib import Path

from bench.bench_memory_realtalk import CHAT_FILE, load_corpus


def test_only_the_ten_chat_files_match_and_never_the_held_out_locomo_folder() -> None:
    assert CHAT_FILE.match("data/Chat_1_Emi_Elise.json") and CHAT_FILE.match("data/Chat_10_Fahim_Muhhamed.json")
    for held_out in ("data/locomo/locomo10.json", "data/locomo/Chat_1_x.json", "data/raw/Chat_1_x.json"):
        assert not CHAT_FILE.match(held_out)


def test_each_turn_is_its_speakers_memory_and_each_question_is_asked_as_each_evidence_holder(tmp_path: Path) -> None:
    chat = {
        "session_1": [
            {"clean_text": "I love hiking", "speaker": "Emi", "date_time": "29.12.2023, 22:42:04", "dia_id": "D1:1"},
            {"clean_text": "  ", "speaker": "elise", "date_time": "29.12.2023, 22:43:04", "dia_id": "D1:2"},
            {"clean_text": "Me too", "speaker": "elise", "date_time": "30.12.2023, 00:32:20", "dia_id": "D1:3"},
        ],
        "session_1_date_time": "29.12.2023, 22:42:04",
        "qa": [{"question": "Who hikes?", "evidence": ["D1:1", "D1:3", "D9:9"]}],
    }
    path = tmp_path / "Chat_1_Emi_Elise.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    corpus = load_corpus([path])
    assert [(s, k, t) for s, k, t, _ in corpus.turns] == [
        ("emi", "c1_t1", "I love hiking"),
        ("elise", "c1_t2", "Me too"),
    ]
    assert corpus.questions == [("emi", "Who hikes?", ["c1_t1"]), ("elise", "Who hikes?", ["c1_t2"])]
    assert corpus.missing_evidence == 1
