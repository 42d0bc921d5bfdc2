"""The console's frame over plain HTTP: sign-in, the session cookie, idle expiry, sign-out, CSRF, token resets,
tenancy, and bad input answered with a page that names the field (never a 500)."""

import base64
import re

import httpx
import pytest

from support.helpers import error, fresh_ip, new_tenant, post, result

SIGN_IN = "/console/sign-in"
SESSION = "collab:console:session:"


@pytest.fixture
def web(live):
    """A plain HTTP client for console pages (HTML: not checked against the API's OpenAPI document); like a browser,
    it sends the page's Origin with each POST."""
    with httpx.Client(base_url=live.url, timeout=30, follow_redirects=False,
                      headers={"x-forwarded-for": fresh_ip(), "origin": live.url}) as c:
        yield c


def sign_in(web: httpx.Client, tenant, **headers) -> httpx.Response:
    response = web.post(SIGN_IN,
                        data={"workspaceId": tenant.workspace["id"],
                              "authToken": tenant.workspace["authToken"]}, headers=headers)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/console"
    return response


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def field_error(html: str, name: str) -> str:
    """The error shown next to a field (its id is error-<name>); '' when none."""
    found = re.search(rf'<p class="error" id="error-{re.escape(name)}">([^<]*)</p>', html)
    return found.group(1) if found else ""


def test_sign_in_sets_a_strict_http_only_cookie_and_a_server_side_session(web, client, live):
    t = new_tenant(client)
    page = web.get(SIGN_IN)
    assert page.status_code == 200 and 'for="f-workspaceId"' in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    assert "<script>" not in page.text and " style=" not in page.text  # nothing inline for the CSP to allow
    cookie = sign_in(web, t).headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # plain http here
    session_id = re.match(r"collab_console=([^;]+)", cookie).group(1)
    assert len(session_id) >= 43  # 32 random bytes, url-safe base64
    assert live.run(live.svc.redis.exists(SESSION + session_id)) == 1
    overview = web.get("/console")
    assert overview.status_code == 200 and t.workspace["id"] in overview.text
    # Behind a TLS-terminating proxy (trusted: 127.0.0.1) the cookie is Secure.
    secure = web.post(SIGN_IN, data={"workspaceId": t.workspace["id"], "authToken": t.workspace["authToken"]},
                      headers={"x-forwarded-proto": "https", "origin": live.url.replace("http:", "https:")})
    assert "Secure" in secure.headers["set-cookie"]
    assert not [path for path in live.app.openapi()["paths"] if path.startswith("/console")]


def test_pages_need_a_session(web):
    for path in ("/console", "/console/keys", "/console/settings"):
        response = web.get(path)
        assert response.status_code == 303 and response.headers["location"] == SIGN_IN
    refused = web.post("/console/settings/advanced-queries", data={"csrf": "x", "key": "k"})
    assert refused.status_code == 401 and "Sign in again" in refused.text


@pytest.mark.parametrize(
    "data, field, words",
    [({"workspaceId": "", "authToken": ""}, "workspaceId", "Enter the workspace id."),
     ({"workspaceId": "ws_x", "authToken": "  "}, "authToken", "Enter the workspace auth token."),
     ({"workspaceId": "w" * 5000, "authToken": "t"}, "workspaceId", "at most 200 characters"),
     ({"workspaceId": "ws_x", "authToken": "t" * 20000}, "authToken", "at most 500 characters"),
     ({"workspaceId": "ws_unknown", "authToken": "nope"}, "authToken", "do not match a workspace")])
def test_bad_sign_in_shows_the_error_next_to_the_field(web, data, field, words):
    response = web.post(SIGN_IN, data=data)
    assert response.status_code == 400
    assert words in field_error(response.text, field)
    assert 'aria-invalid="true"' in response.text and "collab_console=" not in response.headers.get("set-cookie", "")


