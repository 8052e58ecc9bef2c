"""Tournament events over the generated contract (`protos/paiju/v1/tournament_events.proto`)."""

from __future__ import annotations

from paiju.contract.codec import Codec, OneofCodec
from paiju.scoring import tournament
from paiju.v1 import cards_pb2, tournament_events_pb2

TOURNAMENT = Codec(tournament_events_pb2, "Tournament", cards_pb2.CardList)
TOURNAMENT_EVENTS = OneofCodec(TOURNAMENT, tournament_events_pb2.TournamentEvent, tournament.Stored, "event")
