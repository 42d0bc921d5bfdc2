-- Exact text comes first (issue #40): a judgment searched by its own text, as the reviewer wrote it or as it is
-- stored ("decision: reasoning"), is the first result in every scope, whatever the cosine of its vector to the
-- query's (0.985 at the median for a text without its decision prefix, not 1, so a near-duplicate could lead).
-- Per embedded kind, the md5 of the text with its whitespace folded and its case lowered; search compares the
-- query's key (made by the same expression, in SQL, so both sides fold alike) through these indexes.
alter table judgments
    add column review_key text generated always as
        (md5(lower(btrim(regexp_replace(reasoning, '\s+', ' ', 'g'))))) stored,
    add column content_key text generated always as
        (md5(lower(btrim(regexp_replace(content, '\s+', ' ', 'g'))))) stored;
create index judgments_review_key_idx on judgments (api_key_id, review_key);
create index judgments_content_key_idx on judgments (api_key_id, content_key) where content is not null;
