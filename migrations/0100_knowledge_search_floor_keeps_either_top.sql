-- knowledge_search, sixth version (its text removed, see below): a floor that keeps what either half ranks
-- high, and explain's cuts (issue 37). Supersedes the function of 0093 (one more return column and three
-- more parameters: a new signature, so 0093's is dropped).
--
-- This version was superseded by 0103 (issue 43: the fusion of each embedding model, the cap that fills
-- the limit, two more floor rules; two more parameters and two more return columns), which keeps everything
-- described here and holds the live body (read it whole in docs/schema.sql). Its body, comment and grants
-- were removed from this file so that migrations/ holds one text of knowledge_search, as for 0093 and 0071:
-- git holds it, and migrations/edited.toml lets a database that applied it pass the runner's checksum
-- check. The file still drops 0093's function; on a fresh database no knowledge_search exists between this
-- file and 0103, and no migration between them calls it. Everything not named here is as 0093's header describes it (its body,
-- removed from 0093, is this one with the floor and the tail below changed).
--
-- The floor. 0093 kept a candidate when the better of its cosine similarity and its BM25 over the query's
-- best possible BM25 reached p_min_relevance (0.3 by default), and so cut evidence whose words differ from
-- the question's (a conversational set lost 4 points of recall@8). Now a candidate is kept when either
--   - its relevance reaches p_min_relevance (as before), or
--   - the dense or the lexical half ranks it within its own first p_keep_top (a half's own top), and its
--     relevance reaches p_keep_floor (a lower floor, so an off-topic query's best guesses still go).
-- p_keep_top 0 gives 0093's floor exactly. The defaults are measured (docs/decisions.md, Retrieval).
--
-- Explain. With p_explain the function also returns the candidates it cut, each with the rule in `cut`:
-- `relevance_floor` (under the floor), `per_source_cap` (past the cap of its source), `beyond_limit` (ranked
-- past the limit); a kept hit's `cut` is NULL. Without p_explain the statement's text is 0093's tail (the
-- cut rows are never computed, `cut` is NULL): the search path pays nothing for explain.

DROP FUNCTION IF EXISTS public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer, text, double precision, integer, integer,
    integer, double precision, double precision, double precision);