def test_wrong_token_is_refused_and_failures_are_limited_per_workspace(web, client, tune, clock):
    # The clock is pinned, so all the failures fall in one counting window.
    t = new_tenant(client)
    tune(auth_failures_per_key="3/hour")
    for _ in range(3):
        wrong = web.post(SIGN_IN, data={"workspaceId": t.workspace["id"], "authToken": "not-the-token"},
                         headers={"x-forwarded-for": fresh_ip()})
        assert wrong.status_code == 400 and "do not match" in field_error(wrong.text, "authToken")
    limited = web.post(SIGN_IN, data={"workspaceId": t.workspace["id"], "authToken": "still-wrong"},
                       headers={"x-forwarded-for": fresh_ip()})
    assert limited.status_code == 429 and "Too many failed sign-in attempts" in limited.text
    assert int(limited.headers["retry-after"]) > 0
    sign_in(web, t)  # the owner's real token still passes (known good credentials are not locked out)


def test_sign_in_from_another_origin_is_refused(web, client):
    t = new_tenant(client)
    response = web.post(SIGN_IN, data={"workspaceId": t.workspace["id"], "authToken": t.workspace["authToken"]},
                        headers={"origin": "https://evil.example"})
    assert response.status_code == 403 and "set-cookie" not in response.headers


def test_idle_sessions_expire_and_activity_keeps_them(web, client, clock, live):
    t = new_tenant(client)
    idle = live.svc.settings.console_idle_timeout_s
    sign_in(web, t)
    for _ in range(3):  # used every idle-1 seconds: it stays signed in well past one idle period
        clock["now"] += idle - 1
        assert web.get("/console/keys").status_code == 200
    clock["now"] += idle + 1
    expired = web.get("/console/keys")
    assert expired.status_code == 303 and expired.headers["location"] == SIGN_IN
    clock["now"] -= idle + 1  # even back in time: the expired session is gone, not just hidden
    assert web.get("/console/keys").status_code == 303


def test_sign_out_ends_the_session_and_a_replayed_cookie_is_refused(web, client, live):
    t = new_tenant(client)
    cookie = re.match(r"collab_console=([^;]+)", sign_in(web, t).headers["set-cookie"]).group(1)
    page = web.get("/console")
    out = web.post("/console/sign-out", data={"csrf": csrf_of(page.text)})
    assert out.status_code == 303 and out.headers["location"] == SIGN_IN
    assert live.run(live.svc.redis.exists(SESSION + cookie)) == 0
    with httpx.Client(base_url=live.url, cookies={"collab_console": cookie}, follow_redirects=False) as replay:
        assert replay.get("/console").headers["location"] == SIGN_IN
        assert replay.post("/console/sign-out", data={"csrf": csrf_of(page.text)}).status_code == 401


def _advanced(client, t) -> bool:
    return result(post(client, "/v2/workspace/apikeyconfig/get", {}, t.headers))["enableAdvancedQueries"]


def test_a_change_without_the_csrf_token_is_refused_and_changes_nothing(web, client):
    t = new_tenant(client)
    sign_in(web, t)
    for data in ({"key": t.api_key,
                  "enableAdvancedQueries": "on"}, {"key": t.api_key, "enableAdvancedQueries": "on", "csrf": "forged"}):
        refused = web.post("/console/settings/advanced-queries", data=data)
        assert refused.status_code == 403 and "nothing was changed" in refused.text
    assert _advanced(client, t) is False
    token = csrf_of(web.get("/console/settings").text)
    done = web.post("/console/settings/advanced-queries",
                    data={"key": t.api_key, "enableAdvancedQueries": "on", "csrf": token})
    assert done.status_code == 303 and _advanced(client, t) is True
    assert "Advanced queries enabled." in web.get(done.headers["location"]).text  # the flash, shown once
    assert "Advanced queries enabled." not in web.get("/console/settings").text


