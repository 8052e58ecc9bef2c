"""Which of gRPC's I/O paths Paiju's processes run on: chosen before gRPC loads, never by importing it.

grpcio (1.85) carries two implementations of its sockets: the EventEngine (its default) and the classic one,
selected by gRPC's own ``GRPC_EXPERIMENTS`` variable, which gRPC reads once, when the ``grpc`` module loads. Under
`bench/load.py` (30 tables of bots, three interleaved pairs of runs) the classic path cost the engine about 9 % less
CPU per move and the bot runner, a client, about 19 % less: fewer handoffs between gRPC's threads and the event
loop per message. Every Paiju process therefore runs on the classic path, unless its operator chose otherwise:
``GRPC_EXPERIMENTS`` set to anything, even an empty value (gRPC's defaults), is left as it is.

`choose_grpc_io` is the first thing `paiju` does, before any module imports ``grpc``; `grpc_environment` gives the
same choice to a process about to be started (a benchmark's bare-library parts measure the same I/O path as the
services they are compared with). The test suite sets it in its own process too, so the tests run the path
production runs. A grpcio upgrade that drops these names makes gRPC log "Unknown experiment" at start; a test
starts a server on them and fails on that line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

CLASSIC_IO = "-event_engine_client,-event_engine_listener,-event_engine_for_all_other_endpoints"
"""gRPC's experiments turned off to run its classic I/O path: clients, listeners and every other endpoint."""
VARIABLE = "GRPC_EXPERIMENTS"


def grpc_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with Paiju's choice of gRPC I/O path, unless ``environ`` already names gRPC's experiments."""
    chosen = dict(environ)
    chosen.setdefault(VARIABLE, CLASSIC_IO)
    return chosen


def choose_grpc_io(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set Paiju's gRPC I/O path in this process's environment, before gRPC loads. False when it cannot count
    any more (``grpc`` is loaded already), so a caller may say so; the operator's own choice is kept either way."""
    target = os.environ if environ is None else environ
    target.setdefault(VARIABLE, CLASSIC_IO)
    return "grpc" not in sys.modules


__all__ = ["CLASSIC_IO", "VARIABLE", "choose_grpc_io", "grpc_environment"]
