"""One source of truth for each response record (DESIGN §7.13): the function that serialises a record is the
`wire` static method of the model that documents it, in the domain's schemas.py. Handlers call `Model.wire(row)`
and send the dict as is (no pydantic on the hot path); this test validates what each one builds, from realistic
rows, against its model, strictly: a key the model does not name, a missing field or a wrong type fails here
rather than in the contract tests against a running app.
"""

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

import collab
from collab.activities.schemas import Activity
from collab.agents.execution_schemas import Execution
from collab.agents.schemas import Agent, AgentGroup, AgentGroupSummary, AgentSummary, AgentVersion
from collab.comments.schemas import (
    Annotation,
    AnnotationSnapshot,
    Comment,
    CommentBrief,
    UserBrief,
    UserComment,
    UserReaction,
)
from collab.crdt.schemas import CrdtEditor
from collab.documents.schemas import Document, Folder
from collab.insights.schemas import Alert
from collab.kit.openapi import Doc
from collab.notifications.schemas import Notification
from collab.organizations.schemas import Organization
from collab.presence.schemas import Presence
from collab.realtime.schemas import LiveState
from collab.recordings.schemas import Recording
from collab.users.schemas import DeletionStatus, DocUser, Group, Invitation, UserRecording, UserWithAccess
from collab.webhooks.schemas import WebhookEndpoint
from collab.workspaces.schemas import ApiKeyEntry, Workspace

SRC = Path(collab.__file__).parent
NOW = 1_700_000_000_123
ACTOR = {"userId": "u1", "name": "Ana", "email": "ana@example.com", "color": "#f00"}  # extra keys kept as sent

COMMENT = {
    "id": 1, "comment_text": "Looks good", "comment_html": "<p>Looks good</p>", "from_user": ACTOR, "created_at": NOW,
    "updated_at": NOW + 5, "is_edited": True, "tagged": [{"userId": "u2", "contact": {"userId": "u2", "name": "Bo"}}],
    "reactions": [{"reaction": "👍", "userIds": ["u2"]}], "attachments": [{"url": "https://example.com/a.png"}],
    "agent": {"agentId": "ag_1"}, "context": {"ticket": "T-1"}
}
BARE_COMMENT = COMMENT | {
    "id": 2, "comment_text": None, "comment_html": None, "is_edited": False, "tagged": [], "reactions": [],
    "attachments": [], "agent": None, "context": None
}
THREAD = {
    "id": "ann_1", "document_id": "d1", "organization_id": "o1", "location": {"id": "loc1"},
    "target_element": {"elementId": "e1", "targetText": "Plan",
                       "occurrence": 1}, "status": "approved", "status_type": "terminal",
    "status_meta": {"name": "Approved", "color": "#15803d", "lightColor": "#dcfce7", "iconUrl": "https://e.com/a.svg"
                    }, "priority": "P1", "priority_meta": {"name": "Urgent", "color": "#dc2626"}, "assigned_to": ACTOR,
    "from_user": ACTOR, "context": {"k": "v"}, "visibility": "restricted", "visible_user_ids": ["u2"],
    "created_at": NOW, "updated_at": NOW + 1, "resolved_by": "u1", "kind": "suggestion", "source_type": "agent",
    "agent": {"agentId": "agt_1", "executionId": "exe_1"}, "suggestion": {"status": "pending", "text": "Plan B"}
}
BARE_THREAD = THREAD | {
    "location": None, "target_element": None, "status": "open", "status_type": "default", "status_meta": None,
    "priority": None, "priority_meta": None, "assigned_to": None, "context": None, "visibility": "public",
    "visible_user_ids": None, "resolved_by": None, "kind": "comment", "source_type": "rest-api", "agent": None,
    "suggestion": None
}
PLACE = {"organization_id": "o1", "document_id": "d1", "annotation_id": "ann_1"}
DELETION = {
    "tasks": ["comments", "crdt"], "done": ["comments"], "last_task_completed_at": NOW, "job_status": "failed",
    "job_error": "boom"
}
WORKSPACE = {
    "id": "ws_1", "name": "Acme", "owner_email": "ana@example.com", "owner_id": "usr_1", "owner_name": "Ana",
    "owner_avatar": ""
}
KEYS = [{"id": "key_1", "name": "Main", "type": "testing"}, {"id": "key_2", "name": "Prod", "type": "production"}]
INVITATION = {
    "id": "inv_1", "organization_id": "o1", "type": "doc_user", "email": "ana@example.com", "status": "ACCEPTED",
    "document_id": "d1", "folder_id": None, "organization_name": "Acme", "document_name": "Plan", "folder_name": None,
    "invited_by": {"userId": "u0",
                   "email": "owner@example.com"}, "user_id": "u1", "created_at": NOW, "updated_at": NOW + 1
}

