"""HTTP routes of permissions and user tokens."""

from fastapi import APIRouter, Depends, Request

from collab.kit.auth import Tenant, api_key_auth, api_key_auth_or_none, authenticate
from collab.kit.envelope import Empty, Envelope, StrictJsonRoute, ok
from collab.kit.openapi import ACKNOWLEDGED, answer
from collab.kit.services import Services, services
from collab.permissions import provider_settings, service, types
from collab.permissions.schemas import (
    AccessOutcome,
    AddPermissions,
    GenerateSignature,
    GenerateToken,
    GetPermissions,
    GetToken,
    PermissionsRemoved,
    ProviderConfig,
    RemovePermissions,
    Signature,
    TokenKeys,
    UpdateDocumentAccess,
    UpdateDocumentDisabled,
    UpdateFolderAccess,
    UpdateProviderConfig,
    UserAccess,
    UserToken,
)

router = APIRouter(tags=["permissions"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/auth/permissions/add", summary="Grant roles on resources to a user or a group [API-key auth]",
             responses=ACKNOWLEDGED)
async def add(body: Envelope[AddPermissions], tenant: Tenant = Auth, svc: Services = Svc):
    await service.add(svc, tenant=tenant, data=body.data)
    return ok(None, "Permissions added successfully.")


@router.post("/auth/permissions/get", summary="Effective access of users [API-key auth]",
             responses=answer(dict[str, UserAccess]))
async def get(body: Envelope[GetPermissions], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.get(svc, tenant=tenant, data=body.data), "Permissions retrieved successfully.")


@router.post("/auth/permissions/remove", summary="Revoke roles on resources [API-key auth]",
             responses=answer(PermissionsRemoved))
async def remove(body: Envelope[RemovePermissions], tenant: Tenant = Auth, svc: Services = Svc):
    removed = await service.remove(svc, tenant=tenant, data=body.data)
    return ok({"removed": removed}, "Permissions removed successfully.")


@router.post("/auth/generate_token", summary="Issue a signed user token [API-key auth]", responses=answer(UserToken))
async def generate_token(body: Envelope[GenerateToken], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.generate_token(svc, tenant=tenant, data=body.data), "Token generated successfully.")


@router.post(
    "/auth/token/get",
    summary="Issue a signed user token: generate_token under Velt's older name, the credentials in the headers "
    "or (Velt's v1) as `apiKey` and `authToken` in the body [API-key auth]", responses=answer(UserToken))
async def get_token(request: Request, body: Envelope[GetToken], tenant: Tenant | None = Depends(api_key_auth_or_none),
                    svc: Services = Svc):
    data = body.data
    if tenant is None:  # no credential header: (v1) the pair in the body
        tenant = await authenticate(request, svc, api_key=data.apiKey, token=data.authToken)
    return ok(await service.generate_token(svc, tenant=tenant, data=data), "Token generated successfully.")


@router.post("/auth/tokenkeys/get",
             summary="The public keys (JWKS) that verify this API key's user tokens [API-key auth]",
             responses=answer(TokenKeys))
async def get_token_keys(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(service.token_keys(svc, tenant=tenant), "Token keys retrieved successfully.")


@router.post("/auth/tokenkeys/rotate",
             summary="Sign user tokens with a new key; the previous one still verifies [API-key auth]",
             responses=answer(TokenKeys))
async def rotate_token_keys(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.rotate_token_keys(svc, tenant=tenant), "Token keys rotated successfully.")


@router.post("/organizations/documents/access/update",
             summary="Set documents' access type: public, organizationPrivate or restricted [API-key auth]",
             responses=answer(dict[str, AccessOutcome]))
async def update_document_access(body: Envelope[UpdateDocumentAccess], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await types.update_documents(svc, tenant=tenant, data=body.data),
              "Updated access for documents successfully.")


@router.post("/organizations/folders/access/update",
             summary="Set folders' access type, or let them inherit their parent's [API-key auth]",
             responses=answer(dict[str, AccessOutcome]))
async def update_folder_access(body: Envelope[UpdateFolderAccess], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await types.update_folders(svc, tenant=tenant, data=body.data),
              "Updated access for folders successfully.")


@router.post("/organizations/documents/access/disablestate/update",
             summary="Disable or restore access to documents on their own [API-key auth]",
             responses=answer(dict[str, AccessOutcome]))
async def update_document_disabled(body: Envelope[UpdateDocumentDisabled], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await types.update_disabled(svc, tenant=tenant, data=body.data),
              "Updated disable state for documents successfully.")


@router.post("/workspace/permissionproviderconfig/get",
             summary="The permission provider that decides access in place of grants [API-key auth]",
             responses=answer(ProviderConfig))
async def get_provider_config(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await provider_settings.get(svc, tenant=tenant),
              "Permission provider configuration retrieved successfully.")


@router.post("/workspace/permissionproviderconfig/update",
             summary="Turn the permission provider on or off, set its URL and auth token [API-key auth]",
             responses=answer(ProviderConfig))
async def update_provider_config(body: Envelope[UpdateProviderConfig], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await provider_settings.update(svc, tenant=tenant, data=body.data),
              "Permission provider configuration updated successfully.")


@router.post("/auth/generate_signature", summary="Sign a permission provider's decisions [API-key auth]",
             responses=answer(Signature))
async def generate_signature(body: Envelope[GenerateSignature], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(provider_settings.generate_signature(svc, tenant=tenant, data=body.data),
              "Signature generated successfully.")
