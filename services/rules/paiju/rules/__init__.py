"""The pure rules cores of Paiju: no I/O, no clock, no unseeded randomness (docs/architecture.md, Principles 1-3).

`cards` holds the card model shared by both games; `zlj` is 砸六家, `tractor` 拖拉机. Each game core exposes
``decide(state, command) -> events``, ``evolve(state, event) -> state``, ``legal_actions(state, seat)``
and ``view(state, seat)``.
"""
