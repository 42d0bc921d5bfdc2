-- Comments as first-class data (issue 18): threads, their comments, reactions, mentions and read marks.
-- An annotation id is unique within an organization (not only a document), so a document migration never
-- meets a clashing thread and every child row keys on (organization, annotation).

create table comment_annotations (
    api_key_id        text not null references api_keys (id) on delete cascade,
    organization_id   text not null,
    document_id       text not null,
    id                text not null,
    location          jsonb,
    location_id       text,
    target_element    jsonb,
    status            text not null default 'open',
    status_type       text not null default 'default',
    priority          text,
    assigned_to       jsonb,
    assigned_id       text,
    from_user         jsonb not null,
    from_id           text not null,
    context           jsonb,
    visibility        text not null default 'public',
    visible_user_ids  text[],
    resolved_by       text,
    last_comment_id   bigint not null default 0,
    created_at        bigint not null,
    updated_at        bigint not null,
    primary key (api_key_id, organization_id, id)
);
create index comment_annotations_document_idx
    on comment_annotations (api_key_id, organization_id, document_id, updated_at desc, id desc);
create index comment_annotations_from_idx on comment_annotations (api_key_id, from_id);

create table comments (
    api_key_id        text not null,
    organization_id   text not null,
    document_id       text not null,
    annotation_id     text not null,
    id                bigint not null,
    comment_text      text,
    comment_html      text,
    from_user         jsonb not null,
    from_id           text not null,
    tagged            jsonb not null default '[]',
    attachments       jsonb not null default '[]',
    agent             jsonb,
    is_edited         boolean not null default false,
    created_at        bigint not null,
    updated_at        bigint not null,
    primary key (api_key_id, organization_id, annotation_id, id),
    foreign key (api_key_id, organization_id, annotation_id)
        references comment_annotations (api_key_id, organization_id, id) on delete cascade
);
create index comments_from_idx on comments (api_key_id, from_id);

create table comment_reactions (
    api_key_id        text not null,
    organization_id   text not null,
    document_id       text not null,
    annotation_id     text not null,
    comment_id        bigint not null,
    reaction          text not null,
    user_id           text not null,
    created_at        bigint not null,
    primary key (api_key_id, organization_id, annotation_id, comment_id, reaction, user_id),
    foreign key (api_key_id, organization_id, annotation_id, comment_id)
        references comments (api_key_id, organization_id, annotation_id, id) on delete cascade
);
create index comment_reactions_user_idx on comment_reactions (api_key_id, user_id);

-- One row per (comment, tagged user): the mentionedUserIds filter, and the guard that notifies a mention once.
create table comment_mentions (
    api_key_id        text not null,
    organization_id   text not null,
    document_id       text not null,
    annotation_id     text not null,
    comment_id        bigint not null,
    user_id           text not null,
    primary key (api_key_id, organization_id, annotation_id, comment_id, user_id),
    foreign key (api_key_id, organization_id, annotation_id, comment_id)
        references comments (api_key_id, organization_id, annotation_id, id) on delete cascade
);
create index comment_mentions_user_idx on comment_mentions (api_key_id, organization_id, user_id);

-- A user's read mark on a thread: comments by others created after it are unread.
create table comment_reads (
    api_key_id        text not null,
    organization_id   text not null,
    document_id       text not null,
    annotation_id     text not null,
    user_id           text not null,
    read_at           bigint not null,
    primary key (api_key_id, organization_id, annotation_id, user_id),
    foreign key (api_key_id, organization_id, annotation_id)
        references comment_annotations (api_key_id, organization_id, id) on delete cascade
);
create index comment_reads_user_idx on comment_reads (api_key_id, user_id);

-- A comment's reactions as shown on the wire: [{reaction, userIds}], reactions in first-use order, users in the
-- order they reacted (one definition for the thread view and the user-data export).
create function comment_reaction_list(p_api_key_id text, p_organization_id text, p_annotation_id text,
                                      p_comment_id bigint) returns jsonb
language sql stable as $$
    select coalesce(jsonb_agg(jsonb_build_object('reaction', r.reaction, 'userIds', r.user_ids)
                              order by r.first_at, r.reaction), '[]'::jsonb)
    from (select x.reaction, array_agg(x.user_id order by x.created_at, x.user_id) as user_ids,
                 min(x.created_at) as first_at
          from comment_reactions x
          where x.api_key_id = p_api_key_id and x.organization_id = p_organization_id
            and x.annotation_id = p_annotation_id and x.comment_id = p_comment_id
          group by x.reaction) r
$$;
