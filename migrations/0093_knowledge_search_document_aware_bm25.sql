-- knowledge_search, fifth version (its text removed, see below): the lexical half knows the document
-- (issue 24, part 1). Supersedes the function of 0071, which superseded 0060's, 0041's and 0011's.
--
-- This version was superseded by 0100 (issue 37: the floor keeps what either half ranks in its top, and
-- explain's cut candidates; three more parameters and a return column), which keeps everything described
-- here and holds the live body (read it whole in docs/schema.sql). Its body, comment and grants were
-- removed from this file so that migrations/ holds one text of knowledge_search, as issue 24 did for 0071:
-- git holds it, and migrations/edited.toml lets a database that applied it pass the runner's checksum
-- check. The file still drops 0071's function, so a database that applied 0071's text loses it here as
-- before; on a fresh database no knowledge_search exists between this file and 0100, and no migration
-- between them calls it.
--
-- A chunk's lexical score is now a mix of its own BM25 and its source's, the source scored as one document
-- with the source-level statistics of migrations/0092 (its length and term frequencies; the scope's source
-- count, average source length and source document frequencies):
--
--     bm25 = (1 - p_source_weight) * BM25(chunk) + p_source_weight * BM25(source)
--
-- The chunk stays the unit returned and cited; the source's score only reorders the lexical candidates
-- (the 2 x candidates best chunks by their postings, completed over the common lexemes as before) and so
-- the fused list. A single-chunk source scores exactly its chunk's BM25 (same length, same counts), and
-- a long source is length-normalised against the scope's average source length (b applies at both levels),
-- so it gains nothing for being long. The weight and the mix were chosen on Cranfield and a long-document
-- set (docs/decisions.md, "Issue 24: document-aware BM25"); 0 gives 0071's ranking exactly. The relevance
-- floor compares the mix with the query's best possible mix. Everything else (dense half, fusion, floor,
-- cap, errors) is unchanged from 0071.

DROP FUNCTION IF EXISTS public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer, text, double precision, integer, integer,
    integer, double precision, double precision);