AGENT_CONFIG = {
    "instructions": "Check the headings.", "rawInstructions": "headings", "phaseTimeoutMs": 60000, "contextGathering": {
        "strategies": ["rest-api"], "strategyOptions": {
            "rest-api": {
                "endpoints": [{
                    "description": "Prices", "url": "https://e.com", "auth": {"type": "bearer", "token": "c2VhbGVk"}
                }]
            }
        }
    }, "execution": {"executionStrategy": "ai"}, "response": {"useAiFormatting": False},
    "postProcess": {"guardrails": {"enabled": True}}, "input": {"variableKeys": ["k"]},
    "scope": {"pageScope": ["https://e.com/*"]}, "setup": {"setupSamples": []}
}
BARE_AGENT_CONFIG = {"contextGathering": {"strategies": ["web-page-text"]}, "execution": {}}
AGENT = {
    "id": "agt_1", "name": "Brand", "description": "Checks the brand", "enabled": True, "version": 2,
    "metadata": {"team": "growth"}, "config": AGENT_CONFIG, "execution_count": 3, "last_executed_at": NOW
}
AGENT_GROUP = {
    "id": "grp_1", "name": "Brand QA", "description": "All brand agents", "agent_ids": ["agt_1", "agt_2"],
    "agent_count": 2, "metadata": {"apiKey": "key_1", "team": "growth"}, "created_at": NOW, "updated_at": NOW + 1
}
EXECUTION = {
    "id": "exec_1", "agent_id": "agt_1", "agent_name": "Brand QA", "agent_version": 2, "organization_id": "o1",
    "document_id": "d1", "request": {
        "seedUrl": "https://example.com", "crossPageExecute": False, "maxUrlsToProcess": 50, "deviceType": "desktop",
        "annotationVisibility": "private", "userContext": {}, "aiConfig": None
    }, "trigger": "standalone", "workflow_execution_id": "wf_1", "previous_execution_id": "exec_0",
    "ran_by": {"userId": "u1", "name": "", "email": ""}, "status": "error", "started_at": NOW, "completed_at": NOW + 9,
    "error": {"code": "TIMEOUT", "message": "m", "retryable": True,
              "occurredAt": NOW + 9}, "results_summary": {"totalFindings": 0, "summary": "m"},
    "llm_model": "openai/gpt-4o-mini", "prompt_tokens": 10, "completion_tokens": 5
}
# (model, the arguments of model.wire after the row, rows as the repository returns them). Each row is served
# twice where a field may be absent: with every optional column set, and with each one unset.
ALERT = {
    "api_key_id": "key_1", "id": "alr_1", "alert_type": "anomaly", "severity": "medium", "dedup_key": "anomaly:volume",
    "status": "active", "created_at": NOW, "dismissed_at": None, "dismissed_by": None, "body": {
        "title": "Review volume spiked", "description": "Judgments per day rose.", "suggestedAction": "Check.",
        "actionUrl": None, "evidence": {
            "metric": "volume", "baseline": 1.5, "current": 4.0, "window": "7d vs 30d", "sourceRecordIds": ["j1"]
        }
    }
}
CASES: list[tuple[type[Doc], tuple[Any, ...], list[dict[str, Any]]]] = [
    (Organization, (), [{"id": "o1", "name": "Acme", "disabled": False, "created_at": NOW, "updated_at": NOW + 1},
                        {"id": "o2", "name": None, "disabled": True, "created_at": NOW, "updated_at": NOW}]),
    (Document, (), [{
        "id": "d1", "organization_id": "o1", "name": "Plan", "folder_id": "f1", "created_at": NOW, "updated_at": NOW,
        "access_type": None, "folder_access_type": "public", "disabled": False
    }, {
        "id": "d2", "organization_id": "o1", "name": None, "folder_id": None, "created_at": NOW, "updated_at": NOW,
        "access_type": None, "folder_access_type": None, "disabled": True
    }]),
    (Folder, (), [{
        "id": "f2", "organization_id": "o1", "parent_id": "f1", "ancestors": ["f0", "f1"], "name": "Drafts",
        "created_at": NOW, "updated_at": NOW + 1, "access_type": "restricted", "effective_type": "restricted"
    }, {
        "id": "f0", "organization_id": "o1", "parent_id": None, "ancestors": [], "name": None, "created_at": NOW,
        "updated_at": None, "access_type": None, "effective_type": None
    }]),
    (UserWithAccess, (), [{"user_id": "u1", "access_role": "editor", "name": "Ana", "email": "ana@example.com"},
                          {"user_id": "u2", "access_role": "viewer", "name": None, "email": None}]),
    (Notification, ("key_1", ), [{
        "id": "n1", "notification_source": "comment", "organization_id": "o1", "document_id": "d1",
        "notification_source_data": {
            "activityIds": ["a1", "a2"], "actionTypes": ["comment.add"], "entityData": {"commentId": 1},
            "visibility": "private", "visibleToUserIds": ["u1", "u2"]
        }, "action_user": ACTOR, "display_body_message": "Nice",
        "display_headline_message_template": "{actionUser} commented", "display_headline_message_template_data": {
            "actionUser": ACTOR, "activityCount": "2", "recipientUser": {"userId": "u2"}
        }, "notify_users": {"bo@example.com": True}, "notify_users_by_user_id": {"u2": True}, "timestamp": NOW,
        "read_by": ["u2"]
    }, {
        "id": "n2", "notification_source": "custom", "organization_id": "o1", "document_id": "d1",
        "notification_source_data": None, "action_user": {"userId": "u1"}, "display_body_message": "",
        "display_headline_message_template": "Hello", "display_headline_message_template_data": None,
        "notify_users": {}, "notify_users_by_user_id": {}, "timestamp": NOW, "read_by": []
    }]),
    (Activity, (), [{
        "id": "a1", "organization_id": "o1", "document_id": "d1", "feature_type": "comment",
        "action_type": "comment.add", "action_user": ACTOR, "target_entity_id": "ann1", "target_sub_entity_id": "1",
        "changes": {"status": {"from": "open",
                               "to": "resolved"}}, "entity_data": {"commentId": 1}, "entity_target_data": [1, 2],
        "display_message_template": "{actionUser} commented", "display_message_template_data": {"actionUser": ACTOR},
        "action_icon": "comment", "is_activity_resolver_used": False, "timestamp": NOW
    }, {
        "id": "a2", "organization_id": "o1", "document_id": "d1", "feature_type": "custom",
        "action_type": "custom.thing", "action_user": {"userId": "u1"}, "target_entity_id": None,
        "target_sub_entity_id": None, "changes": None, "entity_data": None, "entity_target_data": None,
        "display_message_template": None, "display_message_template_data": None, "action_icon": None,
        "is_activity_resolver_used": True, "timestamp": NOW
    }]),
    (Recording, (), [{
        "recording_type": "audio", "mode": "thread", "api_key_id": "key_1", "document_id": "d1",
        "organization_id": "o1", "duration_ms": 90_061_500, "display_name": "Standup", "annotation_id": "rec_1",
        "attachments": [{
            "attachmentId": 1, "url": "https://example.com/a.webm", "mimeType": "audio/webm", "name": "a.webm",
            "type": "audio", "size": 1234, "stored": "ignored"
        }], "version": 3
    }, {
        "recording_type": "screen", "mode": "popover", "api_key_id": "key_1", "document_id": "d1",
        "organization_id": "o1", "duration_ms": 0, "display_name": "", "annotation_id": "rec_2", "attachments": [],
        "version": 1
    }]),
    (WebhookEndpoint, (), [{
        "id": "ep_1", "url": "https://example.com/hook", "description": "Main", "filter_types": ["comment.add"],
        "channels": ["o1"], "disabled": False, "disabled_reason": None, "rate_limit": 10, "uid": "main",
        "metadata": {"team": "core"}, "created_at": NOW, "updated_at": NOW
    }, {
        "id": "ep_2", "url": "https://example.com/other", "description": "", "filter_types": None, "channels": None,
        "disabled": True, "disabled_reason": "Failing for 5 days.", "rate_limit": None, "uid": None, "metadata": {},
        "created_at": NOW, "updated_at": NOW
    }]),
    (CrdtEditor, ({"type": "map", "title": "Plan"}, ),
     [{"editor_id": "e1", "last_update": NOW, "last_updated_by": "u1", "session_id": "s1", "state": b"\x00\x00"},
      {"editor_id": "e2", "last_update": NOW, "last_updated_by": None, "session_id": None, "state": b""}]),
    (Presence, ("online", ), [{"user_id": "u1", "name": "Ana", "email": "ana@example.com", "last_seen": NOW},
                              {"user_id": "u2", "name": None, "email": None, "last_seen": NOW}]),
    (Comment, (), [COMMENT, BARE_COMMENT]), (Annotation, ([Comment.wire(COMMENT)], ), [THREAD, BARE_THREAD]),
    (AnnotationSnapshot, (), [THREAD, BARE_THREAD]),
    (CommentBrief, (), [{
        "id": 3, "text_preview": "Looks", "from_brief": {"userId": "u1", "name": "Ana"}, "created_at": NOW,
        "updated_at": NOW, "is_edited": False
    }, {
        "id": 4, "text_preview": None, "from_brief": {"userId": "u1"}, "created_at": NOW, "updated_at": NOW,
        "is_edited": True
    }]), (UserBrief, (), [ACTOR, {"userId": "u3"}]), (UserComment, (), [PLACE | COMMENT, PLACE | BARE_COMMENT]),
    (UserReaction, (), [PLACE | {"comment_id": 1, "reaction": "👍", "user_id": "u2", "created_at": NOW}]),
    (UserRecording, (), [
        PLACE | {
            "version": 2, "recording_type": "video", "mode": "thread", "display_name": "Demo", "duration_ms": 61_000,
            "attachments": [{
                "attachmentId": 1, "url": "https://example.com/v.webm", "mimeType": "video/webm", "name": "v.webm",
                "type": "video", "size": 10, "stored": "ignored"
            }], "from_user": ACTOR, "created_at": NOW
        }
    ]),
    (DeletionStatus, (), [
        DELETION, DELETION | {"done": ["comments", "crdt"]}, DELETION | {"job_status": "running"},
        DELETION | {"last_task_completed_at": None, "done": [], "job_status": "queued"}
    ]), (ApiKeyEntry, (), KEYS),
    (Workspace, (KEYS, "wtok_1"), [WORKSPACE, WORKSPACE | {"owner_avatar": "https://example.com/a.png"}]),
    (LiveState, (), [{"live_state_data_id": "cursor", "data": {"x": 1, "y": [2, None]}, "updated_at": NOW},
                     {"live_state_data_id": "flag", "data": None, "updated_at": NOW}]),
    (DocUser, (), [{
        "user_id": "u1", "name": "Ana", "email": "ana@example.com", "documents_count": 2,
        "documents": [["d1", "editor"], ["d2", "viewer"]]
    }, {"user_id": "u2", "name": None, "email": None, "documents_count": 1, "documents": [["d3", "viewer"]]}]),
    (Group, (), [{"id": "g1", "name": "Eng", "members": 3, "created_at": NOW},
                 {"id": "g2", "name": None, "members": 0, "created_at": NOW}]),
    (Agent, (), [AGENT, AGENT | {"metadata": None, "config": BARE_AGENT_CONFIG}]),
    (AgentSummary, (), [AGENT, AGENT | {"enabled": False, "execution_count": 0, "last_executed_at": None}]),
    (AgentVersion, (), [{"version": 2, "config": AGENT_CONFIG, "created_at": NOW},
                        {"version": 1, "config": BARE_AGENT_CONFIG, "created_at": NOW}]),
    (AgentGroup, (), [AGENT_GROUP, AGENT_GROUP | {"description": None, "agent_ids": []}]),
    (AgentGroupSummary, (), [AGENT_GROUP, AGENT_GROUP | {"description": None, "agent_count": 0}]),
    (Execution, (), [
        EXECUTION, EXECUTION | {
            "status": "running", "completed_at": None, "error": None, "workflow_execution_id": None,
            "previous_execution_id": None, "ran_by": None, "llm_model": None, "prompt_tokens": 0, "completion_tokens": 0
        }
    ]),
    (Invitation, (), [
        INVITATION, INVITATION | {
            "type": "org_user", "document_id": None, "organization_name": None, "document_name": None,
            "invited_by": None, "user_id": None, "status": "PENDING"
        }
    ]),
    (Alert, (),
     [ALERT, ALERT | {"status": "dismissed", "dismissed_at": NOW + 1, "dismissed_by": "", "dedup_key": None}])
]
# Keyword arguments some wire functions take, served in every combination listed.
KEYWORDS: dict[type[Doc], list[dict[str, Any]]] = {
    CrdtEditor: [{"yjs": False}, {"yjs": True}], DocUser: [{"involved": False}, {"involved": True}]
}


