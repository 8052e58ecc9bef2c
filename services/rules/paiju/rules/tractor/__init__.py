"""拖拉机 (Tractor), tournament rules: four players, six decks, concealed bidding, no kitty, no throws.

The normative rules are `docs/rules/tractor.md`; decisions cite their ids (``D-TR-n``). The modules: trumps and
order (`order`), combinations and the trick's winner (`combos`), what a follow owes (`follow`), the game's commands
and events (`model`), deciding and evolving (`game`), a deal's settlement (`settlement`), a seat's and a spectator's
view (`view`) and the heuristic bots (`bots`).
"""
