-- Hybrid search: a lexical arm beside the vector one. Per embedded kind, the same text the model sees
-- (derive.texts: `review` = "decision: reasoning", `content` = content) as a 'simple' tsvector: no stemming and
-- no stop words, so identifiers ("SEC-4471", "A.12.4") and exact phrases stay findable.
alter table judgments
    add column review_tsv tsvector generated always as (to_tsvector('simple', decision || ': ' || reasoning)) stored,
    add column content_tsv tsvector generated always as (to_tsvector('simple', coalesce(content, ''))) stored;
create index judgments_review_tsv_idx on judgments using gin (review_tsv);
create index judgments_content_tsv_idx on judgments using gin (content_tsv);