def _calls() -> list[tuple[str, type[Doc], Callable[[], dict[str, Any]]]]:
    calls = []
    for model, args, rows in CASES:
        for i, row in enumerate(rows):
            for kwargs in KEYWORDS.get(model, [{}]):
                label = f"{model.__name__}-{i}" + "".join(f"-{k}={v}" for k, v in kwargs.items())
                calls.append((label, model, lambda m=model, r=row, a=args, k=kwargs: m.wire(r, *a, **k)))
    return calls


@pytest.mark.parametrize("model, wire", [(m, w) for _, m, w in _calls()], ids=[label for label, _, _ in _calls()])
def test_each_wire_function_builds_what_its_model_documents(model, wire):
    sent = orjson.loads(orjson.dumps(wire()))  # what a client receives
    parsed = model.model_validate_json(orjson.dumps(sent), strict=True)  # closed models: no unnamed key passes
    # Nothing was coerced or dropped on the way: the model reads back exactly what was sent.
    assert parsed.model_dump(mode="json", exclude_unset=True, by_alias=True) == sent


def _documented_models() -> set[type[Doc]]:
    """Every response model of the product that serialises its record (has a `wire`)."""
    for info in pkgutil.walk_packages(collab.__path__, "collab."):
        if info.name.endswith(".schemas"):
            importlib.import_module(info.name)
    found, todo = set(), [Doc]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if "wire" in vars(sub) and sub.__module__.startswith("collab."):
                found.add(sub)
    return found


def test_every_wire_function_is_checked_here():
    assert _documented_models() == {model for model, _, _ in CASES}


def test_no_service_keeps_a_wire_function_of_its_own():
    # A record's shape lives beside its model (`Model.wire` in schemas.py), not in a `to_wire` elsewhere.
    defined = [
        f"{path.relative_to(SRC)}:{node.lineno}" for path in sorted(SRC.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "to_wire"
    ]
    assert not defined
