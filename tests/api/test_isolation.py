"""Tenant isolation matrix (issue #9): for every operation of the route table, tenant B using tenant A's ids
gets no data, changes nothing, and cannot tell A's ids exist.

"Cannot tell": B (a fresh tenant whose own organization, folder, document, user and group reuse A's ids) sends
A's ids; B' (built the same way from ids of the same shape that never existed) sends those. Their answers must
be equal once each id is replaced by its kind and volatile values (times, generated ids, B's own credentials)
by placeholders. "No data": nothing of A (ids, credentials, page tokens, stored names and texts) is in B's answer
unless B sent it or owns it. "Changes nothing": every row of A, hashed per table, is the same before and after
(B's jobs and A's jobs and webhook deliveries settled), A's webhook receiver heard nothing, and A reads through
the API at the end exactly what it read when it was built.

The requests per operation live in isolation_cases.CASES; a route without an entry fails
test_every_operation_has_a_case.
"""

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from psycopg import sql
from psycopg.rows import dict_row

from collab.kit.auth import api_key_auth, api_key_auth_or_none, workspace_auth
from collab.testing import fake_models
from collab.testing.receiver import Receiver, settle_webhooks
from support.helpers import Tenant, post, result, settle_jobs
from support.isolation_cases import (
    CASES,
    HOOKS,
    NOTHING_TO_ISOLATE,
    SKELETON_KINDS,
    Alpha,
    Ids,
    Seed,
    build_alpha,
    leaves,
    prepare,
)

pytestmark = pytest.mark.usefixtures("embedding_model", "model_client")  # derives, searches, calls models

# Tables without a tenant column, and why their rows are nobody's (a new one must be named here).
GLOBAL_TABLES = {
    "workspaces": "the tenant's workspace itself: snapshotted by its id",
    "embedding_models": "the service's registry of embedding models, shared by every tenant",
    "schema_migrations": "the database schema's version",
    "reembed_ranges": "a re-embed's ranges of the key order (an operator's run spans every key), reached only through "
    "its run, which names its key (judgments/tasks.py reembed_range)",
    "vector_self_test_failures": "the database server's failed start-up self-tests (kit/db/selftest.py)"
}
# Tables a probe of B may see change under A for A's own reasons: A's call counts, flushed in the background.
OWN_COUNTERS = {"usage_minutes"}
# Values that differ between any two calls whatever the tenant: latencies, freshly signed tokens.
# x, kid: the caller's own token keys (JWKS); signature: a MAC of what the caller sent (auth/generate_signature).
VOLATILE_KEYS = {
    "searchLatencyMs", "token", "kid", "x", "signature", "uploadUrl", "originalDownloadUrl", "canonicalMdDownloadUrl"
}  # signed URLs: fresh claims each time
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
_NEW_ID = re.compile(r"\b[a-z]{2,4}_[0-9a-f]{24}\b")
_EPOCH_MS = range(10**12, 10**13)

# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def receiver():
    """A's webhook receiver; B's endpoints point elsewhere, so anything heard after A is built is a leak."""
    r = Receiver().start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def http(live, contract):
    """A client for the whole module; every answer is still checked against the OpenAPI document."""
    with httpx.Client(base_url=live.url, timeout=60, event_hooks={"response": [contract.check]}) as client:
        yield client


@pytest.fixture(scope="module")
def conn(servers):
    with psycopg.connect(servers["database_url"], autocommit=True, row_factory=dict_row) as connection:
        yield connection


@pytest.fixture(scope="module")
def rows(conn) -> "Rows":
    return Rows(conn)


@dataclass
class Pair:
    """Tenant B (skeleton under A's ids), tenant B' (skeleton under `twins`), and their rows as prepared."""

    b: Tenant
    b2: Tenant
    twins: Ids
    rows: tuple[dict, dict]


class Pairs:
    """Hands out B and B'; a pair goes to the next operation only while its rows are exactly as prepared.

    Preparing two tenants is most of an operation's cost; an operation that changed nothing of B or B'
    (a read, a refused write) leaves them as good as new, so the next one may reuse them.
    """

    def __init__(self, live, http: httpx.Client, rows: "Rows", ids: Ids):
        self.live, self.http, self.rows, self.ids, self.idle = live, http, rows, ids, None

    def take(self, seed: Seed | None = None) -> Pair:
        """The idle pair, or a fresh one; a seeded pair is always fresh (and never given back)."""
        if seed is not None:
            return self._fresh(seed)
        pair, self.idle = self.idle, None  # a pair whose operation failed is never given back
        return pair or self._fresh()

    def give_back(self, pair: Pair) -> None:
        if (self.rows.of(pair.b), self.rows.of(pair.b2)) == pair.rows:
            self.idle = pair

    def _fresh(self, seed: Seed | None = None) -> Pair:
        twins = self.ids.twins()

        def tenant(ids: Ids) -> Tenant:
            t = prepare(self.http, ids)
            if seed is not None:
                seed(self.http, t, ids)
                settle_jobs(self.live, t)
            return t

        b, b2 = both(tenant, (self.ids, ), (twins, ))
        rows = (self.rows.of(b), self.rows.of(b2)) if seed is None else ({}, {})
        return Pair(b, b2, twins, rows)


