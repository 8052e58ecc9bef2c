"""`paiju.engine.watching.act_result`: the answer ActStream sends is written straight to its bytes, the same bytes as
serializing the `ActStreamResponse` message, for every shape of answer."""

from __future__ import annotations

import pytest
from google.rpc import error_details_pb2, status_pb2

from paiju.engine.watching import act_result
from paiju.v1 import engine_pb2


def _accepted() -> engine_pb2.ActResponse:
    answer = engine_pb2.ActResponse(version=300)
    for version in (299, 300):
        answer.events.add().version = version
    return answer


def _refused() -> status_pb2.Status:
    status = status_pb2.Status(code=10, message="the game moved past version 298: read it again")
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason="STALE_VERSION", domain="paiju.v1"))
    return status


@pytest.mark.parametrize(
    ("command_id", "answer", "refused"),
    [
        ("c-1", _accepted(), None),
        ("c-1", engine_pb2.ActResponse(), None),  # validate_only at version 0: an empty response, still "accepted"
        ("c-1", None, _refused()),
        ("", None, _refused()),  # a request that could not be read: no command id
        ("界" * 200, _accepted(), None),  # a long id in UTF-8: its length as a two-byte varint
    ],
)
def test_the_answer_is_the_bytes_of_its_message(
    command_id: str, answer: engine_pb2.ActResponse | None, refused: status_pb2.Status | None
) -> None:
    request = engine_pb2.ActRequest(game_id="g", command_id=command_id) if command_id else None
    made = act_result(request, answer, refused)
    expected = engine_pb2.ActStreamResponse(command_id=command_id)
    if refused is not None:
        expected.refused.CopyFrom(refused)
    else:
        assert answer is not None
        expected.accepted.CopyFrom(answer)
    assert made == expected.SerializeToString()
    decoded = engine_pb2.ActStreamResponse.FromString(made)
    assert decoded.WhichOneof("result") == ("refused" if refused is not None else "accepted")
