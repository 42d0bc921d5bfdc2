-- The collaboration model: organizations → folders (nested) → documents, users, groups, grants,
-- document migrations and user-data deletions. Times are epoch milliseconds from the service clock.
create table organizations (
    api_key_id  text not null references api_keys (id) on delete cascade,
    id          text not null,
    name        text,
    disabled    boolean not null default false,
    created_at  bigint not null,
    updated_at  bigint not null,
    primary key (api_key_id, id)
);

create table folders (
    api_key_id       text not null,
    organization_id  text not null,
    id               text not null,
    name             text,
    parent_id        text,
    created_at       bigint not null,
    primary key (api_key_id, organization_id, id),
    foreign key (api_key_id, organization_id) references organizations (api_key_id, id) on delete cascade,
    foreign key (api_key_id, organization_id, parent_id) references folders (api_key_id, organization_id, id)
        on delete cascade
);
create index folders_parent_idx on folders (api_key_id, organization_id, parent_id);

create table documents (
    api_key_id       text not null,
    organization_id  text not null,
    id               text not null,
    name             text,
    folder_id        text,
    created_at       bigint not null,
    updated_at       bigint not null,
    primary key (api_key_id, organization_id, id),
    foreign key (api_key_id, organization_id) references organizations (api_key_id, id) on delete cascade,
    foreign key (api_key_id, organization_id, folder_id) references folders (api_key_id, organization_id, id)
        on delete set null (folder_id)
);
create index documents_folder_idx on documents (api_key_id, organization_id, folder_id);

-- User profiles per tenant (the contact list's names and e-mails).
create table users (
    api_key_id  text not null references api_keys (id) on delete cascade,
    id          text not null,
    name        text,
    email       text,
    extra       jsonb,
    created_at  bigint not null,
    updated_at  bigint not null,
    primary key (api_key_id, id)
);

create table user_groups (
    api_key_id       text not null,
    organization_id  text not null,
    id               text not null,
    name             text,
    created_at       bigint not null,
    primary key (api_key_id, organization_id, id),
    foreign key (api_key_id, organization_id) references organizations (api_key_id, id) on delete cascade
);

create table group_members (
    api_key_id       text not null,
    organization_id  text not null,
    group_id         text not null,
    user_id          text not null,
    primary key (api_key_id, organization_id, group_id, user_id),
    foreign key (api_key_id, organization_id, group_id) references user_groups (api_key_id, organization_id, id)
        on delete cascade
);
create index group_members_user_idx on group_members (api_key_id, user_id);

-- A role of a user (or of every member of a group) on an organization, folder or document.
-- For an organization entry resource_id is the organization id. expires_at is Unix seconds.
create table grants (
    api_key_id       text not null,
    organization_id  text not null,
    principal_type   text not null check (principal_type in ('user', 'group')),
    principal_id     text not null,
    resource_type    text not null check (resource_type in ('organization', 'folder', 'document')),
    resource_id      text not null,
    access_role      text not null check (access_role in ('viewer', 'editor')),
    expires_at       bigint,
    created_at       bigint not null,
    updated_at       bigint not null,
    primary key (api_key_id, organization_id, principal_type, principal_id, resource_type, resource_id),
    foreign key (api_key_id, organization_id) references organizations (api_key_id, id) on delete cascade
);
create index grants_resource_idx on grants (api_key_id, organization_id, resource_type, resource_id);
create index grants_user_idx on grants (api_key_id, principal_id) where principal_type = 'user';

create table document_migrations (
    api_key_id       text not null references api_keys (id) on delete cascade,
    id               text not null,
    organization_id  text not null,
    document_id      text not null,
    new_document_id  text not null,
    job_id           text not null,
    status           text not null default 'pending'
                     check (status in ('pending', 'in_progress', 'completed', 'failed')),
    reason           text,
    created_at       bigint not null,
    updated_at       bigint not null,
    primary key (api_key_id, id)
);

create table user_data_deletions (
    api_key_id              text not null references api_keys (id) on delete cascade,
    id                      text not null,
    user_ids                text[] not null,
    organization_ids        text[],
    tasks                   text[] not null,
    done                    text[] not null default '{}',
    last_task_completed_at  bigint,
    created_at              bigint not null,
    primary key (api_key_id, id)
);

-- Activities are deleted with their creator's data.
create index activities_user_idx on activities (api_key_id, (action_user ->> 'userId'));
