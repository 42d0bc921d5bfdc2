"""Smoke fuzz: mutated bodies on every operation answer in the envelope, never with a 500."""

import json
import random

from helpers import enable_activities, new_tenant

VALUES = [None, True, 0, -1, 10**20, 1.5, "", " ", "x"*300, "\u0000", "💥", [], [1], {}, {"a": 1}, [None], "2026-01-01", -10**20]

def mutate(obj, rng):
    if isinstance(obj, dict) and obj and rng.random() < 0.7:
        k = rng.choice(list(obj)); obj = dict(obj); obj[k] = mutate(obj[k], rng) if rng.random() < 0.5 else rng.choice(VALUES); return obj
    if isinstance(obj, list) and obj and rng.random() < 0.7:
        obj = list(obj); i = rng.randrange(len(obj)); obj[i] = mutate(obj[i], rng); return obj
    return rng.choice(VALUES)

def test_mutated_bodies_never_give_a_500(client, live):
    t = new_tenant(client); enable_activities(client, t)
    act = {"featureType":"comment","actionType":"comment.add","actionUser":{"userId":"u"},"entityData":{"reasoning":"r"},"targetEntityId":"a"}
    seeds = {
      "/v2/workspace/create": {"ownerEmail":"a@b.io","name":"n","workspaceName":"w","avatar":"https://a.io/x"},
      "/v2/workspace/activityconfig/update": {"activityServiceConfig":{"isEnabled":True,"triggers":{"comment":{"comment.add":True}}}},
      "/v2/workspace/notificationconfig/update": {"useNotificationService":True,"notificationServiceConfig":{"delayConfig":{"delaySeconds":20},"batchConfig":{"user":{"maxActivities":3}}}},
      "/v2/workspace/advancedwebhookconfig/update": {"isEnabled":True,"publicKey":"k"},
      "/v2/workspace/apikeyconfig/update": {"enableAdvancedQueries":True,"aiModelApiKey":[{"provider":"openai","customerApiKey":"sk-12345678"}]},
      "/v2/activities/add": {"organizationId":"o","documentId":"d","activities":[act]},
      "/v2/activities/update": {"organizationId":"o","activities":[{"id":"a","entityData":{}}]},
      "/v2/activities/get": {"organizationId":"o","pageSize":5,"order":"asc"},
      "/v2/activities/delete": {"organizationId":"o","activityIds":["a"]},
      "/v2/memory/search": {"query":"q","scope":"organization","organizationId":"o","filters":{"annotationId":"a","dateRange":{"start":1,"end":2},"excludeDocumentIds":["d"]},"limit":5},
      "/v2/memory/judgments/query": {"organizationId":"o","pageSize":3},
      "/v2/rewriter/ask-ai": {"model":"gpt-4o","prompt":"p","text":"t"},
      "/v2/agents/extract": {"fileBase64":"YSxi","mimeType":"text/csv","provider":"openai"},
    }
    rng = random.Random(5)
    bad = []
    for path, seed in seeds.items():
        for _ in range(60):
            body = {"data": mutate(seed, rng)} if rng.random() < 0.9 else mutate({"data": seed}, rng)
            headers = dict(t.headers)
            if path == "/v2/workspace/create": headers["x-forwarded-for"] = f"198.51.100.{rng.randrange(256)}"
            r = client.post(path, json=body, headers=headers)
            # A well-formed extraction without a provider key is the spec's INTERNAL; anything else >= 500 is a bug.
            if r.status_code >= 500 and not (path == "/v2/agents/extract" and r.json()["error"]["status"] == "INTERNAL"):
                bad.append((path, r.status_code, json.dumps(body)[:200], r.text[:200]))
    assert not bad, "\n".join(map(str, bad[:20]))
