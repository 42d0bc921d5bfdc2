"""Memory insights (issue #39, part 4): stats, patterns, reviewer profiles and alerts, computed by the per-key job
from planted judgments, read through velt-py's MemoryService; tenant isolation and bad input."""

import pytest
from velt_py.models.memory import (
    DismissAlertRequest,
    GetAlertConfigRequest,
    GetPatternsRequest,
    GetReviewerProfileRequest,
    GetStatsRequest,
    ListAlertsRequest,
    MarkAlertActionedRequest,
    UpdateAlertConfigRequest,
)

from collab.insights import compute, context, service
from support.factories import add_activities, judged
from support.helpers import enable_activities, error, issue_paths, new_tenant, post, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # activities become judgments (derive embeds them)

DAY = 86_400_000
APPROVE, REJECT = "comment_annotation.approve", "comment_annotation.reject"
CITATION = "The medical claim is missing a citation to a study."
DISCLAIMER = "Clear copy with the disclaimer shown."


def body(response):
    assert response.status_code == 200, response.text
    payload = response.json()
    assert set(payload) == {"result"}, payload
    return payload["result"]


def plant(client, live, t, activities, **where):
    """Add review activities (500 a call), let them become judgments, and run the insights job for the key."""
    for start in range(0, len(activities), 500):
        response = add_activities(client, t, *activities[start:start + 500], **where)
        assert response.status_code == 200, response.text
    settle_jobs(live, t)
    return compute_now(live, t)


def compute_now(live, t):
    return live.run(service.compute_key(live.svc, api_key_id=t.api_key), timeout=120)


def review(n, reasoning, *, action, ts, user="sarah", kind="marketing-copy", **extra):
    return judged(f"{user}-{n}", reasoning, action=action, ts=ts, user=user, target=f"ann-{n % 7}",
                  entityTargetData={"contentType": kind}, **extra)


@pytest.fixture
def tenant(client):
    t = new_tenant(client)
    enable_activities(client, t)
    return t


def test_profiles_and_patterns_from_judgments(client, live, sdk, clock, tenant):
    now = int(clock["now"] * 1000)
    # Sarah approved marketing copy with a disclaimer 100-300 days ago, and rejects missing citations lately.
    old = [review(i, DISCLAIMER, action=APPROVE, ts=now - (100 + i * 5) * DAY) for i in range(30)]
    new = [
        review(100 + i, CITATION, action=REJECT, ts=now - (1 + i * 2) * DAY - 3_600_000 * (i % 3)) for i in range(30)
    ]
    others = [review(200 + i, CITATION, action=REJECT, ts=now - DAY * 3, user="omar") for i in range(3)]
    done = plant(client, live, tenant, old + new + others)
    assert done["profiles"] == 2 and done["patterns"] == 2
    memory = sdk(tenant).api.memory

    profile = memory.getReviewerProfile(GetReviewerProfileRequest(targetUserId="sarah"))["result"]
    assert profile["userId"] == "sarah" and profile["name"] == "User sarah" and profile["email"] is None
    assert profile["totalJudgments"] == 60 and profile["approvalRate"] == 0.5
    assert profile["avgReviewTimeSeconds"] == 0 and profile["twinEligible"] is True and profile["twinAccuracy"] is None
    assert profile["contentTypes"] == ["marketing-copy"]
    assert profile["topFlags"] == [{"issue": "citation-claim", "count": 30}]
    assert profile["orgBreakdown"] == {
        "org1": {
            "organizationId": "org1", "clientOrganizationId": "org1", "judgments": 60, "approvals": 30,
            "approvalRate": 0.5
        }
    }
    assert profile["lastActive"] == max(r["timestamp"] for r in new)
    assert len(profile["peakHours"]) == 3 and profile["peakHours"] == sorted(profile["peakHours"])
    [evolved] = profile["evolvedStandards"]
    assert evolved["topic"] == "marketing-copy" and evolved["shiftDate"] == min(r["timestamp"] for r in new)
    assert "Approved 100%" in evolved["oldPattern"] and "Approved 0%" in evolved["newPattern"]
    # Omar has 3 judgments: no twin, no evolved standards (the key is absent, as documented).
    omar = memory.getReviewerProfile(GetReviewerProfileRequest(targetUserId="omar"))["result"]
    assert omar["totalJudgments"] == 3 and omar["twinEligible"] is False and "evolvedStandards" not in omar
    assert memory.getReviewerProfile(GetReviewerProfileRequest(targetUserId="nobody")) == {"result": None}
    assert memory.getReviewerProfile(GetReviewerProfileRequest()) == {"result": None}

    patterns = memory.getPatterns(GetPatternsRequest())["result"]
    by_category = {p["category"]: p for p in patterns}
    rejected = by_category["rejection"]
    assert rejected["description"] == ('Work whose review mentions "citation claim" is usually rejected (33 of 33 '
                                       'decisions).')
    assert rejected["sourceCount"] == 33 and rejected["uniqueReviewers"] == 2 and rejected["enforcementRate"] == 1.0
    assert rejected["confidence"] == 1.0 and rejected["scope"] == "org" and rejected["organizationId"] == "org1"
    assert rejected["contentType"] == "marketing-copy"
    assert len(rejected["topSourceRecordIds"]) == 5
    assert set(rejected["topSourceRecordIds"]) <= {r["id"] for r in new + others}
    approved = by_category["approval"]
    assert approved["sourceCount"] == 30 and approved["enforcementRate"] == 1.0 and "usually approved" in approved[
        "description"]
    assert all(p["discoveredAt"] == p["updatedAt"] == now for p in patterns)

    stats = memory.getStats(GetStatsRequest())["result"]
    assert stats == {"totalActivities": 63, "totalProfiles": 2, "totalPatterns": 2, "totalKnowledgeSources": 0}

    # Recomputed later with the same judgments, a pattern keeps its times; a changed one moves them.
    clock["now"] += 3600
    plant(client, live, tenant, [review(300, CITATION, action=REJECT, ts=now + 1000, user="omar")])
    later = {p["category"]: p for p in memory.getPatterns(GetPatternsRequest())["result"]}
    assert later["approval"]["updatedAt"] == now
    assert later["rejection"]["updatedAt"] == now + 3_600_000 and later["rejection"]["sourceCount"] == 34
    assert memory.getPatterns(GetPatternsRequest())["result"][0]["category"] == "rejection"  # newest first


