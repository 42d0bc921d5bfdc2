"""Failed-authentication limits (kit/authlimit.py): per address and per key, answered from Redis before any
database work, failing open without Redis (issue #14, 9)."""

from concurrent.futures import ThreadPoolExecutor

from support.helpers import error, fresh_ip, new_tenant, post, result

PROBE = "/v2/workspace/activityconfig/get"  # a cheap [API-key auth] read

# --- failed-authentication limits -----------------------------------------------------------------------------


def bad_api_key_call(client, t, ip):
    return post(client, PROBE, {},
                {"x-service-api-key": t.api_key, "x-service-auth-token": "wrong-token", "x-forwarded-for": ip})


def test_failed_api_key_auth_is_limited_per_address(client, live, clock, monkeypatch):
    victim, bystander, ip = new_tenant(client), new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "5/minute")
    result(post(client, PROBE, {}, {**victim.headers, "x-forwarded-for": fresh_ip()}))  # the victim's client, earlier
    for _ in range(5):
        error(bad_api_key_call(client, victim, ip), "PERMISSION_DENIED")
    refused = bad_api_key_call(client, victim, ip)
    err = error(refused, "RESOURCE_EXHAUSTED")
    assert refused.headers["retry-after"] == "60" and err["details"] == {"retryAfterSeconds": 60}
    # That address is refused even with credentials it never proved, and unknown keys alike...
    error(post(client, PROBE, {}, {**bystander.headers, "x-forwarded-for": ip}), "RESOURCE_EXHAUSTED")
    error(
        post(client, PROBE, {},
             {"x-service-api-key": "key_unknown", "x-service-auth-token": "x", "x-forwarded-for": ip}),
        "RESOURCE_EXHAUSTED")
    # ...while other addresses are not, and credentials that authenticated before still pass from it.
    result(post(client, PROBE, {}, {**bystander.headers, "x-forwarded-for": fresh_ip()}))
    result(post(client, PROBE, {}, {**victim.headers, "x-forwarded-for": ip}))
    # The next window starts afresh.
    clock["now"] += 60
    error(bad_api_key_call(client, victim, ip), "PERMISSION_DENIED")


def test_failed_api_key_auth_is_limited_per_key_without_locking_out_its_clients(client, live, clock, monkeypatch):
    target, other = new_tenant(client), new_tenant(client)
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_key", "4/minute")
    result(post(client, PROBE, {}, target.headers))  # the key's real client, before the attack
    for _ in range(4):  # from ever new addresses, so only the key's own count can stop them
        error(bad_api_key_call(client, target, fresh_ip()), "PERMISSION_DENIED")
    error(bad_api_key_call(client, target, fresh_ip()), "RESOURCE_EXHAUSTED")
    result(post(client, PROBE, {}, {**target.headers, "x-forwarded-for": fresh_ip()}))  # known good: still served
    result(post(client, PROBE, {}, {**other.headers, "x-forwarded-for": fresh_ip()}))  # another key: untouched
    # A token revoked after it was known good stops passing the gate once it failed.
    new = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": target.api_key}, target.workspace_headers))
    error(post(client, PROBE, {}, target.headers), "PERMISSION_DENIED")
    error(post(client, PROBE, {}, target.headers), "RESOURCE_EXHAUSTED")
    assert new["newAuthToken"]["token"]


def test_failed_workspace_auth_is_limited(client, live, clock, monkeypatch):
    t, ip = new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "3/minute")
    bad = {
        "x-service-workspace-id": t.workspace["id"], "x-service-workspace-auth-token": "wrong", "x-forwarded-for": ip
    }
    error(post(client, "/v2/workspace/get", {}, bad), "UNAUTHENTICATED")
    error(post(client, "/v2/workspace/get", {}, {**bad, "x-service-workspace-id": "ws_nope"}), "NOT_FOUND")
    error(post(client, "/v2/workspace/authtokens/get", {"apiKey": t.api_key}, bad), "UNAUTHENTICATED")
    error(post(client, "/v2/workspace/get", {}, bad), "RESOURCE_EXHAUSTED")
    result(post(client, "/v2/workspace/get", {}, {**t.workspace_headers, "x-forwarded-for": fresh_ip()}))


def test_bad_credentials_past_the_limit_never_wait_for_the_database(client, live, clock, monkeypatch):
    """With every pool connection held, refused attempts still answer 429 at once (not 503 after the pool wait)."""
    t, good, ip = new_tenant(client), new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "3/minute")
    for _ in range(3):
        error(bad_api_key_call(client, t, ip), "PERMISSION_DENIED")
    pool = live.svc.pool
    held = [live.run(pool.getconn()) for _ in range(pool.max_size)]
    try:
        with ThreadPoolExecutor(8) as burst:
            answers = list(burst.map(lambda _: bad_api_key_call(client, t, ip), range(32)))
    finally:
        for conn in held:
            live.run(pool.putconn(conn))
    assert {a.status_code for a in answers} == {429}
    # A burst of bad calls beside a good one: the good one is served.
    with ThreadPoolExecutor(8) as burst:
        bad = [burst.submit(bad_api_key_call, client, t, ip) for _ in range(32)]
        ok = post(client, PROBE, {}, {**good.headers, "x-forwarded-for": fresh_ip()})
    assert ok.status_code == 200 and {f.result().status_code for f in bad} == {429}


def test_failed_auth_limit_fails_open_without_redis(client, live, clock, monkeypatch):
    t, ip = new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "1/minute")
    monkeypatch.setattr(live.svc, "redis", None)
    for _ in range(3):
        error(bad_api_key_call(client, t, ip), "PERMISSION_DENIED")
    result(post(client, PROBE, {}, {**t.headers, "x-forwarded-for": ip}))
