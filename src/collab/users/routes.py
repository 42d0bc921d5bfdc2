"""HTTP routes of users, organization user groups, user-data deletion and export."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok, raw
from collab.kit.openapi import BY_ID, answer, page, plain
from collab.kit.services import Services, services
from collab.users import deletion, export, groups, invitations, service
from collab.users.schemas import (
    AddGroups,
    AddInvite,
    AddUsers,
    CountUsers,
    DeleteGroupUsers,
    DeleteUserData,
    DeleteUsers,
    DeletionStatus,
    DocUser,
    DocUsers,
    GetGroups,
    GetInvitations,
    GetInvites,
    GetUsers,
    Group,
    GroupMembership,
    GroupUsers,
    Invitation,
    PendingInvites,
    RespondInvite,
    UpdateUsers,
    UserCount,
    UserDataDeleteStatus,
    UserDataDeletion,
    UserDataGet,
    UserDataPage,
    UserRemoved,
    UsersPage,
)

router = APIRouter(tags=["users"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
MEMBERSHIP = answer(dict[str, GroupMembership])


@router.post("/users/add", summary="Give users access to an organization, folder or document [API-key auth]",
             responses=BY_ID)
async def add(body: Envelope[AddUsers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.add(svc, tenant=tenant, data=body.data), "Users processed.")


@router.post("/users/update", summary="Update users' names, e-mails and roles [API-key auth]", responses=BY_ID)
async def update(body: Envelope[UpdateUsers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Users processed.")


@router.post("/users/get", summary="List users with access (advanced queries) [API-key auth]",
             responses=plain(UsersPage))
async def get(body: Envelope[GetUsers], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    # Both names of the next-page token appear in the spec; clients read either.
    return listed(records, token, "Users retrieved successfully.", nextPageToken=token)


@router.post("/users/delete", summary="Remove users from an organization, folder or document [API-key auth]",
             responses=answer(dict[str, UserRemoved]))
async def delete(body: Envelope[DeleteUsers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Users processed.")


@router.post("/users/data/delete", summary="Delete all data of users, asynchronously [API-key auth]", status_code=202,
             responses=plain(UserDataDeletion, 202))
async def delete_data(body: Envelope[DeleteUserData], tenant: Tenant = Auth, svc: Services = Svc):
    data = await deletion.start(svc, tenant=tenant, data=body.data)
    # The spec's top-level body for this one operation, with HTTP 202.
    return raw({"status": "success", "message": "User data deletion started.", "data": data, "statusCode": 202}, 202)


@router.post("/users/data/delete/status", summary="Progress of a user-data deletion [API-key auth]",
             responses=answer(DeletionStatus))
async def delete_data_status(body: Envelope[UserDataDeleteStatus], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await deletion.status(svc, tenant=tenant, data=body.data), "Deletion status retrieved.")


@router.post("/users/data/get", summary="Export all data of users (GDPR), paged [API-key auth]",
             responses=plain(UserDataPage))
async def get_data(body: Envelope[UserDataGet], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await export.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "User data retrieved.", nextPageToken=token)


@router.post("/organizations/usergroups/add", summary="Add organization user groups [API-key auth]", responses=BY_ID)
async def add_groups(body: Envelope[AddGroups], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.add(svc, tenant=tenant, data=body.data), "Groups processed.")


@router.post("/organizations/usergroups/users/add", summary="Add users to an organization user group [API-key auth]",
             responses=MEMBERSHIP)
async def add_group_users(body: Envelope[GroupUsers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.add_users(svc, tenant=tenant, data=body.data), "Users processed.")


@router.post("/organizations/usergroups/users/delete",
             summary="Remove users from an organization user group [API-key auth]", responses=MEMBERSHIP)
async def delete_group_users(body: Envelope[DeleteGroupUsers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.delete_users(svc, tenant=tenant, data=body.data), "Users processed.")


@router.post("/organizations/usergroups/get", summary="List an organization's user groups [API-key auth]",
             responses=page(Group))
async def get_groups(body: Envelope[GetGroups], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await groups.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Groups retrieved successfully.")


@router.post("/users/count/get", summary="Count users with access (advanced queries) [API-key auth]",
             responses=answer(UserCount))
async def count(body: Envelope[CountUsers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.count(svc, tenant=tenant, data=body.data), "Users counted successfully.")


@router.post("/users/doc/get", summary="List users with access to documents (advanced queries) [API-key auth]",
             responses=page(DocUser))
async def get_document_users(body: Envelope[DocUsers], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.document_users(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Users retrieved successfully.")


@router.post("/users/invite/add", summary="Invite an e-mail to an organization, folder or document [API-key auth]",
             responses=answer(Invitation))
async def add_invite(body: Envelope[AddInvite], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await invitations.add(svc, tenant=tenant, data=body.data), "Invitation processed.")


@router.post("/users/invite/respond", summary="Accept, decline or withdraw an invitation [API-key auth]",
             responses=answer(Invitation))
async def respond_invite(body: Envelope[RespondInvite], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await invitations.respond(svc, tenant=tenant, data=body.data), "Invitation updated.")


@router.post("/users/invite/get", summary="List an organization's invitations [API-key auth]",
             responses=page(Invitation))
async def get_invites(body: Envelope[GetInvites], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await invitations.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Invitations retrieved successfully.")


@router.post("/users/invitations/get", summary="List one e-mail's invitations [API-key auth]",
             responses=page(Invitation))
async def get_invitations(body: Envelope[GetInvitations], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await invitations.of_email(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Invitations retrieved successfully.")


@router.post("/users/invite/pending/count", summary="Count pending invitations of a type [API-key auth]",
             responses=answer(UserCount))
async def pending_invites(body: Envelope[PendingInvites], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await invitations.pending_count(svc, tenant=tenant, data=body.data), "Pending invitations counted.")
