"""Export and import over HTTP: `GET /v1/exports` streams a scope as JSON Lines, `POST /v1/imports` and
`/v1/restores` read one.

api/services/exports.py and api/services/imports.py say who may do what; the export's checks all run before
its first byte, so a refusal is an ordinary JSON error, never a cut stream.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.transfer import ImportOptions, ImportPublic
from api.services import exports, imports
from api.services.browse import SCOPE_KEY_PATTERN

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["export and import"])

NDJSON = "application/x-ndjson"
# the body of an import or restore: an export file, as `GET /v1/exports` wrote it
_FILE_BODY: dict[str, Any] = {
    "requestBody": {"required": True, "content": {NDJSON: {"schema": {"type": "string", "format": "binary"}}}}
}


@router.get(
    "/exports",
    response_class=StreamingResponse,
    responses={200: {"content": {NDJSON: {}}, "description": "The export file, one JSON record a line"}},
)
async def export_scope(
    principal: CurrentPrincipal,
    resources: Resources,
    scope_key: Annotated[
        str,
        Query(max_length=600, pattern=SCOPE_KEY_PATTERN, description="project:<org>/<project>, org:<org> …"),
    ],
    include: Annotated[
        list[Literal["staging"]] | None,
        Query(description="`staging`: also the staging of the tasks the memories came from"),
    ] = None,
) -> StreamingResponse:
    """One scope's memories (every state), their events and optionally their staging, as JSON Lines."""
    prepared = await exports.prepare_export(
        resources, principal, scope_key, include_staging="staging" in (include or [])
    )
    return StreamingResponse(
        exports.export_lines(resources, prepared),
        media_type=NDJSON,
        headers={"Content-Disposition": f'attachment; filename="{prepared.filename()}"'},
    )


@router.post(
    "/imports",
    response_model=ImportPublic,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {NDJSON: {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def import_file(
    request: Request,
    principal: CurrentPrincipal,
    resources: Resources,
    options: Annotated[ImportOptions, Query()],
) -> ImportPublic:
    """Import an export file (the body) through the gate: an import task promoted into `scope_key`."""
    return await imports.import_file(resources, principal, await request.body(), options)


@router.post("/restores", response_model=ImportPublic, openapi_extra=_FILE_BODY)
async def restore_file(request: Request, principal: CurrentPrincipal, resources: Resources) -> ImportPublic:
    """Restore an export file (the body) as it was: ids, trust, states and events (admins only)."""
    return await imports.restore_file(resources, principal, await request.body())