def test_approval_rate_drop_raises_one_alert_and_its_lifecycle(client, live, sdk, clock, tenant, db):
    now = int(clock["now"] * 1000)
    month = [review(i, DISCLAIMER, action=APPROVE, ts=now - (8 + i) * DAY) for i in range(20)]
    week = [review(100 + i, CITATION, action=REJECT, ts=now - DAY - i * 3_600_000) for i in range(12)]
    assert plant(client, live, tenant, month + week)["alerts"] == 1
    memory = sdk(tenant).api.memory
    [alert] = memory.listAlerts(ListAlertsRequest())["result"]
    assert alert["id"].startswith("alr_") and alert["apiKey"] == tenant.api_key
    assert alert["alertType"] == "anomaly" and alert["severity"] == "high" and alert["status"] == "active"
    assert alert["title"] == "Approval rate dropped significantly"
    assert alert["description"] == "Approval rate fell from 62% (30-day) to 0% (7-day), a 62% drop."
    assert alert["evidence"]["metric"] == "approvalRate" and alert["evidence"]["window"] == "7d vs 30d"
    assert alert["evidence"]["baseline"] == round(20 / 32, 2) and alert["evidence"]["current"] == 0.0
    assert set(alert["evidence"]["sourceRecordIds"]) <= {r["id"] for r in week}
    assert alert["dedupKey"] == "anomaly:approvalRate" and alert["createdAt"] == now
    assert alert["dismissedAt"] is None and alert["dismissedBy"] is None and alert["actionUrl"] is None
    assert alert["suggestedAction"].startswith("Review recent rejections")

    # The same trend again is not a second alert (dedupKey).
    compute_now(live, tenant)
    assert [a["id"] for a in memory.listAlerts(ListAlertsRequest())["result"]] == [alert["id"]]

    # Another tenant cannot act on it: NOT_FOUND, as for an id that never existed, and A's alert is untouched.
    other = new_tenant(client)
    for path in ("/v2/memory/alerts/action", "/v2/memory/alerts/dismiss"):
        error(post(client, path, {"alertId": alert["id"]}, other.headers), "NOT_FOUND")
        error(post(client, path, {"alertId": "alr_000000000000000000000000"}, tenant.headers), "NOT_FOUND")
    assert memory.listAlerts(ListAlertsRequest())["result"] == [alert]

    assert memory.markAlertActioned(MarkAlertActionedRequest(alertId=alert["id"])) == {"result": {"success": True}}
    assert memory.listAlerts(ListAlertsRequest())["result"] == []
    row = db.execute("select status, dismissed_by from insight_alerts where id = %s", (alert["id"], )).fetchone()
    assert row == {"status": "actioned", "dismissed_by": None}
    # Dismissed by velt-py (no user: ""), then again by a user: the second time moves the time.
    assert memory.dismissAlert(DismissAlertRequest(alertId=alert["id"])) == {"result": {"success": True}}
    first = db.execute("select dismissed_at, dismissed_by from insight_alerts where id = %s",
                       (alert["id"], )).fetchone()
    assert first == {"dismissed_at": now, "dismissed_by": ""}
    clock["now"] += 60
    done = post(client, "/v2/memory/alerts/dismiss", {"alertId": alert["id"], "user": {"uid": "user_1"}},
                tenant.headers)
    assert body(done) == {"success": True}
    again = db.execute("select status, dismissed_at, dismissed_by from insight_alerts where id = %s",
                       (alert["id"], )).fetchone()
    assert again == {"status": "dismissed", "dismissed_at": now + 60_000, "dismissed_by": "user_1"}
    # Raised within the last 7 days: the trend does not come back at the next computation.
    compute_now(live, tenant)
    assert memory.listAlerts(ListAlertsRequest())["result"] == []


