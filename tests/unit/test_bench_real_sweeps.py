"""The offline fusion and floor simulation (bench/_real_sweeps.py) re-ranks a pool as `knowledge_search` would."""

import numpy as np

from bench import _real_sweeps as sw

NAN = float("nan")


def _pool() -> sw.Pool:
    # four candidates: 10 and 11 in both lists, 12 dense only, 13 lexical only; 10 and 12 share a source
    return sw.Pool(
        chunk=np.array([10, 11, 12, 13]),
        doc=["a", "b", "a", "c"],
        source=np.array([0, 1, 0, 2]),
        cos=np.array([0.9, 0.5, 0.7, 0.2]),
        bm25=np.array([2.0, 6.0, NAN, 4.0]),
        dense_rank=np.array([1, 3, 2, NAN]),
        lexical_rank=np.array([3, 1, NAN, 2]),
        sql_score=np.zeros(4),
        best_bm25=10.0,
    )


def test_convex_fusion_normalises_each_list_over_its_members_and_absent_scores_zero() -> None:
    p = _pool()
    score, member = sw.fused(p, 0.3)
    dense = np.array([1.0, 0.0, 0.5, 0.0])  # (cos - 0.5) / 0.4 over 10, 11, 12
    lexical = np.array([0.0, 1.0, 0.0, 0.5])  # (bm25 - 2) / 4 over 10, 11, 13
    assert member.all() and np.allclose(score, 0.3 * dense + 0.7 * lexical)
    ranked, _ = sw.order(p, 0.3)
    assert [int(p.chunk[i]) for i in ranked] == [11, 13, 10, 12]
    assert sw.documents(p, ranked) == ["b", "c", "a"]


def test_a_zero_weight_leaves_its_list_out_and_rrf_sums_reciprocal_ranks() -> None:
    p = _pool()
    assert [int(p.chunk[i]) for i in sw.order(p, 1.0)[0]] == [10, 12, 11]
    assert [int(p.chunk[i]) for i in sw.order(p, 0.0)[0]] == [11, 13, 10]
    score, _ = sw.fused(p, "rrf")
    assert np.isclose(score[0], 1 / 61 + 1 / 63) and np.isclose(score[2], 1 / 62)


def test_ties_are_broken_by_chunk_id_as_the_sql_does() -> None:
    p = _pool()
    p.cos = np.array([0.5, 0.5, 0.5, 0.5])
    p.bm25 = np.array([NAN, NAN, NAN, NAN])
    p.lexical_rank = np.array([NAN, NAN, NAN, NAN])
    p.dense_rank = np.array([1, 2, 3, 4])
    p.chunk = np.array([13, 11, 12, 10])
    assert [int(p.chunk[i]) for i in sw.order(p, 0.3)[0]] == [10, 11, 12, 13]


def test_the_absolute_floor_reads_bm25_over_the_best_possible_only_for_lexical_candidates() -> None:
    p = _pool()
    assert np.allclose(p.relevance(), [0.9, 0.6, 0.7, 0.4])
    ranked = sw.kept_ranking(p, sw.absolute(0.65), 0.3)
    assert [int(p.chunk[i]) for i in ranked] == [10, 12]
    keep_top = sw.kept_ranking(p, sw.absolute(0.65, keep_halves_top=1, share=0.9), 0.3)
    assert [int(p.chunk[i]) for i in keep_top] == [11, 10, 12]  # 11 tops the lexical list, 0.6 >= 0.9 x 0.65


def test_a_gate_closes_the_whole_query_and_relative_rules_read_the_querys_own_best() -> None:
    p = _pool()
    assert len(sw.kept_ranking(p, sw.gated(0.95, None), 0.3)) == 0
    assert len(sw.kept_ranking(p, sw.gated(0.95, 0.5), 0.3)) == 4  # best BM25 6 / 10 reaches 0.5
    halves = sw.kept_ranking(p, sw.relative_halves(0.9), 0.3)
    assert sorted(int(p.chunk[i]) for i in halves) == [10, 11]  # cos 0.9 of best 0.9; bm25 6 of best 6
    fused = sw.kept_ranking(p, sw.relative_fused(0.9, first=2), 0.3)
    assert [int(p.chunk[i]) for i in fused] == [11, 13]


def test_the_per_source_cap_and_the_metrics() -> None:
    p = _pool()
    ranked, _ = sw.order(p, 0.3)
    assert [int(p.chunk[i]) for i in sw.cap(p, ranked, 1)] == [11, 13, 10, 12]  # 12 fills after the cap
    assert sw.recall(["b", "c", "a"], {"a": 1, "z": 1}, 2) == 0.0 and sw.recall(["b", "a"], {"a": 1}, 2) == 1.0
    assert sw.ndcg10(["a"], {"a": 1}) == 1.0
    assert sw.score([["a", "b"]], [{"b": 1}])["recall@8"] == 1.0


def test_the_split_floor_has_a_threshold_per_half() -> None:
    p = _pool()  # cos 0.9, 0.5, 0.7, 0.2; bm25 / best 0.2, 0.6, -, 0.4
    assert sorted(int(p.chunk[i]) for i in sw.kept_ranking(p, sw.split(0.8, 0.5), 0.3)) == [10, 11]
    assert sorted(int(p.chunk[i]) for i in sw.kept_ranking(p, sw.split(0.95, 0.3), 0.3)) == [11, 13]
    assert "split_cosine_0.35_bm25_0.25" in sw.rules() and "absolute_0.32" in sw.rules()


def test_the_sql_gate_passes_every_candidate_of_an_answered_query_and_the_share_reads_its_best() -> None:
    p = _pool()  # relevance 0.9, 0.6, 0.7, 0.4
    assert sorted(int(p.chunk[i]) for i in sw.kept_ranking(p, sw.floor_gate(0.65), 0.3)) == [10, 12]
    assert len(sw.kept_ranking(p, sw.floor_gate(0.65, gate=0.85), 0.3)) == 4
    assert len(sw.kept_ranking(p, sw.floor_gate(0.65, gate=0.95), 0.3)) == 2
    assert sorted(int(p.chunk[i]) for i in sw.kept_ranking(p, sw.floor_gate(0.8, share=0.65), 0.3)) == [10, 11, 12]
