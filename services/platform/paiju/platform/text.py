"""Text people type into names and notes: what may not be in it."""

from __future__ import annotations

import unicodedata


def has_control(text: str, allowed: str = "") -> bool:
    """Whether ``text`` holds a character that is not shown as text: a control, format, surrogate, private-use
    or unassigned character (Unicode category C*), or a line or paragraph separator — except those in
    ``allowed`` (e.g. a newline in a multi-line note)."""
    return any(
        ch not in allowed and (unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp"))
        for ch in text
    )