def test_alerts_are_capped_at_three_per_rolling_week_most_severe_first():
    now = 100 * DAY

    def candidate(key, severity):
        return {"alert_type": "anomaly", "severity": severity, "dedup_key": key, "body": {}}

    candidates = [candidate(f"k{i}", s) for i, s in enumerate(["low", "high", "medium", "low", "high"])]
    assert [c["dedup_key"] for c in compute.admit(candidates, recent=[], now=now)] == ["k1", "k4", "k2"]
    recent = [{"dedup_key": "k1", "status": "dismissed", "created_at": now - DAY},
              {"dedup_key": "old", "status": "active", "created_at": now - 30 * DAY}]
    assert [c["dedup_key"] for c in compute.admit(candidates, recent=recent, now=now)] == ["k4", "k2"]
    recent += [{"dedup_key": "x", "status": "actioned", "created_at": now - 6 * DAY}] * 2
    assert compute.admit(candidates, recent=recent, now=now) == []
    assert compute.admit([candidate("old", "high")], recent=recent[1:2], now=now) == []  # still active


def test_volume_spike_and_pattern_drift_alerts(client, live, sdk, clock, tenant):
    now = int(clock["now"] * 1000)
    # A quiet month, then a busy week of mixed decisions (approval rate steady): only the volume alert.
    month = [
        review(i, f"Reviewed item {i}", action=APPROVE if i % 2 else REJECT, ts=now - (8 + i) * DAY) for i in range(10)
    ]
    week = [
        review(100 + i, f"Reviewed entry {i}", action=APPROVE if i % 2 else REJECT, ts=now - i * 3_600_000)
        for i in range(30)
    ]
    plant(client, live, tenant, month + week)
    memory = sdk(tenant).api.memory
    alerts = memory.listAlerts(ListAlertsRequest())["result"]
    assert [(a["dedupKey"], a["evidence"]["metric"]) for a in alerts] == [("anomaly:volume", "volume")]
    assert alerts[0]["evidence"]["baseline"] == round(40 / 30, 2) and alerts[0]["evidence"]["current"] == round(
        30 / 7, 2)
    assert alerts[0]["title"] == "Review volume spiked"

    # A pattern flips from approved to rejected between two computations: standards_drift.
    gdpr = "The consent checkbox for newsletters is shown."
    plant(client, live, tenant, [review(300 + i, gdpr, action=APPROVE, ts=now - 40 * DAY - i) for i in range(6)])
    plant(client, live, tenant, [review(400 + i, gdpr, action=REJECT, ts=now - 40 * DAY - i) for i in range(12)])
    drift = [a for a in memory.listAlerts(ListAlertsRequest())["result"] if a["alertType"] == "standards_drift"]
    # Compared as approval shares: all approved, then a third approved (a flip, whatever side leads).
    assert len(drift) == 1 and drift[0]["evidence"]["metric"] == "approvalRate"
    assert drift[0]["evidence"]["baseline"] == 1.0 and drift[0]["evidence"]["current"] == round(6 / 18, 2)
    assert drift[0]["severity"] == "high"


