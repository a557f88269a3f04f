-- knowledge_search, seventh version, and the fusion of each embedding model (issue 43). Supersedes the
-- function of 0100 (two more parameters and two more return columns: a new signature, so 0100's is
-- dropped). Everything not named here is as 0100's and 0093's headers describe it.
--
-- The fusion belongs to the model. How the dense and the BM25 lists mix depends on how good the model's
-- vectors are, so each registered model carries its calibrated fusion (method, dense and lexical weight,
-- with a note of what chose them) in agent.embedding_models, and a search under that model uses it unless
-- the caller names weights or a method of its own (p_dense_weight, p_lexical_weight, p_fusion now default
-- to NULL: the model's). Scores stay min-max normalised per list for every model.
--
-- The cap fills the limit. 0100 cut a candidate past its source's cap (p_per_source) even when the limit
-- had room no other source could fill, so a question one document answers got three chunks of it. Now the
-- capped candidates follow every candidate within its source's cap, by score, and fill what the limit
-- leaves: the cap is a preference for variety, not a loss of evidence. `placed` says which rule placed a
-- hit (`rank`, or `cap_fill`); in explain mode `per_source_cap` now names a capped candidate the limit
-- had no room for.
--
-- An unanswered query returns nothing. The floor judges each candidate alone, so a query nothing answers
-- still got the few candidates that share a common word with it. Now a query is answered when its best
-- candidate's cosine similarity reaches p_answer_cosine, or (an exact-words escape, for a query its words
-- match but the model embeds poorly) its best BM25 over the best possible reaches p_answer_lexical; else no
-- candidate is kept (explain: `query_unanswered`). A cosine means something only for its model, so the
-- cosine that answers a query is the model's too (`answer_cosine`, NULL: every query is answered), unless
-- the caller names one (-1 answers every query). Measured: docs/decisions.md, "Does the relevance floor cut
-- evidence?". `relevance` returns
-- each hit's floor measure: the better of its cosine similarity and its BM25 over the best possible.

ALTER TABLE agent.embedding_models
    ADD COLUMN fusion_method text NOT NULL DEFAULT 'convex' CHECK (fusion_method IN ('convex', 'rrf')),
    ADD COLUMN dense_weight double precision NOT NULL DEFAULT 0.3 CHECK (dense_weight >= 0 AND dense_weight <= 1),
    ADD COLUMN lexical_weight double precision NOT NULL DEFAULT 0.7
        CHECK (lexical_weight >= 0 AND lexical_weight <= 1),
    ADD COLUMN fusion_calibration text NOT NULL DEFAULT 'not calibrated: the project default fusion'
        CHECK (btrim(fusion_calibration) <> '' AND length(fusion_calibration) <= 500),
    ADD COLUMN answer_cosine double precision CHECK (answer_cosine BETWEEN -1 AND 1),
    ADD CONSTRAINT embedding_models_fusion_weighs_something CHECK (dense_weight + lexical_weight > 0);

-- The two shipped models. WordLlama is measured here (python -m bench real_retrieval): convex dense 0.3 has
-- the best mean nDCG@10 over the real judged sets. OpenAI's model cannot be reached from the machines that
-- measure, so it gets the fusion that needs no calibration, reciprocal ranks with equal weights, until a
-- deployment that can reach it runs the same bench (docs/decisions.md, "Which fusion does each model get?").
UPDATE agent.embedding_models
   SET fusion_method = 'convex', dense_weight = 0.3, lexical_weight = 0.7, answer_cosine = 0.35,
       fusion_calibration = 'measured 2026-12-06 by bench real_retrieval: convex dense 0.3 has the best mean '
                            'nDCG@10 over NPL, CISI, CACM and REALTALK (0.449; dense 0.4 0.447, RRF 0.423); '
                            'a query whose best cosine is under 0.35 is unanswered (1.1 off-topic hits of 8 '
                            'instead of 4.0, no recall@8 lost beyond the 0.25 floor''s 0.0073)'
 WHERE model_id = 'local/wordllama-l2-supercat-256';
UPDATE agent.embedding_models
   SET fusion_method = 'rrf', dense_weight = 0.5, lexical_weight = 0.5,
       fusion_calibration = 'not measured (the model cannot be reached where the benches run): reciprocal '
                            'rank fusion with equal weights, which needs no score calibration'
 WHERE model_id = 'openai/text-embedding-3-small';

DROP FUNCTION IF EXISTS public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer, text, double precision, integer, integer,
    integer, double precision, double precision, double precision, integer, double precision, boolean);

-- The seventh knowledge_search that followed here (its comment and grants too) was removed when 0107
-- replaced it with the same search planned once per model (issue 45); 0107 creates the function, its comment
-- and grants. The removed text is tests/integration/knowledge/knowledge_search_0103.sql.
