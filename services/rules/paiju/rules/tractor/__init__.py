"""拖拉机 (Tractor), tournament rules: four players, six decks, concealed bidding, no kitty, no throws.

The normative rules are `docs/rules/tractor.md`; decisions cite their ids (``D-TR-n``). This package is being
built: trumps and order (`order`), combinations and trick winner (`combos`) exist so far.
"""
