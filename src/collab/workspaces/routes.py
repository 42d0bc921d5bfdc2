"""HTTP routes of the workspace domain: unwrap data, call one service function, wrap result."""

from fastapi import APIRouter, Depends, Request

from collab.kit.auth import Tenant, WorkspaceCaller, api_key_auth, workspace_auth
from collab.kit.envelope import Empty, Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services
from collab.workspaces import config, domains, service
from collab.workspaces.schemas import (
    ActivityConfig,
    ActivityConfigUpdate,
    AdvancedWebhookConfig,
    AllowedDomains,
    ApiKeyConfig,
    ApiKeyConfigUpdate,
    ApiKeyCopied,
    ApiKeyEntry,
    ApiKeyRef,
    AuthTokenReset,
    AuthTokens,
    CopyApiKey,
    CreateApiKey,
    CreateWorkspace,
    DomainList,
    DomainsAdded,
    DomainsRemoved,
    FullNotificationConfig,
    NewApiKey,
    NotificationConfig,
    NotificationConfigUpdate,
    UpdateApiKey,
    WebhookConfigUpdate,
    Workspace,
    WorkspaceAuthToken,
)

router = APIRouter(tags=["workspace"], route_class=StrictJsonRoute)
Ws, Key, Svc = Depends(workspace_auth), Depends(api_key_auth), Depends(services)


@router.post("/workspace/create", summary="Create a workspace [Public]", responses=answer(Workspace))
async def create_workspace(body: Envelope[CreateWorkspace], request: Request, svc: Services = Depends(services)):
    client_ip = request.client.host if request.client else "unknown"
    workspace = await service.create_workspace(svc, data=body.data, client_ip=client_ip)
    return ok(workspace, "Workspace created successfully.")


@router.post("/workspace/get", summary="Get the workspace [Workspace auth]", responses=answer(Workspace))
async def get_workspace(body: Envelope[Empty], caller: WorkspaceCaller = Depends(workspace_auth),
                        svc: Services = Depends(services)):
    return ok(await service.get_workspace(svc, caller=caller), "Workspace retrieved successfully.")


@router.post("/workspace/authtoken/reset", summary="Reset an API key's auth token [Workspace auth]",
             responses=answer(AuthTokenReset))
async def reset_auth_token(body: Envelope[ApiKeyRef], caller: WorkspaceCaller = Depends(workspace_auth),
                           svc: Services = Depends(services)):
    result = await service.reset_auth_token(svc, caller=caller, api_key_id=body.data.apiKey)
    return ok(result, "Auth token reset successfully.")


@router.post("/workspace/authtokens/get", summary="List an API key's auth tokens [Workspace auth]",
             responses=answer(AuthTokens))
async def list_auth_tokens(body: Envelope[ApiKeyRef], caller: WorkspaceCaller = Depends(workspace_auth),
                           svc: Services = Depends(services)):
    result = await service.list_auth_tokens(svc, caller=caller, api_key_id=body.data.apiKey)
    return ok(result, "Auth tokens retrieved successfully.")


@router.post("/workspace/apikey/create", summary="Create an API key [Workspace auth]", responses=answer(NewApiKey))
async def create_api_key(body: Envelope[CreateApiKey], caller: WorkspaceCaller = Depends(workspace_auth),
                         svc: Services = Depends(services)):
    result = await service.create_api_key(svc, caller=caller, data=body.data)
    return ok(result, "API key created successfully.")


@router.post("/workspace/apikeys/get", summary="List the workspace's API keys [Workspace auth]",
             responses=answer(list[ApiKeyEntry]))
async def list_api_keys(body: Envelope[Empty], caller: WorkspaceCaller = Depends(workspace_auth),
                        svc: Services = Depends(services)):
    return ok(await service.list_api_keys(svc, caller=caller), "API keys retrieved successfully.")


@router.post("/workspace/apikeyconfig/update", summary="Update the API key's console settings [API-key auth]",
             responses=answer(ApiKeyConfig))
async def update_api_key_config(body: Envelope[ApiKeyConfigUpdate], tenant: Tenant = Depends(api_key_auth),
                                svc: Services = Depends(services)):
    result = await config.update_api_key_config(svc, tenant=tenant, data=body.data)
    return ok(result, "API key config updated successfully.")


@router.post("/workspace/apikeyconfig/get", summary="Get the API key's console settings [API-key auth]",
             responses=answer(ApiKeyConfig))
async def get_api_key_config(body: Envelope[Empty], tenant: Tenant = Depends(api_key_auth),
                             svc: Services = Depends(services)):
    return ok(await config.get_api_key_config(svc, tenant=tenant), "API key config retrieved successfully.")


@router.post("/workspace/advancedwebhookconfig/update", summary="Update advanced webhook config [API-key auth]",
             responses=answer(AdvancedWebhookConfig))