def test_another_workspaces_key_is_not_found(web, client):
    mine, theirs = new_tenant(client), new_tenant(client)
    sign_in(web, mine)
    for path in (f"/console/settings?key={theirs.api_key}", f"/console/keys?key={theirs.api_key}"):
        response = web.get(path)
        assert response.status_code == 404 and theirs.api_key not in response.text
    token = csrf_of(web.get("/console/keys").text)
    reset = web.post("/console/keys/reset-token", data={"apiKey": theirs.api_key, "csrf": token})
    assert reset.status_code == 404
    saved = web.post("/console/settings/advanced-queries",
                     data={"key": theirs.api_key, "csrf": token, "enableAdvancedQueries": "on"})
    assert saved.status_code == 404 and _advanced(client, theirs) is False
    result(post(client, "/v2/workspace/apikeyconfig/get", {}, theirs.headers))  # their token still works


def test_resetting_the_workspace_token_ends_every_session_of_the_workspace(web, client, live):
    t = new_tenant(client)
    sign_in(web, t)
    with httpx.Client(base_url=live.url, follow_redirects=False, headers={"origin": live.url}) as other:
        sign_in(other, t)
        token = csrf_of(web.get("/console/keys").text)
        reset = web.post("/console/keys/workspace-token", data={"csrf": token})
        assert reset.status_code == 200
        new_token = re.search(r'id="revealed-token" type="text" readonly value="([^"]+)"', reset.text).group(1)
        assert new_token != t.workspace["authToken"]
        assert other.get("/console").headers["location"] == SIGN_IN
    assert web.get("/console").headers["location"] == SIGN_IN
    old = web.post(SIGN_IN, data={"workspaceId": t.workspace["id"], "authToken": t.workspace["authToken"]})
    assert old.status_code == 400
    got = post(client, "/v2/workspace/get", {},
               {"x-service-workspace-id": t.workspace["id"], "x-service-workspace-auth-token": new_token})
    assert result(got)["authToken"] == new_token
    error(post(client, "/v2/workspace/get", {}, t.workspace_headers), "UNAUTHENTICATED")


def test_notification_bounds_are_the_apis_and_shown_next_to_the_field(web, client):
    t = new_tenant(client)
    sign_in(web, t)
    token = csrf_of(web.get("/console/settings").text)
    base = "notificationServiceConfig."
    form = {
        "csrf": token, "key": t.api_key, "useNotificationService": "on", base + "delayConfig.isEnabled": "on",
        base + "delayConfig.delaySeconds": "5", base + "batchConfig.document.batchWindowSeconds": "ten",
        base + "batchConfig.document.maxActivities": "51", base + "batchConfig.user.batchWindowSeconds": "10",
        base + "batchConfig.user.maxActivities": "2"
    }
    response = web.post("/console/settings/notifications", data=form)
    assert response.status_code == 400
    assert "greater than or equal to 10" in field_error(response.text, base + "delayConfig.delaySeconds")
    assert "whole number" in field_error(response.text, base + "batchConfig.document.batchWindowSeconds")
    assert "less than or equal to 50" in field_error(response.text, base + "batchConfig.document.maxActivities")
    assert 'value="5"' in response.text  # what was typed stays in the form
    stored = result(post(client, "/v2/workspace/notificationconfig/get", {}, t.headers))
    assert stored["useNotificationService"] is False  # nothing saved
    form.update({
        base + "delayConfig.delaySeconds": "60", base + "batchConfig.document.batchWindowSeconds": "30",
        base + "batchConfig.document.maxActivities": "5", base + "triggers.huddle.huddle.join": "on"
    })
    assert web.post("/console/settings/notifications", data=form).status_code == 303
    stored = result(post(client, "/v2/workspace/notificationconfig/get", {}, t.headers))
    config = stored["notificationServiceConfig"]
    assert stored["useNotificationService"] is True and config["delayConfig"] == {"isEnabled": True, "delaySeconds": 60}
    assert config["batchConfig"]["document"] == {"isEnabled": False, "batchWindowSeconds": 30, "maxActivities": 5}
    assert config["triggers"]["huddle"] == {"huddle.create": False, "huddle.join": True}


