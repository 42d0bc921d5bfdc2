-- Hybrid search: a lexical arm beside the vector one. Per embedded kind, the same text the model sees
-- (derive.texts: `review` = "decision: reasoning", `content` = content) as a 'simple' tsvector: no stemming and
-- no stop words, so identifiers ("SEC-4471", "A.12.4") and exact phrases stay findable.
-- Only the first 200,000 characters are indexed: to_tsvector raises "string is too long for tsvector" once the
-- distinct lexemes pass 1 MiB, and a reasoning or content may be megabytes; 200,000 characters of at most 4 bytes
-- each stay under that limit whatever the text.
alter table judgments
    add column review_tsv tsvector generated always as
        (to_tsvector('simple', left(decision || ': ' || reasoning, 200000))) stored,
    add column content_tsv tsvector generated always as
        (to_tsvector('simple', left(coalesce(content, ''), 200000))) stored;
create index judgments_review_tsv_idx on judgments using gin (review_tsv);
create index judgments_content_tsv_idx on judgments using gin (content_tsv);
