-- Failure reasons from a closed vocabulary: rewrite the reasons stored before it (knowledge/reasons.py).
--
-- A reason used to be "<code>: <message>", and the message often carried what a parser's exception said,
-- which quotes the bytes of the document it choked on (pypdf: "Invalid Elementary Object starting with ...
-- <80 bytes of the content stream>"), or what Inngest reported after the retries ran out ("ingestion
-- failed after its retries: <the run's last error>"). Every list shows the reason, so text the layer can
-- no longer erase sat beside the source. From now on a reason is "<code>: <detail>", the code one of the
-- vocabulary's and the detail one of its templates, filled only with values the layer made.
--
-- This migration rewrites every stored reason, on the sources and on the per-model readiness rows, that is
-- not already of that form: to its code's fixed detail where its prefix is one of the vocabulary's codes,
-- to failed_after_retries for the engine's "ingestion failed after its retries" (and the re-embed's),
-- else to the generic ingestion_failed. The patterns below are knowledge.reasons.pattern() of each
-- template as the vocabulary stood here; a reason already of the form is left as it is, so a second run
-- changes nothing. knowledge.failures.stored_reason applies the same rule to every reason written later.
-- tests/integration/knowledge/test_reasons_migration.py writes rows of both kinds before it and reads them after.

CREATE FUNCTION pg_temp.reason_rewritten(reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
    WITH vocabulary(code, fixed, detail) AS (VALUES
    ('pdf_encrypted', 'the PDF is encrypted and cannot be decrypted; upload an unencrypted copy',
     '(?:the PDF is encrypted and cannot be decrypted; upload an unencrypted copy)|(?:the PDF is encrypted and no password was given; upload an unencrypted copy)|(?:the PDF is encrypted and the password given does not open it; upload an unencrypted copy)'),
    ('pdf_no_text', 'the PDF has no text layer (scanned images?); run OCR first',
     '(?:the PDF has no text layer \(scanned images\?\); run OCR first)|(?:the PDF has 1 page but no text layer \(scanned images\?\); run OCR first)|(?:the PDF has ([0-9][0-9,.e+]{0,29}) pages but no text layer \(scanned images\?\); run OCR first)'),
    ('document_malformed', 'the document is damaged and cannot be read',
     '(?:the document is damaged and cannot be read)|(?:the file claims to be a PDF but has no %PDF header)|(?:the PDF is damaged and cannot be opened)|(?:the PDF''s page tree is damaged)|(?:the HTML page cannot be parsed)|(?:page ([0-9][0-9,.e+]{0,29}) cannot be read)'),
    ('document_too_large', 'the document is larger than the size limit',
     '(?:the document is larger than the size limit)|(?:the document is ([0-9][0-9,.e+]{0,29}) bytes; the limit is ([0-9][0-9,.e+]{0,29}) bytes)|(?:page ([0-9][0-9,.e+]{0,29}) exceeds a decoding limit)'),
    ('pdf_content_too_large', 'the PDF''s pages draw more decompressed content than extraction may read (a decompression bomb?)',
     '(?:the PDF''s pages draw more decompressed content than extraction may read \(a decompression bomb\?\))|(?:the PDF''s pages draw more than the limit of ([0-9][0-9,.e+]{0,29}) bytes of decompressed content \(a decompression bomb, or pages that share one content stream\))|(?:the PDF''s pages draw more than ([0-9][0-9,.e+]{0,29}) times the file''s ([0-9][0-9,.e+]{0,29}) bytes of decompressed content \(a decompression bomb, or pages that share one content stream\))'),
    ('document_text_too_large', 'the document gives more text than extraction may collect: split it into parts',
     '(?:the document gives more text than extraction may collect: split it into parts)|(?:page ([0-9][0-9,.e+]{0,29}) gives more text than the limit of ([0-9][0-9,.e+]{0,29}) bytes per page)|(?:the text passes the limit of ([0-9][0-9,.e+]{0,29}) bytes at page ([0-9][0-9,.e+]{0,29}): split it into parts)'),
    ('too_many_chunks', 'the document needs more chunks than one source may hold: split it into parts',
     '(?:the document needs more chunks than one source may hold: split it into parts)|(?:by page ([0-9][0-9,.e+]{0,29}) the document needs more than ([0-9][0-9,.e+]{0,29}) chunks, the most one source may hold: split it into parts)|(?:the document would make at least ([0-9][0-9,.e+]{0,29}) chunks; one source may hold at most ([0-9][0-9,.e+]{0,29}): split it into parts)|(?:the document would make more than ([0-9][0-9,.e+]{0,29}) chunks; one source may hold at most ([0-9][0-9,.e+]{0,29}): split it into parts)'),
    ('document_extraction_timeout', 'reading the document took more processor time than extraction may spend',
     '(?:reading the document took more processor time than extraction may spend)|(?:reading the document took more than ([0-9][0-9,.e+]{0,29}) s of processor time \(stopped at page ([0-9][0-9,.e+]{0,29})\))'),
    ('document_too_many_pages', 'the PDF has more pages than the page limit',
     '(?:the PDF has more pages than the page limit)|(?:the PDF has ([0-9][0-9,.e+]{0,29}) pages; the limit is ([0-9][0-9,.e+]{0,29}))'),
    ('document_empty', 'the document contains no text',
     '(?:the document contains no text)|(?:the document is empty)|(?:the document contains no text to chunk)'),
    ('document_type_unsupported', 'the document type is not supported; upload PDF, Markdown, HTML or plain UTF-8 text',
     '(?:the document type is not supported; upload PDF, Markdown, HTML or plain UTF\-8 text)|(?:the file is binary, not text; upload PDF, Markdown, HTML or plain UTF\-8 text)|(?:the file is not UTF\-8 text \(invalid byte at offset ([0-9][0-9,.e+]{0,29})\); save it as UTF\-8 or upload a PDF)'),
    ('document_unreadable', 'the document cannot be turned into text',
     '(?:the document cannot be turned into text)'),
    ('embedding_model_unknown', 'no embedder is registered under this model',
     '(?:no embedder is registered under this model)'),
    ('embedder_model_mismatch', 'the embedder does not give the dimensions the model is registered with',
     '(?:the embedder does not give the dimensions the model is registered with)'),
    ('embedding_auth_failed', 'the embedding provider refused the credentials; check the API key',
     '(?:the embedding provider refused the credentials; check the API key)'),
    ('embedding_provider_unavailable', 'the embedding provider refused the request',
     '(?:the embedding provider refused the request)'),
    ('embedding_dimension_mismatch', 'the embedder gave vectors that do not fit the model',
     '(?:the embedder gave vectors that do not fit the model)'),
    ('object_not_found', 'the document''s stored object is missing; upload it again',
     '(?:the document''s stored object is missing; upload it again)'),
    ('failed_after_retries', 'ingestion failed after its retries. Retry the source to ingest it again.',
     '(?:ingestion failed after its retries\. Retry the source to ingest it again\.)|(?:ingestion failed after its retries; the last error was ([a-z][a-z0-9_]{0,63})\. Retry the source to ingest it again\.)'),
    ('ingestion_stalled', 'ingestion did not finish in time: the ingestion job stopped or is stuck. Retry the source to ingest it again.',
     '(?:ingestion did not finish in time: the ingestion job stopped or is stuck\. Retry the source to ingest it again\.)|(?:ingestion did not finish within ([0-9][0-9a-z :]{0,39}) \(pending since ([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}) UTC, attempt ([0-9][0-9,.e+]{0,29})\): the ingestion job stopped or is stuck\. Retry the source to ingest it again\.)|(?:embedding under ([A-Za-z0-9][A-Za-z0-9._/:-]{0,199}) did not finish within ([0-9][0-9a-z :]{0,39}) \(pending since ([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}) UTC\): the job stopped or is stuck\. Retry the source to embed it again\.)'),
    ('ingestion_failed', 'ingestion failed. Retry the source to ingest it again.',
     '(?:ingestion failed\. Retry the source to ingest it again\.)|(?:ingestion failed with ([a-z][a-z0-9_]{0,63})\. Retry the source to ingest it again\.)')
    ),
    folded AS (
        SELECT left(regexp_replace(btrim(reason), '\s+', ' ', 'g'), 1000) AS r
    ),
    parts AS (
        SELECT r,
               split_part(r, ': ', 1) AS code,
               CASE WHEN strpos(r, ': ') > 0 THEN substr(r, strpos(r, ': ') + 2) END AS detail,
               btrim(split_part(r, ':', 1)) AS prefix
          FROM folded
    )
    SELECT CASE
        WHEN EXISTS (SELECT 1 FROM vocabulary v WHERE v.code = p.code AND p.detail ~ ('^(?:' || v.detail || ')$'))
            THEN p.r
        WHEN lower(p.r) LIKE 'ingestion failed after its retries%' OR lower(p.r) LIKE 're-embedding failed after its retries%'
            THEN (SELECT v.code || ': ' || v.fixed FROM vocabulary v WHERE v.code = 'failed_after_retries')
        WHEN EXISTS (SELECT 1 FROM vocabulary v WHERE v.code = p.prefix)
            THEN (SELECT v.code || ': ' || v.fixed FROM vocabulary v WHERE v.code = p.prefix)
        ELSE (SELECT v.code || ': ' || v.fixed FROM vocabulary v WHERE v.code = 'ingestion_failed')
    END
      FROM parts p
$fn$;

UPDATE agent.knowledge_sources
   SET failure_reason = pg_temp.reason_rewritten(failure_reason)
 WHERE failure_reason IS NOT NULL AND failure_reason IS DISTINCT FROM pg_temp.reason_rewritten(failure_reason);

UPDATE agent.knowledge_source_models
   SET failure_reason = pg_temp.reason_rewritten(failure_reason)
 WHERE failure_reason IS NOT NULL AND failure_reason IS DISTINCT FROM pg_temp.reason_rewritten(failure_reason);

DROP FUNCTION pg_temp.reason_rewritten(text);
