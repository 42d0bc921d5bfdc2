"""The activity log: add (idempotent by id), update, list and delete; judgments follow in the worker."""

import time
from typing import Any, Iterable

from collab.activities import repository as repo
from collab.activities.schemas import Activity, AddActivities, DeleteActivities, GetActivities, UpdateActivities
from collab.events import JUDGED_EVENTS
from collab.kit import jobs, paging
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError, invalid, issue
from collab.kit.jobs import Tx, transaction
from collab.kit.services import Services
from collab.notifications import engine as notification_engine
from collab.webhooks import events as webhook_events
from collab.workspaces import repository as workspaces_repo

FUTURE_SKEW_MS = 5 * 60 * 1000
# Keys whose last add needed the transaction path (the notification service on, or an event with an endpoint):
# for a while their adds go straight there, rather than first pay a statement that writes nothing. A stale entry
# only costs a round trip either way; both paths give the same answer. Per process, bounded.
FOLLOWS_S, _MAX_FOLLOWS = 30.0, 10_000
_follows: dict[str, float] = {}


def row(activity: Any, *, id: str, organization_id: str, document_id: str | None, now: int) -> dict[str, Any]:
    """The stored row of one wire activity (stamped `now` when it carries no timestamp)."""
    return dict(id=id, organization_id=organization_id, document_id=document_id, feature_type=activity.featureType,
                action_type=activity.actionType, action_user=activity.actionUser.model_dump(exclude_none=True),
                target_entity_id=activity.targetEntityId, target_sub_entity_id=activity.targetSubEntityId,
                changes=activity.changes, entity_data=activity.entityData, entity_target_data=activity.entityTargetData,
                display_message_template=activity.displayMessageTemplate,
                display_message_template_data=activity.displayMessageTemplateData, action_icon=activity.actionIcon,
                is_activity_resolver_used=activity.isActivityResolverUsed,
                timestamp=activity.timestamp if activity.timestamp is not None else now)


async def add(svc: Services, *, tenant: Tenant, data: AddActivities) -> dict[str, Any]:
    """Log activities (an id overwrites); event types switched off in the triggers are not logged."""
    now = svc.now_ms()
    future = [
        i for i, a in enumerate(data.activities) if a.timestamp is not None and a.timestamp > now + FUTURE_SKEW_MS
    ]
    if future:
        message = "timestamp must not be in the future"
        raise invalid(message, [issue(["activities", i, "timestamp"], message, "too_big") for i in future])
    records = [
        row(a, id=a.id or new_id("act_"), organization_id=data.organizationId, document_id=data.documentId, now=now)
        for a in data.activities
    ]
    fresh = frozenset(r["id"] for a, r in zip(data.activities, records) if not a.id)
    logged = await _add_at_once(svc, api_key_id=tenant.api_key_id, records=records, fresh_ids=fresh)
    if logged is None:
        logged = await _add_in_transaction(svc, tenant=tenant, data=data, records=records, fresh_ids=fresh)
    skipped = len(data.activities) - logged
    message = f"{logged} activit{'y' if logged == 1 else 'ies'} added."
    if skipped:
        message += f" {skipped} not logged: their trigger is off."
    return {"success": True, "message": message}


def _not_enabled() -> ApiError:
    return ApiError("FAILED_PRECONDITION",
                    "The activity service is not enabled: enable it with workspace/activityconfig/update.")


def to_derive(records: list[dict[str, Any]], fresh_ids: frozenset[str] = frozenset()) -> list[str]:
    """The ids whose judgments the worker derives: every record that may be a judgment (`JUDGED_EVENTS`), and every
    one that may overwrite an earlier activity (an id the caller chose), whose judgment may have to go. An id made
    just now (`fresh_ids`) names nothing earlier: such a record of another type needs no job at all."""
    return [r["id"] for r in records if r["action_type"] in JUDGED_EVENTS or r["id"] not in fresh_ids]


async def _add_at_once(svc: Services, *, api_key_id: str, records: list[dict[str, Any]],
                       fresh_ids: frozenset[str]) -> int | None:
    """The usual add in one statement (a round trip instead of five); how many were logged, or None when the write
    needs the transaction path: an id repeated, the notification service on, a webhook event with an endpoint."""
    if len({r["id"] for r in records}) < len(records) or _follows.get(api_key_id, 0.0) > time.monotonic():
        return None
    events = any(webhook_events.emits(Activity.wire(r)) for r in records)
    job_id = new_id("job_")
    async with svc.pool.connection() as conn:
        done = await repo.add_at_once(conn, api_key_id=api_key_id, records=records, events=events, job_id=job_id,
                                      derive_ids=to_derive(records, fresh_ids))
        if not done["enabled"]:
            raise _not_enabled()
        if done["follows"]:  # nothing was written
            if len(_follows) >= _MAX_FOLLOWS:
                _follows.clear()
            _follows[api_key_id] = time.monotonic() + FOLLOWS_S
            return None
        if done["queued"]:
            await jobs.committed(conn, svc.redis, [("derive_judgments", job_id)])
    return done["logged"]


