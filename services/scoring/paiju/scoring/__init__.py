"""Scoring: read models of the game streams, tournaments with Swiss pairing, result sheets, analyst tools."""
