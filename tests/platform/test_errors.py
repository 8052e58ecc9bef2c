"""The error model's Python side matches the contract: every reason of errors.proto, and only those, with one
status code each, documented in the proto with that code."""

from __future__ import annotations

import re
from pathlib import Path

from paiju.platform.edge import CODES, code_name, refusal_of_rpc_error
from paiju.platform.errors import Reason, Refused
from paiju.v1 import errors_pb2

from ..support.rpc import rpc_error

ERRORS_PROTO = Path(__file__).parents[2] / "protos" / "paiju" / "v1" / "errors.proto"


def test_the_reasons_are_the_contracts_reasons() -> None:
    proto = {v.name for v in errors_pb2.ErrorReason.DESCRIPTOR.values} - {"ERROR_REASON_UNSPECIFIED"}
    assert {r.value for r in Reason} == proto
    assert all(r.name == r.value for r in Reason)


def test_every_reason_has_one_code_and_the_proto_documents_it() -> None:
    assert set(CODES) == set(Reason), "every reason has its status_code option"
    text = ERRORS_PROTO.read_text()
    for reason in Reason:
        # the comment right above the value starts with the status code it goes with
        found = re.search(rf"// ([A-Z_]+):[^\n]*\n(?:  //[^\n]*\n)*  {reason.value} = \d+ \[", text)
        assert found, f"{reason.value} is not documented with its status code in errors.proto"
        assert found.group(1) == code_name(reason), reason


def test_a_downstream_refusal_of_the_clients_request_is_passed_on_as_the_clients() -> None:
    refused = refusal_of_rpc_error(rpc_error(Refused(Reason.GAME_NOT_FOUND, "no game g", {"game": "g"})), "engine")
    assert (refused.reason, refused.message, refused.metadata) == (Reason.GAME_NOT_FOUND, "no game g", {"game": "g"})


def test_a_downstream_refusal_of_our_own_credentials_or_rate_is_unavailable_not_the_clients() -> None:
    """A client told TOKEN_EXPIRED or RATE_LIMITED would sign in again or slow down, in vain: the token and the
    budget were the service's own."""
    for reason in (Reason.TOKEN_EXPIRED, Reason.TOKEN_INVALID, Reason.RATE_LIMITED, Reason.ROLE_REQUIRED):
        refused = refusal_of_rpc_error(rpc_error(Refused(reason, "no")), "the engine")
        assert refused.reason is Reason.DEPENDENCY_UNAVAILABLE, reason
        assert refused.metadata == {"dependency": "the engine"}


def test_a_stream_without_a_leader_is_a_dependency_gone_not_an_internal_error() -> None:
    """What JetStream answers while a stream or bucket elects a leader (a node lost, a bucket just created on a
    cluster) is answered UNAVAILABLE ("try again"), not INTERNAL: the cluster rehearsal once met a StartMatch
    answered INTERNAL by a key-value put that got no response from its stream."""
    from paiju.platform.edge import DEPENDENCY_ERRORS
    from paiju.platform.nats import LEADERLESS

    for error in LEADERLESS:
        assert issubclass(error, DEPENDENCY_ERRORS), error
