"""The memory benchmark's generated sets: reproducible, and each question with exactly one answering memory."""

from __future__ import annotations

from bench._memory_sets import make_set


def test_a_set_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    assert make_set(1000) == make_set(1000)
    assert make_set(1000).texts != make_set(1000, seed=38).texts


def test_every_question_has_one_answering_memory_that_names_its_subject() -> None:
    memories = make_set(10_000)
    assert len(memories.texts) == 10_000 and len(memories.questions) == 60
    assert len(set(memories.texts)) == len(memories.texts)
    for question, answer in memories.questions:
        about = question.split("?")[0].split(" ")
        names = [w for w in about if w[:1].isupper()][1:]  # the question word first, then the names
        assert all(n.removesuffix("'s") in memories.texts[answer] for n in names), (question, memories.texts[answer])