def test_bad_settings_input_is_a_page_with_the_error_never_a_500(web, client):
    t = new_tenant(client)
    sign_in(web, t)
    token = csrf_of(web.get("/console/settings").text)
    short = web.post("/console/settings/provider-key",
                     data={"csrf": token, "key": t.api_key, "provider": "openai", "key_openai": "abc", "action": "set"})
    assert short.status_code == 400 and "at least 8" in field_error(short.text, "key_openai")
    assert 'value="abc"' not in short.text  # a secret is never echoed back
    long = web.post(
        "/console/settings/provider-key",
        data={"csrf": token, "key": t.api_key, "provider": "openai", "key_openai": "k" * 5000, "action": "set"})
    assert long.status_code == 400 and "at most 1000" in field_error(long.text, "key_openai")
    key = web.post("/console/settings/webhooks",
                   data={"csrf": token, "key": t.api_key, "isEnabled": "on", "publicKey": "not a key"})
    assert key.status_code == 400 and "RSA public key" in field_error(key.text, "publicKey")
    first = web.post("/console/settings/webhooks", data={"csrf": token, "key": t.api_key, "encodeData": "on"})
    assert first.status_code == 400 and "isEnabled: true" in first.text  # the service's precondition, in words
    unknown = web.post("/console/settings/provider-key", data={"csrf": token, "key": t.api_key, "provider": "x"})
    assert unknown.status_code == 400 and "Unknown provider" in unknown.text
    missing = web.get("/console/no-such-page")
    assert missing.status_code == 404 and "There is no such page." in missing.text
    create = web.post("/console/keys/create", data={"csrf": token, "ownerEmail": "not-an-email", "type": "staging"})
    assert create.status_code == 400
    assert field_error(create.text, "ownerEmail") and field_error(create.text, "type")


def test_webhook_settings_take_an_uploaded_pem_public_key(web, client):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    public = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    t = new_tenant(client)
    sign_in(web, t)
    token = csrf_of(web.get("/console/settings").text)
    form = {"csrf": token, "key": t.api_key, "isEnabled": "on", "encryptData": "on"}
    binary = web.post("/console/settings/webhooks", data=form, files={"publicKeyFile": ("key.der", der)})
    assert binary.status_code == 400 and "not binary DER" in field_error(binary.text, "publicKeyFile")
    saved = web.post("/console/settings/webhooks", data=form, files={"publicKeyFile": ("key.pem", pem)})
    assert saved.status_code == 303
    stored = result(post(client, "/v2/workspace/advancedwebhookconfig/get", {}, t.headers))
    assert stored["isEnabled"] and stored["encryptData"] and base64.b64decode(stored["publicKey"]) == der


def test_resetting_a_keys_token_shows_the_new_one_once(web, client):
    t = new_tenant(client)
    sign_in(web, t)
    token = csrf_of(web.get("/console/keys").text)
    reset = web.post("/console/keys/reset-token", data={"csrf": token, "apiKey": t.api_key})
    assert reset.status_code == 303
    shown = web.get(reset.headers["location"])
    new_token = re.search(r'id="revealed-token" type="text" readonly value="([^"]+)"', shown.text).group(1)
    assert 'id="revealed-token"' not in web.get(reset.headers["location"]).text  # once
    error(post(client, "/v2/workspace/apikeyconfig/get", {}, t.headers), "PERMISSION_DENIED")
    fresh = {"x-service-api-key": t.api_key, "x-service-auth-token": new_token}
    assert result(post(client, "/v2/workspace/apikeyconfig/get", {}, fresh))["enableAdvancedQueries"] is False


def test_testing_a_provider_key_that_is_not_stored_says_so(web, client):
    t = new_tenant(client)
    sign_in(web, t)
    token = csrf_of(web.get("/console/settings").text)
    response = web.post("/console/settings/provider-key/test",
                        data={"csrf": token, "key": t.api_key, "provider": "gemini"})
    assert response.status_code == 400 and "No Gemini key is stored" in field_error(response.text, "key_gemini")