async def update_webhook_config(body: Envelope[WebhookConfigUpdate], tenant: Tenant = Depends(api_key_auth),
                                svc: Services = Depends(services)):
    result = await config.update_webhook_config(svc, tenant=tenant, data=body.data)
    return ok(result, "Advanced webhook config updated successfully.")


@router.post("/workspace/advancedwebhookconfig/get", summary="Get advanced webhook config [API-key auth]",
             responses=answer(AdvancedWebhookConfig))
async def get_webhook_config(body: Envelope[Empty], tenant: Tenant = Depends(api_key_auth),
                             svc: Services = Depends(services)):
    return ok(await config.get_webhook_config(svc, tenant=tenant), "Advanced webhook config retrieved successfully.")


@router.post("/workspace/activityconfig/update", summary="Update activity service config [API-key auth]",
             responses=answer(ActivityConfig))
async def update_activity_config(body: Envelope[ActivityConfigUpdate], tenant: Tenant = Depends(api_key_auth),
                                 svc: Services = Depends(services)):
    result = await config.update_activity_config(svc, tenant=tenant, data=body.data)
    return ok(result, "Activity config updated successfully.")


@router.post("/workspace/activityconfig/get", summary="Get activity service config [API-key auth]",
             responses=answer(ActivityConfig))
async def get_activity_config(body: Envelope[Empty], tenant: Tenant = Depends(api_key_auth),
                              svc: Services = Depends(services)):
    return ok(await config.get_activity_config(svc, tenant=tenant), "Activity config retrieved successfully.")


@router.post("/workspace/notificationconfig/update", summary="Update notification config [API-key auth]",
             responses=answer(NotificationConfig))
async def update_notification_config(body: Envelope[NotificationConfigUpdate], tenant: Tenant = Depends(api_key_auth),
                                     svc: Services = Depends(services)):
    result = await config.update_notification_config(svc, tenant=tenant, data=body.data)
    return ok(result, "Notification config updated successfully.")


@router.post("/workspace/notificationconfig/get", summary="Get notification config [API-key auth]",
             responses=answer(FullNotificationConfig))
async def get_notification_config(body: Envelope[Empty], tenant: Tenant = Depends(api_key_auth),
                                  svc: Services = Depends(services)):
    return ok(await config.get_notification_config(svc, tenant=tenant), "Notification config retrieved successfully.")


@router.post("/workspace/apikey/update", summary="Rename an API key [Workspace auth]", responses=answer(None))
async def update_api_key(body: Envelope[UpdateApiKey], caller: WorkspaceCaller = Ws, svc: Services = Svc):
    await service.update_api_key(svc, caller=caller, data=body.data)
    return ok(None, "API key updated successfully.")


@router.post("/workspace/apikey/copy", summary="Copy an API key's settings onto another [Workspace auth]",
             responses=answer(ApiKeyCopied))
async def copy_api_key(body: Envelope[CopyApiKey], caller: WorkspaceCaller = Ws, svc: Services = Svc):
    result = await service.copy_api_key(svc, caller=caller, data=body.data)
    return ok(result, "API key configuration copied successfully.")


@router.post("/workspace/authtoken/ensure", summary="The workspace's auth token [Workspace auth]",
             responses=answer(WorkspaceAuthToken))
async def ensure_auth_token(body: Envelope[Empty], caller: WorkspaceCaller = Ws, svc: Services = Svc):
    result = await service.ensure_workspace_token(svc, caller=caller)
    return ok(result, "Workspace auth token ensured successfully.")


@router.post("/workspace/domains/add", summary="Allow domains for the API key [API-key auth]",
             responses=answer(DomainsAdded))
async def add_domains(body: Envelope[DomainList], tenant: Tenant = Key, svc: Services = Svc):
    result = await domains.add(svc, tenant=tenant, domains=body.data.domains)
    skipped = " Skipped existing domains." if "skippedDomains" in result else ""
    return ok(result, "Domain(s) added successfully to allowed domains." + skipped)


@router.post("/workspace/domains/delete", summary="Remove allowed domains of the API key [API-key auth]",
             responses=answer(DomainsRemoved))
async def delete_domains(body: Envelope[DomainList], tenant: Tenant = Key, svc: Services = Svc):
    result = await domains.delete(svc, tenant=tenant, domains=body.data.domains)
    skipped = " Skipped non-existing domains." if "skippedDomains" in result else ""
    return ok(result, "Domain(s) removed successfully from allowed domains." + skipped)


@router.post("/workspace/domains/get", summary="The API key's allowed domains [API-key auth]",
             responses=answer(AllowedDomains))
async def get_domains(body: Envelope[Empty], tenant: Tenant = Key, svc: Services = Svc):
    return ok(await domains.get(svc, tenant=tenant), "Allowed domains retrieved successfully.")
