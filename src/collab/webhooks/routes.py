"""HTTP routes of advanced webhooks: endpoints (Svix-shaped) and messages."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Empty, Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services
from collab.webhooks import basic, messages, service
from collab.webhooks.schemas import (
    CreateEndpoint,
    EndpointRef,
    ListEndpoints,
    ListMessages,
    RetryMessage,
    UpdateEndpoint,
    WebhookEndpoint,
    WebhookEndpointDeleted,
    WebhookEndpointPage,
    WebhookEndpointSecret,
    WebhookMessagePage,
    WebhookRetryQueued,
)
from collab.workspaces import basic_webhooks
from collab.workspaces.schemas import BasicWebhookConfig, BasicWebhookConfigUpdate

router = APIRouter(tags=["webhooks"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
BASE = "/workspace/advancedwebhook"


@router.post(f"{BASE}/endpoints/create", summary="Create a webhook endpoint [API-key auth]",
             responses=answer(WebhookEndpoint))
async def create(body: Envelope[CreateEndpoint], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.create(svc, tenant=tenant, data=body.data), "Webhook endpoint created successfully.")


@router.post(f"{BASE}/endpoints/get", summary="List webhook endpoints [API-key auth]",
             responses=answer(WebhookEndpointPage))
async def get(body: Envelope[ListEndpoints], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.list_endpoints(svc, tenant=tenant, data=body.data),
              "Webhook endpoints retrieved successfully.")


@router.post(f"{BASE}/endpoints/update", summary="Update a webhook endpoint [API-key auth]",
             responses=answer(WebhookEndpoint))
async def update(body: Envelope[UpdateEndpoint], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Webhook endpoint updated successfully.")


@router.post(f"{BASE}/endpoints/delete", summary="Delete a webhook endpoint [API-key auth]",
             responses=answer(WebhookEndpointDeleted))
async def delete(body: Envelope[EndpointRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Webhook endpoint deleted successfully.")


@router.post(f"{BASE}/endpoints/secret/get", summary="Get a webhook endpoint's signing secret [API-key auth]",
             responses=answer(WebhookEndpointSecret))
async def get_secret(body: Envelope[EndpointRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.get_secret(svc, tenant=tenant, data=body.data),
              "Webhook endpoint secret retrieved successfully.")


@router.post(f"{BASE}/endpoints/secret/rotate", summary="Rotate a webhook endpoint's signing secret [API-key auth]",
             responses=answer(WebhookEndpointSecret))
async def rotate_secret(body: Envelope[EndpointRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.rotate_secret(svc, tenant=tenant, data=body.data),
              "Webhook endpoint secret rotated successfully.")


@router.post(f"{BASE}/messages/get", summary="List webhook messages and their attempts [API-key auth]",
             responses=answer(WebhookMessagePage))
async def get_messages(body: Envelope[ListMessages], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await messages.list_messages(svc, tenant=tenant, data=body.data),
              "Webhook messages retrieved successfully.")


@router.post(f"{BASE}/messages/retry", summary="Redeliver a webhook message to an endpoint [API-key auth]",
             responses=answer(WebhookRetryQueued))
async def retry(body: Envelope[RetryMessage], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await messages.retry(svc, tenant=tenant, data=body.data), "Webhook message queued for redelivery.")


@router.post("/workspace/webhookconfig/update", summary="Update the basic webhook service [API-key auth]",
             responses=answer(BasicWebhookConfig))
async def update_basic_webhooks(body: Envelope[BasicWebhookConfigUpdate], tenant: Tenant = Auth, svc: Services = Svc):
    result = await basic.update_config(svc, tenant=tenant, data=body.data)
    return ok(result, "Webhook configuration updated successfully.")


@router.post("/workspace/webhookconfig/get", summary="Get the basic webhook service [API-key auth]",
             responses=answer(BasicWebhookConfig))
async def get_basic_webhooks(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await basic_webhooks.get(svc, tenant=tenant), "Webhook configuration retrieved successfully.")
