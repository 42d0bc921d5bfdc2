"""Which activities become judgments, and with which fields (pure mapping)."""

import pytest

from collab.judgments.derive import decision, derive, render


def row(action_type, **fields):
    base = {
        "action_type": action_type, "organization_id": "o", "document_id": "d", "target_entity_id": "ann",
        "action_user": {"userId": "u1", "name": "Ana"}, "timestamp": 1000, "changes": None, "entity_data": None,
        "entity_target_data": None, "display_message_template": None, "display_message_template_data": None
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    "action_type, fields, decision",
    [("comment.add", {}, "comment"), ("comment_annotation.add", {}, "comment"),
     ("comment_annotation.status_change", {"changes": {"status": {"from": "open", "to": "resolved"}}}, "resolve"),
     ("comment_annotation.status_change", {"changes": {"status": {"to": "in_progress"}}}, "in_progress"),
     ("comment_annotation.status_change", {"changes": {"status": {"to": "open"}}}, None),
     ("comment_annotation.approve", {}, "approved"), ("comment_annotation.accept", {}, "approved"),
     ("comment.accept", {}, "approved"), ("comment_annotation.suggestion_accept", {}, "approved"),
     ("comment_annotation.reject", {}, "rejected"), ("comment.reject", {}, "rejected"),
     ("comment_annotation.suggestion_reject", {}, "rejected"),
     ("comment.reaction_add", {"entity_data": {"reaction": "agree"}}, "agree"),
     ("comment.reaction_add", {"entity_data": {"reaction": "+1"}}, "agree"),
     ("comment.reaction_add", {"entity_data": {"reaction": "👍"}}, "agree"),
     ("comment.reaction_add", {"entity_data": {"reaction": "disagree"}}, "disagree"),
     ("comment.reaction_add", {"entity_data": {"reaction": "-1"}}, "disagree"),
     ("comment.reaction_add", {"entity_data": {"reaction": "👎"}}, "disagree"),
     ("comment.reaction_add", {"entity_data": {"reaction": "🎉"}}, "endorse"),
     ("document.approve", {}, "document_approved"), ("document.reject", {}, "document_rejected"),
     ("comment.update", {}, None), ("comment_annotation.assign", {}, None), ("huddle.create", {}, None)])
def test_decision_mapping(action_type, fields, decision):
    judgment = derive(row(action_type, **fields))
    assert (judgment or {}).get("decision") == decision


def test_fields_from_entity_data_and_target():
    agent = {"agentId": "ag1", "agentType": "qa", "executionId": "ex1", "agentFields": {"k": 1}}
    judgment = derive(
        row(
            "comment_annotation.reject", entity_data={
                "reasoning": "Claim lacks a source", "commentText": "ignored", "confidence": 0.7, "agent": agent
            }, entity_target_data={"content": "Best price in town", "text": "ignored", "contentType": "marketing"}))
    assert judgment["reasoning"] == "Claim lacks a source"
    assert judgment["content"] == "Best price in town" and judgment["content_type"] == "marketing"
    assert judgment["confidence"] == 0.7 and judgment["agent"] == agent and judgment["judge_type"] == "agent"
    assert judgment["reviewer_id"] == "u1" and judgment["annotation_id"] == "ann" and judgment["created_at"] == 1000


def test_reasoning_falls_back_to_comment_then_display_message():
    assert derive(row("comment.add", entity_data={"commentText": "Nice"}))["reasoning"] == "Nice"
    judgment = derive(
        row("comment_annotation.approve", display_message_template="{{actionUser.name}} approved {{doc}}",
            display_message_template_data={"doc": "Q3 plan"}, entity_target_data={"text": "Body"}))
    assert judgment["reasoning"] == "Ana approved Q3 plan"
    assert judgment["content"] == "Body" and judgment["confidence"] == 1.0 and judgment["judge_type"] == "human"
    assert derive(row("document.approve"))["reasoning"] == "document_approved"


def test_render_missing_variables_are_empty():
    assert render("{{a}} and {{b.c}}", {"a": 1}, {}) == "1 and"


def test_an_empty_agent_object_is_a_human_decision():
    judgment = derive(row("comment_annotation.approve", entity_data={"agent": {}}))
    assert judgment["judge_type"] == "human" and judgment["agent"] is None


@pytest.mark.parametrize("confidence, stored", [(0.25, 0.25), (10**400, 1.0), (True, 1.0), ("0.5", 1.0), (None, 1.0)])
def test_confidence_that_is_not_a_finite_number_defaults_to_one(confidence, stored):
    assert derive(row("comment_annotation.approve", entity_data={"confidence": confidence}))["confidence"] == stored


def test_the_judged_event_types_are_exactly_those_that_can_become_a_judgment():
    from typing import get_args

    from collab.events import COMMENT_EVENTS, HUDDLE_EVENTS, JUDGED_EVENTS, OtherEvent

    every = {*COMMENT_EVENTS, *HUDDLE_EVENTS, *get_args(OtherEvent), "document.viewed", "build.finished"}
    changes = [None, {"status": {"to": "resolved"}}, {"status": {"to": "in_progress"}}]
    can = {t for t in every if any(decision(t, c, {"reaction": "👍"}) for c in changes)}
    assert can == set(JUDGED_EVENTS)  # activities/add queues the worker only for these (or for an overwrite)