@pytest.fixture(scope="module")
def pairs(live, http, rows, alpha) -> Pairs:
    return Pairs(live, http, rows, alpha.ids)


@pytest.fixture(scope="module")
def alpha(live, http, fake_providers, receiver) -> Alpha:
    """Tenant A with data in every feature, built once for the module."""
    fake_providers.reset()
    fake_providers.responder = fake_models.answer  # A's extraction gets drafts from the deterministic fake model
    try:
        a = build_alpha(http, live, receiver.url("/a"))
    finally:
        fake_providers.reset()
    a.view = read_as_a(http, a)  # what A reads right after it is built
    return a


# --- the route table ------------------------------------------------------------------------------


def operations(app, prefix: str) -> dict[str, APIRoute]:
    """Every POST operation under `prefix`, flattened from the app's route table."""
    routes = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and "POST" in (context.methods or ()) and context.path.startswith(prefix + "/"):
            routes[context.path] = route
    return routes


def auth_of(route: APIRoute) -> str:
    """`api_key`, `workspace` or `public`: the auth dependency the route runs."""
    pending, calls = [route.dependant], set()
    while pending:
        dependant = pending.pop()
        calls.add(dependant.call)
        pending.extend(dependant.dependencies)
    api_key = api_key_auth in calls or api_key_auth_or_none in calls  # the latter: auth/token/get, headers or body
    return "api_key" if api_key else "workspace" if workspace_auth in calls else "public"


def test_every_operation_has_a_case(live):
    """A new route fails here until it has an isolation case (or a reason why it has nothing to isolate)."""
    found = set(operations(live.app, "/v2"))
    covered = set(CASES) | set(NOTHING_TO_ISOLATE)
    assert not found - covered, (
        f"operations without an isolation case in isolation_cases.CASES: {sorted(found - covered)}")
    assert not covered - found, f"isolation cases of operations that no longer exist: {sorted(covered - found)}"
    assert not set(CASES) & set(NOTHING_TO_ISOLATE)


def test_v1_runs_the_same_handlers_as_v2(live):
    """The matrix calls /v2 only: every /v1 operation must be the same handler as its /v2 twin."""
    v1, v2 = operations(live.app, "/v1"), operations(live.app, "/v2")
    assert {p[3:]: r.endpoint for p, r in v1.items()} == {p[3:]: r.endpoint for p, r in v2.items()}


def test_operations_with_nothing_to_isolate_are_public(live):
    """The exemption cannot hide an authenticated route."""
    routes = operations(live.app, "/v2")
    assert {path: auth_of(routes[path]) for path in NOTHING_TO_ISOLATE} == dict.fromkeys(NOTHING_TO_ISOLATE, "public")


def test_every_table_is_tenant_scoped_or_known_global(conn):
    """A new table without api_key_id or workspace_id would escape the snapshot of A's rows."""
    scoped = {table for table, _ in tenant_tables(conn)}
    tables = {
        r["table_name"]
        for r in conn.execute("select table_name from information_schema.tables where table_schema = current_schema()"
                              " and table_type = 'BASE TABLE'").fetchall()
    }
    assert tables - scoped == set(GLOBAL_TABLES), f"tables without a tenant column: {sorted(tables - scoped)}"


# --- the matrix -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", list(CASES))
def test_tenant_b_cannot_reach_tenant_a(path, live, http, rows, alpha, receiver, pairs):
    """B with A's ids and B' with never-existing ones get the same answers; A's rows and receiver stay untouched."""
    auth = auth_of(operations(live.app, "/v2")[path])
    assert auth != "public", f"{path} is public: it belongs in NOTHING_TO_ISOLATE, with the reason"
    pair = pairs.take(CASES[path].seed)
    before, heard = rows.of(alpha.tenant), len(receiver.to("/a"))
    for build in CASES[path].builds:
        sent = build(alpha.ids)

        def call(t: Tenant, data: dict[str, Any]) -> httpx.Response:
            answer = post(http, path, data, headers(auth, t))
            settle_jobs(live, t)  # in step: B and B' meet the same state at their next request
            return answer

        answer, answer2 = both(call, (pair.b, sent), (pair.b2, build(pair.twins)))
        assert_no_data(answer, sent, alpha)
        assert shape(answer, alpha.ids, pair.b) == shape(answer2, pair.twins,
                                                         pair.b2), (f"B can tell A's ids exist:\n{sent}")
    settle_a(live, alpha.tenant)
    assert_same_rows(before, rows.of(alpha.tenant))
    assert len(receiver.to("/a")) == heard, "A's webhook receiver heard something after B's calls"
    pairs.give_back(pair)


