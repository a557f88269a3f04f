"""The real judged sets' loaders (bench/real_sets.py): each format parsed, an absent set skipped, never an error.

The parsers are tested on small texts written here; the cached sets themselves are checked only when present.
"""

import json
from pathlib import Path

import pytest

from bench import real_sets as rs


def _write(cache: Path, name: str, texts: dict[str, str]) -> None:
    (cache / name).mkdir(parents=True)
    for filename, text in texts.items():
        (cache / name / filename).write_text(text)


def test_an_absent_set_is_skipped_not_an_error(tmp_path: Path) -> None:
    present, skipped = rs.load_all(tmp_path)
    assert present == {} and set(skipped) == set(rs.SETS)
    assert rs.load("npl", tmp_path) is None


def test_npl_records_end_at_a_slash_line_and_queries_are_lower_cased(tmp_path: Path) -> None:
    _write(tmp_path, "npl", {
        "doc-text": "1\ncompact memories have\nflexible capacities\n   /\n2\nan analogue computer\n   /\n",
        "query-text": "1\nANALOGUE COMPUTERS\n/\n",
        "rlv-ass": "1\n    2\n   /\n",
    })  # fmt: skip
    s = rs.load("npl", tmp_path)
    assert s is not None
    assert s.documents == [("1", "compact memories have flexible capacities"), ("2", "an analogue computer")]
    assert s.queries == [("1", "analogue computers")] and s.judgments == {"1": {"2": 1}}
    assert s.collections() == {"npl": (s.documents, s.queries)}


def test_smart_sets_read_the_named_fields_and_leave_unjudged_queries_out(tmp_path: Path) -> None:
    _write(tmp_path, "cisi", {
        "CISI.ALL": ".I 1\n.T\nA title\n.A\nAuthor, A.\n.W\n  Some text\nmore.\n.X\n1\t5\t1\n"
                    ".I 2\n.T \nOther\n.W\nWords\n",
        "CISI.QRY": ".I 1\n.W\nwhat about titles?\n.I 2\n.W\nunjudged\n",
        "CISI.REL": "     1     2\t0\t0.000000\n",
    })  # fmt: skip
    s = rs.load("cisi", tmp_path)
    assert s is not None
    assert s.documents == [("1", "A title Author, A. Some text more."), ("2", "Other Words")]
    assert s.judgments == {"1": {"2": 1}}
    assert s.collections()["cisi"][1] == [("1", "what about titles?")]


def test_realtalk_is_one_collection_per_chat_and_drops_evidence_matching_no_turn(tmp_path: Path) -> None:
    chat = {
        "session_1": [{"dia_id": "D1:1", "speaker": "Kevin", "clean_text": "I play basketball"},
                      {"dia_id": "D1:2", "speaker": "Paola", "clean_text": "I watch tennis."},
                      {"dia_id": "D1:3", "speaker": "Paola", "clean_text": ""}],
        "qa": [{"question": "What does Kevin play?", "evidence": ["D1:1."], "category": 1},
               {"question": "What does Paola watch?", "evidence": ["D1:1-D1:2; D9:9"], "category": 1},
               {"question": "What does Kevin cook?", "evidence": ["D7:1"], "category": 2}],
    }  # fmt: skip
    other = {"session_1": [{"dia_id": "D1:1", "speaker": "Emi", "clean_text": "hello"}],
             "qa": [{"question": "Who is Emi?", "evidence": ["D1:1"], "category": 1}]}  # fmt: skip
    texts = {f"{c}.json": json.dumps(other) for c in rs.REALTALK_CHATS}
    texts["Chat_3_Kevin_Paola.json"] = json.dumps(chat)
    _write(tmp_path, "realtalk", texts)
    s = rs.load("realtalk", tmp_path)
    assert s is not None
    assert ("chat3:D1:1", "Kevin: I play basketball") in s.documents and "chat3:D1:3" not in s.collection_of_document
    assert s.judgments["chat3:q0"] == {"chat3:D1:1": 1}
    assert s.judgments["chat3:q1"] == {"chat3:D1:1": 1, "chat3:D1:2": 1}
    assert "chat3:q2" not in s.judgments and s.stats["questions_without_evidence_not_scored"] == 1
    assert s.stats["dropped_matching_no_turn"] == 1 and len(s.collections()) == 10
    unanswerable = rs.realtalk_unanswerable(s)
    assert "Who is Emi?" in unanswerable["chat3"] and "Who is Emi?" not in unanswerable["chat1"]
    assert "What does Kevin play?" in unanswerable["chat1"]


def test_the_cached_sets_when_present_match_their_published_sizes() -> None:
    present, _ = rs.load_all()
    if not present:
        pytest.skip("no real set cached (python -m bench.real_sets import)")
    sizes = {"npl": (11429, 93), "cisi": (1460, 76), "cacm": (3204, 52), "realtalk": (8944, 704)}
    for name, s in present.items():
        assert (s.stats["documents"], s.stats["judged_queries"]) == sizes[name], name