def test_the_overview_shows_the_workspace_and_its_figures(web, client, live):
    from collab.kit import usage

    t = new_tenant(client)
    for _ in range(3):
        result(post(client, "/v2/workspace/apikeyconfig/get", {}, t.headers))
    post(client, "/v2/users/get", {"organizationId": "o1"}, t.headers)  # refused: 400
    live.run(usage.flush(live.svc))
    sign_in(web, t)
    page = web.get("/console").text
    owner = t.workspace["owner"]["email"]
    assert t.workspace["name"] in page and owner in page and "<dd>free</dd>" in page
    rows = re.findall(
        r"<tr><td><code>([^<]+)</code></td><td class=\"num\">(\d+)</td>"
        r"<td class=\"num\">(\d+)</td><td class=\"num\">(\d+)</td></tr>", page)
    assert ("/v2/workspace/apikeyconfig/get", "200", "3", "3") in rows
    assert ("/v2/users/get", "400", "1", "1") in rows
    assert not any(op.startswith("/console") for op, *_ in rows)
    assert 'aria-label="API calls, last 24 hours by hour:' in page  # each chart says what it shows


def test_sign_in_without_an_origin_needs_the_sign_in_pages_token(client, live):
    """The review's login CSRF: a sign-in POST with no Origin was accepted. Now it needs the page's pre-session token
    (cookie and form alike); a same-origin Origin alone is enough, as browsers send it."""
    t = new_tenant(client)
    credentials = {"workspaceId": t.workspace["id"], "authToken": t.workspace["authToken"]}
    with httpx.Client(base_url=live.url, timeout=30, follow_redirects=False,
                      headers={"x-forwarded-for": fresh_ip()}) as bare:
        refused = bare.post(SIGN_IN, data=credentials)
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        page = bare.get(SIGN_IN)
        token = re.search(r'name="signInToken" value="([^"]+)"', page.text).group(1)
        cookie = page.headers["set-cookie"]
        assert "collab_console_sign_in=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert bare.post(SIGN_IN, data={**credentials, "signInToken": "x" * 43}).status_code == 403  # another token
        signed = bare.post(SIGN_IN, data={**credentials, "signInToken": token})
        assert signed.status_code == 303 and "collab_console=" in signed.headers.get("set-cookie", "")
    with httpx.Client(base_url=live.url, timeout=30, follow_redirects=False,
                      headers={"x-forwarded-for": fresh_ip(), "origin": "null"}) as sandboxed:
        assert sandboxed.post(SIGN_IN, data=credentials).status_code == 403


def test_sessions_end_at_their_lifetime_however_active(web, client, clock, live):
    t = new_tenant(client)
    lifetime = live.svc.settings.console_session_max_s
    sign_in(web, t)
    step = live.svc.settings.console_idle_timeout_s // 2
    for _ in range(lifetime // step):  # active all along: never idle
        clock["now"] += step
        assert web.get("/console/keys").status_code == 200
    clock["now"] += step
    expired = web.get("/console/keys")
    assert expired.status_code == 303 and expired.headers["location"] == SIGN_IN


def test_in_production_the_cookie_is_always_secure_and_https_answers_carry_hsts(web, client, tune):
    t = new_tenant(client)
    tune(env="production")
    cookie = sign_in(web, t).headers["set-cookie"]  # plain http to the service: a TLS proxy it does not trust
    assert "Secure" in cookie
    assert "strict-transport-security" not in web.get(SIGN_IN).headers
    https = web.get(SIGN_IN, headers={"x-forwarded-proto": "https"})
    assert https.headers["strict-transport-security"] == "max-age=31536000"
    api = post(client, "/v2/workspace/get", {}, {**t.workspace_headers, "x-forwarded-proto": "https"})
    assert api.headers["strict-transport-security"] == "max-age=31536000"