# Every operation runs one of the two auth dependencies (checked above), so one route of each kind covers them.
@pytest.mark.parametrize("path", ["/v2/organizations/documents/get", "/v2/workspace/authtokens/get"])
def test_a_s_credentials_mixed_into_b_s_are_refused_alike(path, live, http, rows, alpha, pairs):
    """A's API key (or token) beside B's token (or key) is refused exactly like a key (or token) that never existed."""
    auth = auth_of(operations(live.app, "/v2")[path])
    pair = pairs.take()
    before = rows.of(alpha.tenant)
    data = CASES[path].builds[0](alpha.ids)
    for swap, swap2 in credential_swaps(auth, alpha.ids, pair):
        answer, answer2 = post(http, path, data, swap), post(http, path, data, swap2)
        assert answer.status_code in (401, 403), answer.text
        assert_no_data(answer, data, alpha)
        assert shape(answer, alpha.ids, pair.b) == shape(answer2, pair.twins, pair.b2)
    assert_same_rows(before, rows.of(alpha.tenant))
    pairs.give_back(pair)


def test_a_still_reads_its_data(http, alpha):
    """After the matrix (pytest runs it first, in file order), A reads exactly what it read when it was built."""
    assert read_as_a(http, alpha) == alpha.view


# --- requests -------------------------------------------------------------------------------------


def both(function, args: tuple, args2: tuple) -> tuple[Any, Any]:
    """`function` on B's arguments and on B''s, side by side: the two tenants are independent."""
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.submit(function, *args), pool.submit(function, *args2)
        return first.result(), second.result()


def headers(auth: str, t: Tenant) -> dict[str, str]:
    return t.headers if auth == "api_key" else t.workspace_headers


def credential_swaps(auth: str, mine: Ids, pair: Pair) -> list[tuple[dict, dict]]:
    """Header pairs where B mixes in A's credentials (and B' the twins): A's key with B's token, and the reverse.

    A's workspace id with B's workspace token is left out: the spec answers an unknown workspace (NOT_FOUND)
    and a wrong token (UNAUTHENTICATED) differently, so workspace ids are told apart by design (they are random).
    """
    b, b2, twins = pair.b, pair.b2, pair.twins
    if auth == "workspace":
        return [({**b.workspace_headers, "x-service-workspace-auth-token": mine.workspace_token},
                 {**b2.workspace_headers, "x-service-workspace-auth-token": twins.workspace_token})]
    return [({**b.headers, "x-service-api-key": mine.api_key}, {**b2.headers, "x-service-api-key": twins.api_key}),
            ({**b.headers, "x-service-auth-token": mine.auth_token},
             {**b2.headers, "x-service-auth-token": twins.auth_token})]


def settle_a(live, t: Tenant) -> None:
    """Let A's jobs and webhook deliveries run, so work that B's call caused in the worker shows in A's rows."""
    settle_jobs(live, t)
    live.run(settle_webhooks(live.svc, t.api_key), timeout=120)


def read_as_a(client: httpx.Client, a: Alpha) -> dict[str, Any]:
    """A's own reads of its data across the features."""
    i, h = a.ids, a.tenant.headers
    reads = {
        "/v2/organizations/get": {}, "/v2/organizations/documents/get": {"organizationId": i.org},
        "/v2/organizations/folders/get": {"organizationId": i.org
                                          }, "/v2/users/get": {"organizationId": i.org, "allDocuments": True},
        "/v2/auth/permissions/get": {"organizationId": i.org, "userIds": [i.user, i.user2]},
        "/v2/notifications/get": {"organizationId": i.org,
                                  "documentId": i.doc}, "/v2/activities/get": {"organizationId": i.org},
        "/v2/presence/get": {"organizationId": i.org,
                             "documentId": i.doc}, "/v2/recordings/get": {"organizationId": i.org},
        "/v2/crdt/get": {"organizationId": i.org,
                         "documentId": i.doc}, "/v2/commentannotations/get": {"organizationId": i.org},
        "/v2/commentannotations/count/get": {"organizationId": i.org, "userId": i.user2}, f"{HOOKS}/endpoints/get": {},
        f"{HOOKS}/messages/get": {}, "/v2/memory/judgments/query": {}, "/v2/organizations/documents/migrate/status": {
            "organizationId": i.org, "migrationId": i.migration
        }, "/v2/users/data/delete/status": {"jobId": i.job}, "/v2/workspace/apikeyconfig/get": {},
        "/v2/users/data/get": {"userIds": [i.user, i.user2]}, "/v2/agents/get": {"agentId": i.agent},
        "/v2/agents/versions/list": {"agentId": i.agent}, "/v2/agents/groups/list": {}
    }
    view = {path: result(post(client, path, data, h)) for path, data in reads.items()}
    view["/v2/workspace/authtokens/get"] = result(
        post(client, "/v2/workspace/authtokens/get", {"apiKey": i.api_key}, a.tenant.workspace_headers))
    return view


