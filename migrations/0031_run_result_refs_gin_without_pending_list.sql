-- Run history probes agent.runs.result -> 'refs' through the GIN index runs_result_refs_idx. With GIN's
-- fastupdate (the default), new runs wait in a pending list of up to gin_pending_list_limit (4 MB) until a
-- vacuum merges it, and every probe scans that list whole: measured 190 ms per run-history read right after
-- 20,000 runs were written, against 3 ms once merged. Turning fastupdate off writes each run's entries into
-- the index at insert time (a little more insert work) and keeps the read predictable.
ALTER INDEX agent.runs_result_refs_idx SET (fastupdate = off);