def test_alert_config_is_stored_merged_and_returned(client, sdk, tenant):
    memory = sdk(tenant).api.memory
    assert memory.getAlertConfig(GetAlertConfigRequest()) == {"result": {"enabled": True}}
    sent = {
        "maxAlertsPerWeek": 5, "enabledAlertTypes": ["anomaly", "novel_type"], "severityThreshold": "medium",
        "team": {"channel": "#reviews"}
    }
    assert memory.updateAlertConfig(UpdateAlertConfigRequest(config=sent)) == {"result": {"success": True}}
    assert memory.getAlertConfig(GetAlertConfigRequest())["result"] == {"enabled": True, **sent}
    memory.updateAlertConfig(UpdateAlertConfigRequest(config={"enabled": False, "maxAlertsPerWeek": 0}))
    assert memory.getAlertConfig(GetAlertConfigRequest())["result"] == {**sent, "enabled": False, "maxAlertsPerWeek": 0}
    # Another key's settings are its own.
    other = new_tenant(client)
    assert body(post(client, "/v2/memory/alerts/config/get", {}, other.headers)) == {"enabled": True}


def test_stats_count_only_the_key_s_own_rows(client, live, sdk, clock, tenant, db):
    now = int(clock["now"] * 1000)
    other = new_tenant(client)
    enable_activities(client, other)
    for t, n in ((tenant, 4), (other, 1)):
        for i in range(n):
            db.execute(
                "insert into knowledge_sources (id, api_key_id, mime_type, size_bytes, sha256, content)"
                " values (%s, %s, 'text/plain', 1, 'x', 'x')", (f"ks-{t.api_key[-8:]}-{i}", t.api_key))
    plant(client, live, other, [review(i, CITATION, action=REJECT, ts=now - DAY, user=f"u{i}") for i in range(9)])
    plant(client, live, tenant, [review(i, CITATION, action=REJECT, ts=now - DAY) for i in range(3)])
    assert sdk(tenant).api.memory.getStats(GetStatsRequest())["result"] == {
        "totalActivities": 3, "totalProfiles": 1, "totalPatterns": 1, "totalKnowledgeSources": 4
    }
    assert body(post(client, "/v2/memory/stats/get", {}, other.headers)) == {
        "totalActivities": 9, "totalProfiles": 9, "totalPatterns": 1, "totalKnowledgeSources": 1
    }
    # B asking for A's reviewer gets null, as for one that never existed.
    assert body(post(client, "/v2/memory/profiles/get", {"targetUserId": "sarah"}, other.headers)) is None
    assert len(body(post(client, "/v2/memory/patterns/get", {}, other.headers))) == 1


def test_the_cron_queues_one_job_per_changed_key(client, live, clock, tune, tenant, db):
    now = int(clock["now"] * 1000)
    for i in range(3):
        assert add_activities(client, tenant, review(i, CITATION, action=REJECT, ts=now - DAY)).status_code == 200
    settle_jobs(live, tenant)
    state = db.execute("select changes, computed from insight_state where api_key_id = %s",
                       (tenant.api_key, )).fetchone()
    assert state["changes"] >= 3
    tune(insights_keys_per_sweep=10_000)  # every key due in this session's database, this one among them
    live.run(service.sweep(live.svc), timeout=30)  # (or the worker's own cron got there first)
    settle_jobs(live, tenant)
    jobs = db.execute("select status from jobs where api_key_id = %s and function = 'compute_insights'",
                      (tenant.api_key, )).fetchall()
    assert jobs and all(j["status"] == "succeeded" for j in jobs)
    state = db.execute("select changes, computed, queued_at from insight_state where api_key_id = %s",
                       (tenant.api_key, )).fetchone()
    assert state["computed"] == state["changes"] and state["queued_at"] is None
    assert body(post(client, "/v2/memory/profiles/get", {"targetUserId": "sarah"},
                     tenant.headers))["totalJudgments"] == 3
    # Nothing changed since: the next sweep queues nothing for this key.
    live.run(service.sweep(live.svc), timeout=30)
    assert len(
        db.execute("select 1 from jobs where api_key_id = %s and function = 'compute_insights'",
                   (tenant.api_key, )).fetchall()) == len(jobs)


