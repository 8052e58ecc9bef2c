"""`make run`'s stack: an embedded nats-server, the engine, and bots playing both games through gRPC."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from paiju.dev.stack import main


def test_the_stack_plays_both_games_over_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NATS_URL", raising=False)
    monkeypatch.delenv("PAIJU_TOKEN_SECRET", raising=False)
    out = io.StringIO()
    main(out, deals=1, seed=4)
    text = out.getvalue()
    assert "Engine on 127.0.0.1:" in text
    assert "Deal 1 over:" in text and "Match over." in text, "the 砸六家 match ran to its end"
    assert "Deal settled:" in text, "the 拖拉机 deal was played and settled"
    assert (tmp_path / ".data" / "nats").is_dir(), "the embedded server keeps its data under .data/nats"
    assert os.environ.get("PAIJU_TOKEN_SECRET")