# --- "gets no data" and "cannot tell" -----------------------------------------------------------------


def assert_no_data(response: httpx.Response, sent: dict[str, Any], a: Alpha) -> None:
    """None of A's ids or values is in B's answer, once what B sent and the ids of B's own skeleton are removed."""
    text, private = response.text, a.private
    # Only strings that carry something of A are taken out (never a short one like "b", which is everywhere).
    own = [s for s in leaves(sent) if any(value in s for value in private)] + [a.ids[k] for k in SKELETON_KINDS]
    for value in sorted(own, key=len, reverse=True):
        text = text.replace(value, "")
    leaked = [value for value in private if value in text]
    assert not leaked, f"B's answer holds A's {leaked}:\n{response.text}"


def shape(response: httpx.Response, ids: Ids, t: Tenant) -> tuple[int, Any]:
    """Status and body with ids named by kind, and B's own credentials and volatile values as placeholders."""
    names = {value: f"<{kind}>" for kind, value in ids.items()} | own_names(t)
    order = sorted(names, key=len, reverse=True)
    return response.status_code, _normalise(response.json(), names, order)


def own_names(t: Tenant) -> dict[str, str]:
    """The caller's own credentials and the e-mail tag its default names derive from."""
    email = t.workspace["owner"]["email"]
    return {
        t.api_key: "<own api key>", t.auth_token: "<own auth token>", t.workspace["id"]: "<own workspace>",
        t.workspace["authToken"]: "<own workspace token>", email: "<own email>",
        email.split("@")[0].split("-")[-1]: "<own tag>"
    }


def _normalise(value: Any, names: dict[str, str], order: list[str]) -> Any:
    if isinstance(value, dict):
        return {
            _text(k, names, order): "<volatile>" if k in VOLATILE_KEYS else _normalise(v, names, order)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_normalise(v, names, order) for v in value]
    if isinstance(value, str):
        return _text(value, names, order)
    if isinstance(value, int) and not isinstance(value, bool) and value in _EPOCH_MS:
        return "<time>"
    return value


def _text(value: str, names: dict[str, str], order: list[str]) -> str:
    for name in order:
        if name in value:
            value = value.replace(name, names[name])
    return _NEW_ID.sub("<new id>", _ISO_TIME.sub("<time>", value))


# --- "changes nothing" ---------------------------------------------------------------------------------


def tenant_tables(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """(table, column) of every table with a tenant column: api_key_id, else workspace_id."""
    rows = conn.execute(
        "select table_name, column_name from information_schema.columns c where table_schema = current_schema()"
        " and column_name in ('api_key_id', 'workspace_id') and exists (select 1 from information_schema.tables t"
        " where t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE')"
        " order by table_name, column_name").fetchall()
    chosen: dict[str, str] = {}
    for row in rows:
        chosen.setdefault(row["table_name"], row["column_name"])  # api_key_id sorts first
    return sorted(chosen.items())


class Rows:
    """Snapshots of one tenant's rows: per table, the count and an order-independent hash of the rows."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn
        scopes = [*((t, c) for t, c in tenant_tables(conn) if t not in OWN_COUNTERS), ("workspaces", "id")]
        self.query = sql.SQL(" union all ").join(
            sql.SQL("select {name} as t, count(*) as n, md5(coalesce(string_agg(md5(x::text), '' order by"
                    " md5(x::text)), '')) as h from {table} x where {column} = {value}").format(
                        name=sql.Literal(table), table=sql.Identifier(table), column=sql.Identifier(column),
                        value=sql.Placeholder("key" if column == "api_key_id" else "workspace"))
            for table, column in scopes)

    def of(self, t: Tenant) -> dict[str, tuple[int, str]]:
        rows = self.conn.execute(self.query, {"key": t.api_key, "workspace": t.workspace["id"]}).fetchall()
        return {r["t"]: (r["n"], r["h"]) for r in rows}


def assert_same_rows(before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]]) -> None:
    changed = {table: (before[table], after[table]) for table in before if before[table] != after[table]}
    assert not changed, f"A's rows changed (table: (count, hash) before and after): {changed}"
