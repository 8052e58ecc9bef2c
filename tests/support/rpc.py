"""What a client sees of a refusal: the `grpc.aio.AioRpcError` a call raises when a Paiju service refuses it, built
from the refusal exactly as the edge writes it (code, message, the ``google.rpc.Status`` trailer)."""

from __future__ import annotations

import grpc

from paiju.platform.edge import status_of
from paiju.platform.errors import Refused


def rpc_error(refused: Refused) -> grpc.aio.AioRpcError:
    status = status_of(refused)
    return grpc.aio.AioRpcError(
        status.code, grpc.aio.Metadata(), grpc.aio.Metadata(*status.trailing_metadata), status.details
    )