def test_context_for_ask_is_short_and_bounded(client, live, clock, tenant):
    now = int(clock["now"] * 1000)
    long = CITATION + " " + "x" * 3000
    plant(client, live, tenant,
          [review(i, long if i % 2 else CITATION, action=REJECT, ts=now - DAY, user=f"u{i % 4}") for i in range(12)])

    async def read():
        async with live.svc.pool.connection() as conn:
            return await context.for_ask(conn, api_key_id=tenant.api_key)

    out = live.run(read(), timeout=30)
    import orjson
    assert set(out) == {"profiles", "patterns", "alerts"} and len(orjson.dumps(out)) <= context.MAX_BYTES
    assert [p["userId"] for p in out["profiles"]] == ["u0", "u1", "u2"]
    assert out["patterns"][0]["sourceCount"] == 12 and out["alerts"] == []
    empty = new_tenant(client)

    async def nothing():
        async with live.svc.pool.connection() as conn:
            return await context.for_ask(conn, api_key_id=empty.api_key)

    assert live.run(nothing(), timeout=30) == {"profiles": [], "patterns": [], "alerts": []}


@pytest.mark.parametrize("path, data, paths", [
    ("/v2/memory/profiles/get", {"targetUserId": 5}, [["targetUserId"]]),
    ("/v2/memory/profiles/get", {"targetUserId": ""}, [["targetUserId"]]),
    ("/v2/memory/profiles/get", {"targetUserId": "u" * 201}, [["targetUserId"]]),
    ("/v2/memory/alerts/action", {}, [["alertId"]]),
    ("/v2/memory/alerts/action", {"alertId": ["a"]}, [["alertId"]]),
    ("/v2/memory/alerts/dismiss", {"alertId": "a" * 201}, [["alertId"]]),
    ("/v2/memory/alerts/dismiss", {"alertId": "a", "user": {"uid": 3}}, [["user", "uid"]]),
    ("/v2/memory/alerts/config/update", {}, [["config"]]),
    ("/v2/memory/alerts/config/update", {"config": []}, [["config"]]),
    ("/v2/memory/alerts/config/update", {"config": {"severityThreshold": "urgent"}}, [["config", "severityThreshold"]]),
    ("/v2/memory/alerts/config/update", {"config": {"maxAlertsPerWeek": -1}}, [["config", "maxAlertsPerWeek"]]),
    ("/v2/memory/alerts/config/update", {"config": {"maxAlertsPerWeek": "5"}}, [["config", "maxAlertsPerWeek"]]),
    ("/v2/memory/alerts/config/update", {"config": {"enabled": "yes"}}, [["config", "enabled"]]),
    ("/v2/memory/alerts/config/update", {"config": {"enabledAlertTypes": ["a"] * 21}}, [["config", "enabledAlertTypes"]
                                                                                        ]),
    ("/v2/memory/alerts/config/update", {"config": {f"k{i}": i
                                                    for i in range(51)}}, [["config"]]),
    ("/v2/memory/alerts/config/update", {"config": {"blob": "x" * 17_000}}, [["config"]]),
])
def test_bad_input_is_invalid_argument_with_paths_relative_to_data(client, tenant, path, data, paths):
    err = error(post(client, path, data, tenant.headers), "INVALID_ARGUMENT")
    assert [p[:len(paths[0])] for p in issue_paths(err)] == paths
    # Nothing was stored by a refused update.
    assert body(post(client, "/v2/memory/alerts/config/get", {}, tenant.headers)) == {"enabled": True}


def test_stored_config_cannot_grow_past_its_bounds(client, tenant):
    for batch in range(5):
        config = {f"k{batch}-{i}": i for i in range(10)}
        assert body(post(client, "/v2/memory/alerts/config/update", {"config": config}, tenant.headers))
    config = {f"k5-{i}": i for i in range(10)}
    err = error(post(client, "/v2/memory/alerts/config/update", {"config": config}, tenant.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["config"]]
    assert len(body(post(client, "/v2/memory/alerts/config/get", {}, tenant.headers))) == 51


def test_every_operation_needs_an_api_key(client):
    for path in ("stats/get", "patterns/get", "profiles/get", "alerts/config/get", "alerts/config/update",
                 "alerts/list", "alerts/action", "alerts/dismiss"):
        error(post(client, f"/v2/memory/{path}", {}, {}), "UNAUTHENTICATED")


def test_a_stored_config_with_a_huge_number_still_merges_and_reads(client):
    t = new_tenant(client)
    config = "/v2/memory/alerts/config"
    # 1e30 is a double on the wire; jsonb gives it back as an integer of 31 digits, which no reply may choke on.
    for sent in ({"big": 1e30}, {"enabled": False}):
        answer = post(client, f"{config}/update", {"config": sent}, t.headers)
        assert answer.status_code == 200 and answer.json() == {"result": {"success": True}}, answer.text
    got = post(client, f"{config}/get", {}, t.headers)
    assert got.status_code == 200 and got.json() == {"result": {"enabled": False, "big": 1e30}}
