"""The codecs of both games over the generated contract (`make protos` generates `paiju.v1`)."""

from __future__ import annotations

from paiju.contract.codec import Codec, OneofCodec
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import cards_pb2, tractor_pb2, zlj_pb2

ZLJ = Codec(zlj_pb2, "Zlj", cards_pb2.CardList)
TRACTOR = Codec(tractor_pb2, "Tractor", cards_pb2.CardList)
ZLJ_EVENTS = OneofCodec(ZLJ, zlj_pb2.ZljEvent, zlj_model.Event, "event")
ZLJ_COMMANDS = OneofCodec(ZLJ, zlj_pb2.ZljCommand, zlj_model.Command, "command")
TRACTOR_EVENTS = OneofCodec(TRACTOR, tractor_pb2.TractorEvent, tractor_model.Event, "event")
TRACTOR_COMMANDS = OneofCodec(TRACTOR, tractor_pb2.TractorCommand, tractor_model.Command, "command")