async def _add_in_transaction(svc: Services, *, tenant: Tenant, data: AddActivities, records: list[dict[str, Any]],
                              fresh_ids: frozenset[str]) -> int:
    """The add with notifications and webhook events, in order, in one transaction; how many were logged."""
    async with transaction(svc.pool, svc.redis) as tx:
        # Read in the write's transaction: one connection and round trip serve the check and the notifications.
        settings = await workspaces_repo.api_key_config(tx.conn, api_key_id=tenant.api_key_id)
        config = settings["activity_config"] or {}
        if not config.get("isEnabled"):
            raise _not_enabled()
        triggers = (config.get("triggers") or {}).get("comment") or {}
        records = [r for r in records if triggers.get(r["action_type"]) is not False]  # off in the triggers: skipped
        await publish(tx, svc, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                      document_id=data.documentId, records=records, store=True,
                      notification_config=settings["notification_config"],
                      webhooks=webhook_events.enabled(settings["webhook_config"]), fresh_ids=fresh_ids)
    return len(records)


async def publish(tx: Tx, svc: Services, *, api_key_id: str, organization_id: str, document_id: str,
                  records: list[dict[str, Any]], store: bool, notification_config: dict[str, Any] | None,
                  webhooks: bool, notify: bool = True, participants: Iterable[str] = (), exclude: Iterable[str] = (),
                  fresh_ids: frozenset[str] = frozenset(), restricted_to: Iterable[str] | None = None) -> None:
    """The one path of activity records (activities/add and every comment write): stored when `store` (judgments
    follow in the worker, see `to_derive`), then, for records new to the log, webhook events (when the key's
    `webhooks` are on) and notifications (when `notify`, by the key's stored `notification_config`; `participants`
    join the document's audience, `exclude` leave it; `restricted_to`, a private thread's readers, is who they may
    reach, else the records' own visibility says)."""
    new = records
    if store and records:
        # An overwrite (a retry with the same id) does not emit or notify again.
        inserted = await repo.upsert_many(tx.conn, api_key_id=api_key_id, records=records)
        new = [record for record, fresh in zip(records, inserted) if fresh]
    if new:
        now = svc.now_ms()
        if webhooks:  # off: no endpoint takes an event, and asking would cost a round trip per event
            await webhook_events.on_activities(tx, now=now, api_key_id=api_key_id, organization_id=organization_id,
                                               document_id=document_id, activities=[Activity.wire(r) for r in new])
        if notify:
            await notification_engine.on_activities(tx.conn, svc=svc, api_key_id=api_key_id,
                                                    organization_id=organization_id, document_id=document_id,
                                                    stored=notification_config, activities=new,
                                                    participants=participants, exclude=exclude,
                                                    restricted_to=restricted_to)
    derive = to_derive(records, fresh_ids) if store else []
    if derive:
        await tx.enqueue("derive_judgments", api_key_id=api_key_id, activity_ids=derive)


_FIELDS = {
    "changes": "changes", "entityData": "entity_data", "entityTargetData": "entity_target_data",
    "displayMessageTemplate": "display_message_template", "displayMessageTemplateData": "display_message_template_data",
    "actionIcon": "action_icon"
}


async def update(svc: Services, *, tenant: Tenant, data: UpdateActivities) -> dict[str, Any]:
    """Change fields of existing activities; results keyed by activity id."""
    results: dict[str, Any] = {}
    changed: list[str] = []
    async with transaction(svc.pool, svc.redis) as tx:
        for entry in data.activities:
            sent = entry.model_dump(exclude_unset=True)
            fields = {_FIELDS[k]: v for k, v in sent.items() if k in _FIELDS}
            found = await repo.update(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                      id=entry.id, fields=fields)
            results[entry.id] = {
                "success": found, "message": "Activity updated." if found else "Failed to update activity."
            }
            if found:
                changed.append(entry.id)
        if changed:
            await tx.enqueue("derive_judgments", api_key_id=tenant.api_key_id, activity_ids=changed)
    return results


async def list_activities(svc: Services, *, tenant: Tenant,
                          data: GetActivities) -> tuple[list[dict[str, Any]], str | None]:
    """A page of activities, newest first by default, at most `pageSize` records and about
    `max_response_bytes` of JSON (at least one record), and the token of the next page."""
    # The token is bound to the filters and order: used with others it would skip or repeat rows.
    filters = data.model_dump(exclude={"pageSize", "pageToken"})
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "activities", filters)
    after_ts, after_id = pager.after(data.pageToken, 2)
    budget = svc.settings.max_response_bytes
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    document_id=data.documentId, target_entity_id=data.targetEntityId,
                                    feature_types=data.featureTypes, action_types=data.actionTypes, user_id=data.userId,
                                    activity_ids=data.activityIds, after_ts=after_ts, after_id=after_id,
                                    desc=data.order == "desc", limit=data.pageSize + 1, budget=budget)
    return pager.cut(rows, data.pageSize, "timestamp", "id", render=lambda r: Activity.listed(r, tenant.api_key_id),
                     budget=budget)


async def delete(svc: Services, *, tenant: Tenant, data: DeleteActivities) -> dict[str, Any]:
    """Remove activities; the judgments derived from them go too."""
    async with transaction(svc.pool, svc.redis) as tx:
        deleted = await repo.delete(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    document_id=data.documentId, activity_ids=data.activityIds,
                                    target_entity_id=data.targetEntityId)
    return {"success": True, "message": f"{len(deleted)} activities deleted.", "deletedIds": deleted}
