"""Plain-text rendering of a table for a person at a terminal, and the reading of what they type.

Everything here is pure (no I/O): a seat's view (the rules cores' ``SeatView``, decoded from the engine's
answer) and the legal actions the engine listed go in, lines of text come out; a typed line comes in and a
`Intent` comes out. Cards are shown in the card notation of docs/rules/README.md (`QS`, `TD`, `SJ`, `BJ`), sorted by the
game's order (砸六家 §2; 拖拉机 §3 once the trump is known).
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from paiju.rules.cards import RANK_OF, SUIT_OF, Card, CardSyntaxError, Rank, Suit, format_cards, parse_cards, sort_cards
from paiju.rules.errors import IllegalAction
from paiju.rules.registry import TRACTOR
from paiju.rules.tractor import combos as tractor_combos
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.follow import PATTERN_NAMES
from paiju.rules.tractor.order import CLASS_NAMES, LEVEL_RANKS, TRUMP, Trumps
from paiju.rules.tractor.settlement import BAND, TAKE_DEAL, LabourReform, Side, level_name, levels_gained
from paiju.rules.tractor.view import SeatView as TractorView
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.combos import LEVEL_NAMES, classify, is_four_take, order
from paiju.rules.zlj.view import SeatView as ZljView
from paiju.terminal.zlj_narrator import OUTCOME_WORDS, PLACE_NAMES, combo_words, listed, team_points_why

WIDTH = 100
"""Lines are wrapped to this many characters."""
PROMPT = "your move> "
"""The prompt shown when the player is to act (tests wait for a line ending in ``> ``)."""
PROMPT_AGAIN = "(still your move)> "
"""The same question shown again after news printed below it (the options have not changed)."""
ZLJ_CUT_MAX = 107
TRACTOR_CUT_MAX = 323
SUIT_WORDS = {Suit.SPADES: "spades", Suit.HEARTS: "hearts", Suit.CLUBS: "clubs", Suit.DIAMONDS: "diamonds"}
JOKER_NAMES = {Rank.SMALL_JOKER: "the small joker", Rank.BIG_JOKER: "the big joker"}
SUIT_BY_LETTER = {"S": Suit.SPADES, "H": Suit.HEARTS, "C": Suit.CLUBS, "D": Suit.DIAMONDS}
ZLJ_PHASES = {
    zlj_model.Phase.NEW: "starting",
    zlj_model.Phase.SHUFFLE: "shuffling (the players add their randomness)",
    zlj_model.Phase.CUT: "cutting the deck (搬牌)",
    zlj_model.Phase.PICK: "winners pick tribute (进贡)",
    zlj_model.Phase.RETURN: "winners return cards (还贡)",
    zlj_model.Phase.TAKE_BACK: "losers take back returned cards",
    zlj_model.Phase.PLAY: "play",
    zlj_model.Phase.ENDED: "match over",
}
TRACTOR_PHASES = {
    tractor_model.Phase.NEW: "starting",
    tractor_model.Phase.FLIP: "the deal is void: waiting for a new deal",
    tractor_model.Phase.CUT: "the dealer cuts",
    tractor_model.Phase.BID: "concealed bidding (暗叫)",
    tractor_model.Phase.COUNTER: "concealed counters (反)",
    tractor_model.Phase.PLAY: "play",
    tractor_model.Phase.REFORM: "劳改: the non-offending team chooses",
    tractor_model.Phase.ENDED: "game over",
}
ZLJ_BEFORE_DEAL = (zlj_model.Phase.CUT, zlj_model.Phase.SHUFFLE, zlj_model.Phase.NEW)
"""Phases in which no hand of the coming deal is dealt yet (the view still holds the finished deal's)."""
TRACTOR_BEFORE_DEAL = (tractor_model.Phase.CUT, tractor_model.Phase.FLIP, tractor_model.Phase.NEW)
TRIBUTE_PHASES = (zlj_model.Phase.PICK, zlj_model.Phase.RETURN, zlj_model.Phase.TAKE_BACK)
HELP = (
    "Type the number of an option, or the cards themselves in the notation: rank then suit, e.g. `3S 3H`,\n"
    "`10D` or `TD`, `SJ` / `BJ` for the jokers (order and case do not matter). Other commands:\n"
    "  p or pass   pass (when passing is allowed)\n"
    "  m           more options, when the list has pages\n"
    "  c           start a follow you are composing again (拖拉机)\n"
    "  t           show the table again\n"
    "  h or ?      this help; after a refused move, first the text of the rule the engine cited\n"
    "  q           quit (Ctrl-D too)"
)


# --- seats ------------------------------------------------------------------------------------------


@dataclass
class Seats:
    """Who sits where, for labels: ``me`` is the viewer's seat (``None`` for a spectator) and ``names`` the
    players' names by seat as the lobby knows them (empty without a lobby)."""

    me: int | None = None
    names: dict[int, str] = field(default_factory=dict)

    def label(self, seat: int) -> str:
        """``seat 3 (B)``, with the player's name or ``you`` when known: ``seat 0 (A, you)``."""
        extra = ", you" if seat == self.me else (f", {self.names[seat]}" if self.names.get(seat) else "")
        return f"seat {seat} ({'AB'[seat % 2]}{extra})"

    def short(self, seat: int) -> str:
        """``you``, the player's name, or ``seat 3`` when the name is not known."""
        if seat == self.me:
            return "you"
        return self.names.get(seat) or f"seat {seat}"

    def listing(self, seats: Iterable[int], last: str = "and") -> str:
        """``you, alice and seat 4``: seats by their short names (`short`)."""
        names = [self.short(s) for s in seats]
        if len(names) <= 1:
            return names[0] if names else "nobody"
        return f"{', '.join(names[:-1])} {last} {names[-1]}"

    def team(self, team: int, seats: int) -> str:
        """``team A (you and seat 2)``: a team with its players (partners sit every other seat)."""
        return f"team {'AB'[team]} ({self.listing(range(team, seats, 2))})"


# --- cards ------------------------------------------------------------------------------------------


def zlj_cards(cards: Iterable[Card]) -> str:
    """Cards in 砸六家 order (4 low .. BJ high; suits S H C D within a rank)."""
    return format_cards(cards, order) or "-"


def tractor_dealer(view: TractorView) -> int | None:
    """The deal's dealer: while the deck is cut, the next deal's (who cuts), not the finished deal's."""
    if view.phase is tractor_model.Phase.CUT and view.turn is not None:
        return view.turn
    return view.dealer


def tractor_level_rank(view: TractorView) -> Rank:
    """The deal's level rank: the dealer team's level (§2); 3 before the first dealer is known."""
    dealer = tractor_dealer(view)
    if dealer is None:
        return Rank.THREE
    return LEVEL_RANKS[min(view.levels[dealer % 2], 11)]


def tractor_trumps(view: TractorView) -> Trumps | None:
    """The deal's trumps once the trump suit is declared (none while the next deal is not dealt yet)."""
    if view.trump is None or view.phase in TRACTOR_BEFORE_DEAL:
        return None
    return Trumps(tractor_level_rank(view), view.trump)


def tractor_order(view: TractorView) -> Callable[[Card], int]:
    """A sort key for showing 拖拉机 cards: plain suits then trumps in the deal's order when the trump is known;
    before that natural suits, then the cards that are trump in every deal (2s, level cards, jokers)."""
    trumps = tractor_trumps(view)
    if trumps is not None:
        return trumps.order_key
    level = tractor_level_rank(view)

    def key(c: Card) -> int:
        rank, suit = RANK_OF[c], SUIT_OF[c]
        if suit is None:
            return 9000 + rank
        if rank is Rank.TWO:
            return 8000 + suit
        if rank == level:
            return 8500 + suit
        return suit * 1000 + rank

    return key


def tractor_class(view: TractorView, c: Card) -> str:
    """The name of a card's group in the hand: its suit class, or "trump" (always-trump cards before the
    declaration)."""
    trumps = tractor_trumps(view)
    if trumps is not None:
        return CLASS_NAMES[trumps.suit_class[c]]
    suit = SUIT_OF[c]
    if suit is None or RANK_OF[c] in (Rank.TWO, tractor_level_rank(view)):
        return "trump"
    return SUIT_WORDS[suit]


def tractor_cards(view: TractorView, cards: Iterable[Card]) -> str:
    return format_cards(cards, tractor_order(view)) or "-"


def wrapped(prefix: str, text: str, width: int = WIDTH) -> list[str]:
    """``prefix`` + ``text`` wrapped to ``width``, continuation lines indented under the text."""
    return textwrap.wrap(
        text, width=width, initial_indent=prefix, subsequent_indent=" " * len(prefix), break_on_hyphens=False
    ) or [prefix.rstrip()]


NOT_DEALT = "Your hand: not dealt yet (the cards are dealt after the cut)."
"""The hand while the deck is cut: the finished deal's cards are gone, the next deal's not dealt yet."""


def zlj_hand(view: ZljView) -> list[str]:
    if view.phase in ZLJ_BEFORE_DEAL:
        return [NOT_DEALT]
    return wrapped(f"Your hand ({len(view.hand)}): ", zlj_cards(view.hand))


def tractor_hand(view: TractorView) -> list[str]:
    """The hand grouped by suit class, each group in the deal's order."""
    if view.phase in TRACTOR_BEFORE_DEAL:
        return [NOT_DEALT if view.phase is tractor_model.Phase.CUT else "Your hand: the deal is void; a new one comes."]
    lines = [f"Your hand ({len(view.hand)}):"]
    groups: dict[str, list[Card]] = {}
    for c in sort_cards(view.hand, tractor_order(view)):
        groups.setdefault(tractor_class(view, c), []).append(c)
    for name, cards in groups.items():
        lines += wrapped(f"  {name:<9}({len(cards):>2}) ", format_cards(cards))
    return lines


# --- options ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One legal action, numbered from 1 on screen. A long list is shown grouped: ``group`` names the option's
    kind (``singles``, ``straights of 5``) and ``short`` is its label inside the group (the cards alone)."""

    command: Any
    label: str
    group: str = ""
    short: str = ""

    @property
    def brief(self) -> str:
        return self.short or self.label


MAX_OPTION_LINES = 20
"""A list of options longer than this is shown grouped by kind, and paged when still too long (`option_pages`)."""
ZLJ_GROUPS = {
    zlj_kind: i
    for i, zlj_kind in enumerate(("pass", "single", "pair", "straight", "pair-straight", "bomb", "joker bomb"))
}


def _zlj_group(cards: Sequence[Card]) -> tuple[tuple[int, int], str, str]:
    """(place of the group, group name, short label) of a 砸六家 play."""
    try:
        combo = classify(cards)
    except IllegalAction:
        return (99, 0), "other plays", zlj_cards(cards)
    kind = combo.kind.value
    place = ZLJ_GROUPS.get(kind, 98)
    if kind == "straight":
        low = LEVEL_NAMES[combo.top - combo.size + 1]
        return (place, combo.size), f"{combo.size}-card straights", f"{low}-{LEVEL_NAMES[combo.top]}"
    if kind == "pair-straight":
        pairs = combo.size // 2
        low = LEVEL_NAMES[combo.top - pairs + 1]
        return (
            (place, pairs),
            f"{pairs}-pair pair-straights",
            f"{low}{low}-{LEVEL_NAMES[combo.top]}{LEVEL_NAMES[combo.top]}",
        )
    if kind == "bomb":
        return (place, combo.size), f"{combo.size}-card bombs", zlj_cards(cards)
    names = {"single": "singles", "pair": "pairs", "joker bomb": "joker bombs"}
    return (place, 0), names.get(kind, kind), zlj_cards(cards)


def _combo_text(cards: Sequence[Card]) -> str:
    try:
        return combo_words(classify(cards))
    except IllegalAction:
        return "not a combination"


def zlj_options(view: ZljView, actions: Sequence[Any]) -> list[Option]:
    """The legal 砸六家 actions as labelled options: a pass first when allowed, then the plays by kind (singles,
    pairs, straights by length, pair-straights, bombs), each kind in the engine's order.

    Cuts are not listed (there are 107): the player types how many cards to move."""
    placed: list[tuple[tuple[int, int], Option]] = []
    for a in actions:
        if isinstance(a, zlj_model.Cut):
            continue
        place, group, short = (0, 0), "", ""
        if isinstance(a, zlj_model.Pass):
            label, group = "pass", "pass"
        elif isinstance(a, zlj_model.Play):
            if is_four_take(a.cards, view.current):
                taken_from = view.current_by if view.current_by is not None else -1
                label = (
                    f"{zlj_cards(a.cards)}  (FOUR-TAKE 4取炸弹: takes {zlj_cards(view.current_cards)} "
                    f"from seat {taken_from})"
                )
                place, group, short = (
                    (97, 0),
                    "four-takes",
                    f"{zlj_cards(a.cards)} takes {zlj_cards(view.current_cards)}",
                )
            else:
                label = f"{zlj_cards(a.cards)}  ({_combo_text(a.cards)})"
                place, group, short = _zlj_group(a.cards)
        elif isinstance(a, zlj_model.PickTribute):
            label = f"pick {zlj_cards(a.cards)}"
        elif isinstance(a, zlj_model.ReturnTribute):
            label = f"return {zlj_cards(a.cards)}"
        elif isinstance(a, zlj_model.TakeBack):
            label = f"take back {zlj_cards(a.cards)}"
        else:
            label = repr(a)
        placed.append((place, Option(a, label, group, short)))
    return [o for _, o in sorted(placed, key=lambda po: po[0])]


def bid_level_count(view: TractorView, suit: Suit, cards: Sequence[Card]) -> int:
    """Level cards of ``suit`` among a bid's cards (D-TR-6.1)."""
    level = tractor_level_rank(view)
    return sum(1 for c in cards if RANK_OF[c] == level and SUIT_OF[c] == suit)


def tractor_options(view: TractorView, actions: Sequence[Any]) -> list[Option]:
    """The legal 拖拉机 actions as labelled options. A follow is listed as one legal play (the engine lists one
    representative); the player may type any other legal follow."""
    options = []
    trumps = tractor_trumps(view)
    for a in actions:
        if isinstance(a, tractor_model.Cut):
            continue
        group = short = ""
        if isinstance(a, tractor_model.Pass):
            label = "pass (no counter)" if view.phase is tractor_model.Phase.COUNTER else "pass (no bid)"
        elif isinstance(a, tractor_model.MakeBid | tractor_model.Counter):
            verb = "counter in" if isinstance(a, tractor_model.Counter) else "bid"
            n = bid_level_count(view, a.suit, a.cards)
            label = f"{verb} {SUIT_WORDS[a.suit]}: show {format_cards(a.cards)} ({n} level card{'s' if n > 1 else ''})"
        elif isinstance(a, tractor_model.Play):
            cards = tractor_cards(view, a.cards)
            if view.trick is not None:
                label = f"{cards}  (a legal follow the engine offers; you may compose another)"
            elif trumps is not None:
                label = f"{cards}  ({tractor_short(a.cards, trumps)})"
                group, short = class_words(trumps.suit_class[a.cards[0]]), cards
            else:
                label = cards
        elif isinstance(a, tractor_model.ChooseLabourReform):
            label = (
                "+2 levels for your team (劳改 remedy 1)"
                if a.choice is LabourReform.LEVELS
                else "80 points in your team's favour (劳改 remedy 2)"
            )
        else:
            label = repr(a)
        options.append(Option(a, label, group, short))
    trumps_now = tractor_trumps(view)
    if view.trick is None and trumps_now is not None:
        key = trumps_now.order_key

        def place(o: Option) -> tuple[int, int, int, int]:
            if not isinstance(o.command, tractor_model.Play):
                return (0, 0, 0, 0)
            low = min(o.command.cards, key=key)
            return (1, key(low), low, len(o.command.cards))

        options.sort(key=place)
    return options


def tractor_short(cards: Sequence[Card], trumps: Trumps) -> str:
    """A lead's shape in few words: ``pair, hearts``, ``tractor 3x2, trump``, ``4-bomb, clubs``."""
    try:
        combo = tractor_combos.classify(cards, trumps)
    except IllegalAction:
        return "not one combination"
    cls = CLASS_NAMES[combo.suit_class]
    if combo.kind is tractor_combos.Kind.BOMB:
        return f"{combo.unit}-bomb, {cls}"
    if combo.kind in (tractor_combos.Kind.TRACTOR, tractor_combos.Kind.SPECIAL_TRACTOR):
        return f"{combo.kind.value} {combo.units}x{combo.unit}, {cls}"
    return f"{combo.kind.value}, {cls}"


def cut_range(actions: Sequence[Any]) -> tuple[int, int] | None:
    """``(1, most)`` when the legal actions are cuts of 1..most cards."""
    counts = [a.count for a in actions if isinstance(a, zlj_model.Cut | tractor_model.Cut)]
    return (min(counts), max(counts)) if counts else None


def _flat_option_lines(options: Sequence[Option], width: int) -> list[str]:
    """The numbered options one by one, in columns when they are many and short."""
    lines = [f"Your options ({len(options)}):"]
    items = [f"{i:>3}) {o.label}" for i, o in enumerate(options, start=1)]
    longest = max((len(s) for s in items), default=0) + 2
    columns = max(1, min(4, width // longest)) if len(items) > 12 else 1
    rows = -(-len(items) // columns)
    for r in range(rows):
        row = [items[r + c * rows] for c in range(columns) if r + c * rows < len(items)]
        lines.append("".join(s.ljust(longest) for s in row).rstrip())
    return lines


GROUP_WIDTH = 18
"""The widest column of a grouped list's kinds (a longer kind gets a line of its own)."""


def _grouped_option_blocks(options: Sequence[Option], width: int) -> list[list[str]]:
    """The options grouped by kind, a block of lines for each kind (its name, then its options by their numbers
    and short labels, wrapped in aligned columns)."""
    groups: dict[str, list[str]] = {}
    for i, o in enumerate(options, start=1):
        groups.setdefault(o.group or "other", []).append(f"{i:>2}) {o.brief}")
    column = min(GROUP_WIDTH, max(len(g) for g in groups) + 1)
    indent = " " * (column + 3)
    cell = max(len(item) for items in groups.values() for item in items) + 2
    per_line = max(1, (width - len(indent)) // cell)
    blocks = []
    for group, items in groups.items():
        block = [] if len(group) < column else [f"  {group}:"]
        head = indent if block else f"  {group + ':':<{column + 1}}"
        for start in range(0, len(items), per_line):
            row = "".join(item.ljust(cell) for item in items[start : start + per_line]).rstrip()
            block.append((head if start == 0 else indent) + row)
        blocks.append(block)
    return blocks


def option_pages(options: Sequence[Option], width: int = WIDTH, most: int = MAX_OPTION_LINES) -> list[list[str]]:
    """The options as pages of at most ``most`` lines: ``Your options (N):`` and the numbered options, in columns
    when they are many and short; a list too long for that is grouped by kind (singles, pairs, straights of each
    length …) with short labels, and split into pages (whole kinds where they fit) that end with how to see the
    next (``m``). Every option keeps its number whatever page shows it."""
    flat = _flat_option_lines(options, width)
    if len(flat) <= most or not any(o.group for o in options):
        return [flat]
    head = f"Your options ({len(options)}): by kind; type a number, or the cards"
    blocks = _grouped_option_blocks(options, width)
    if 1 + sum(len(b) for b in blocks) <= most:
        return [[head, *(line for b in blocks for line in b)]]
    room = most - 2  # the heading and the page's last line
    bodies: list[list[str]] = [[]]
    for block in blocks:
        if bodies[-1] and len(bodies[-1]) + len(block) > room:
            bodies.append([])
        for line in block:
            if len(bodies[-1]) == room:
                bodies.append([])
            bodies[-1].append(line)
    pages = []
    for n, body in enumerate(bodies, start=1):
        more = "type m for more" if n < len(bodies) else "type m to see the first page again"
        pages.append([head if n == 1 else f"{head} (page {n})", *body, f"  (page {n} of {len(bodies)}: {more})"])
    return pages


def option_lines(options: Sequence[Option], width: int = WIDTH, page: int = 0) -> list[str]:
    """Page ``page`` (counted from 0, round and round) of `option_pages`."""
    pages = option_pages(options, width)
    return pages[page % len(pages)]


# --- the table --------------------------------------------------------------------------------------


def _place(place: int) -> str:
    return PLACE_NAMES.get(place, f"{place}th out")


def zlj_table(view: ZljView, seats: Seats) -> list[str]:
    """The 砸六家 table as ``view`` shows it: seats, hand sizes, who acts, the play to beat, tribute, scores."""
    deals = f" of {view.options.deals}" if view.options.deals else ""
    lines = [f"== 砸六家 · deal {view.deal}{deals} · {ZLJ_PHASES.get(view.phase, view.phase.value)} =="]
    width = max(len(seats.label(s)) for s in range(len(view.hand_sizes)))
    for s, size in enumerate(view.hand_sizes):
        if view.phase in ZLJ_BEFORE_DEAL:  # the finished deal's hands are not this deal's
            lines.append(f"  {seats.label(s):<{width}}  {'<- to cut' if s == view.turn else ''}".rstrip())
            continue
        notes = []
        if s in view.out:
            notes.append(_place(view.out.index(s) + 1))
        if s == view.current_by:
            notes.append("made the play to beat")
        if s in view.passed:
            notes.append("passed")
        if s == view.turn:
            notes.append("<- to act")
        held = f"{size:>2} {'card' if size == 1 else 'cards'}"
        lines.append(f"  {seats.label(s):<{width}}  {held}  {', '.join(notes)}".rstrip())
    if view.phase is zlj_model.Phase.PLAY:
        if view.current is None or view.current_by is None:
            who = "you lead" if view.turn is not None and view.turn == seats.me else f"{_who(view.turn, seats)} leads"
            lines.append(f"New round: {who}.")
        else:
            lines.append(
                f"To beat: {seats.label(view.current_by)} played {zlj_cards(view.current_cards)} "
                f"({combo_words(view.current)})"
            )
        if view.leader is not None:
            lines.append(f"This deal was led by {seats.label(view.leader)}.")
    for take in view.taken:
        lines.append(
            f"Four-take: {seats.label(take.by)} took {zlj_cards(take.cards)} from {seats.label(take.taken_from)}"
        )
    if view.shown_jokers is not None:
        seat, jokers = view.shown_jokers
        lines.append(f"Tribute resisted (抗贡): {seats.label(seat)} showed {zlj_cards(jokers)}")
    if view.tribute_pool:
        lines.append(f"Cards to choose from: {zlj_cards(view.tribute_pool)}")
    if view.phase in TRIBUTE_PHASES:
        for t in view.tribute:
            lines.append(f"Tribute: {seats.label(t.receiver)} took {zlj_cards(t.cards)} from {seats.label(t.giver)}")
        for t in view.returned:
            lines.append(f"Returned: {seats.label(t.giver)} returned {zlj_cards(t.cards)} to {seats.label(t.receiver)}")
    if view.previous is not None:
        p = view.previous
        caught = f"; caught {seats.listing(p.caught)}" if p.caught else ""
        lines += wrapped(
            "Last deal: ",
            f"{OUTCOME_WORDS[p.outcome.value]}{team_points_why(p.outcome.value)}; finishing order "
            f"{seats.listing(p.order, 'then')}{caught}",
        )
    if view.results:
        scores = ", ".join(f"{seats.short(s)} {p:+d}" for s, p in enumerate(view.individual))
        lines += wrapped(
            "Match so far: ",
            f"team points A {view.team_points[0]}, B {view.team_points[1]}; individual points {scores}",
        )
    return lines


def _who(seat: int | None, seats: Seats) -> str:
    return "nobody" if seat is None else seats.label(seat)


def tractor_table(view: TractorView, seats: Seats) -> list[str]:
    """The 拖拉机 table: levels, dealer, trump, bidding (only the viewer's own concealed bid), the trick, points."""
    lines = [f"== 拖拉机 · deal {view.deal} · {TRACTOR_PHASES.get(view.phase, view.phase.value)} =="]
    level = tractor_level_rank(view)
    seated = TRACTOR.seats
    lines.append(
        f"Levels: {seats.team(0, seated)} {level_name(view.levels[0])}, "
        f"{seats.team(1, seated)} {level_name(view.levels[1])}"
    )
    declared = view.trump is not None and view.phase not in TRACTOR_BEFORE_DEAL
    trump = f", trump {SUIT_WORDS[view.trump]}" if declared and view.trump is not None else ", trump not declared yet"
    dealer_seat = tractor_dealer(view)
    dealer = f"Dealer {seats.label(dealer_seat)}" if dealer_seat is not None else "Dealer not known yet"
    lines.append(f"{dealer}; level rank {'10' if level is Rank.TEN else level.symbol}{trump}")
    if view.flipped is not None and view.phase in (tractor_model.Phase.BID, tractor_model.Phase.COUNTER):
        lines.append(f"Flipped card: {format_cards([view.flipped])} (a first-deal bid must show a copy of it)")
    width = max(len(seats.label(s)) for s in range(len(view.hand_sizes)))
    for s, size in enumerate(view.hand_sizes):
        if view.phase in TRACTOR_BEFORE_DEAL:  # the finished deal's hands are not this deal's
            lines.append(f"  {seats.label(s):<{width}}  {'<- to cut' if s == view.turn else ''}".rstrip())
            continue
        notes = []
        if view.phase in (tractor_model.Phase.BID, tractor_model.Phase.COUNTER):
            notes.append("has acted" if s in view.acted else "")
        if s == view.turn:
            notes.append("<- to act")
        held = f"{size:>2} {'card' if size == 1 else 'cards'}"
        lines.append(f"  {seats.label(s):<{width}}  {held}  {', '.join(n for n in notes if n)}".rstrip())
    if view.my_bid is not None:
        b = view.my_bid
        shown = f"{format_cards(b.cards)} ({card_count(b.count, 'level card')})"
        lines.append(f"Your concealed bid: {SUIT_WORDS[b.suit]} with {shown}")
    if view.bid is not None:
        b = view.bid
        shown = card_count(b.count, "level card")
        lines.append(f"Winning bid: {seats.label(b.seat)}, {SUIT_WORDS[b.suit]} with {shown}")
    if view.counter is not None:
        b = view.counter
        shown = card_count(b.count, "level card")
        lines.append(f"Winning counter: {seats.label(b.seat)}, {SUIT_WORDS[b.suit]} with {shown}")
    if view.dealer is not None and view.phase is tractor_model.Phase.PLAY:
        attackers = seats.team(1 - view.dealer % 2, seated)
        played = card_count(len(view.tricks), "trick")
        lines.append(f"Attackers: {attackers}, {attackers_progress(view.attackers_points)}; {played} played")
    if view.trick is not None:
        t = view.trick
        plays = [
            f"{seats.label((t.leader + i) % TRACTOR.seats)}: {tractor_cards(view, p)}" for i, p in enumerate(t.plays)
        ]
        lines += wrapped("Trick: ", f"{tractor_combo_words(t.lead, t.plays[0])} led; " + "; ".join(plays))
    elif view.phase is tractor_model.Phase.PLAY and view.turn is not None:
        lines.append(f"New trick: {'you lead' if view.turn == seats.me else _who(view.turn, seats) + ' leads'}.")
    if view.settlement is not None and view.phase is not tractor_model.Phase.PLAY:
        st = view.settlement
        words = settlement_words(st.attackers_points, st.winner, st.levels_up)
        lines += wrapped(
            "Last deal: ", f"attackers {st.attackers_points} points: {words}; next dealer {seats.label(st.next_dealer)}"
        )
    return lines


def attackers_progress(points: int) -> str:
    """``120 points of the 240 they need to take the deal`` (§9)."""
    return f"{points} points of the {TAKE_DEAL} they need to take the deal"


def level_count(n: int) -> str:
    """``1 level``, ``no level``, ``3 levels``."""
    return "no level" if n == 0 else f"{n} level{'s' if n != 1 else ''}"


def _band(points: int) -> str:
    """The row of §9's table an attackers' score below 240 falls in."""
    if points <= 0:
        return "0, a clean sweep 大光" if points == 0 else "below 0: 5, and one more for each 60 below 0"
    low = points // BAND * BAND
    return f"{max(low, 1)}-{low + BAND - 1}"


def settlement_words(points: int, winner: str, levels_up: int, capped_at: int | None = None) -> str:
    """Why a 拖拉机 deal settled as it did, in the words of §9: who takes or keeps the deal, and why it is worth
    ``levels_up`` levels (0 for attackers who took the deal with 240-299 points). ``capped_at``: the levels the
    winners actually went up when D-TR-1 stopped the gain at A."""
    if (Side(winner), levels_up) != levels_gained(points):
        why = f"劳改: the {winner} chose to go up {level_count(levels_up)} (§11)"
    elif Side(winner) is Side.ATTACKERS:
        why = f"the attackers take the deal (上台, {TAKE_DEAL} or more) "
        if levels_up == 0:
            why += (
                f"but go up no level: each full {BAND} points above {TAKE_DEAL} is a level, "
                f"so the first is at {TAKE_DEAL + BAND} (§9)"
            )
        else:
            why += f"and go up {level_count(levels_up)}, one for each full {BAND} points above {TAKE_DEAL} (§9)"
    else:
        why = (
            f"the attackers took fewer than the {TAKE_DEAL} needed, so the defenders keep the deal (连庄) "
            f"and go up {level_count(levels_up)} ({_band(points)} points, §9)"
        )
    if capped_at is not None and capped_at < levels_up:
        why += f"; gains stop at A (D-TR-1), so {level_count(capped_at)} taken"
    return why


NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
UNIT_WORDS = {1: "single cards", 2: "pairs", 3: "triples", 4: "fours", 5: "fives", 6: "sixes"}
"""Groups of identical cards by their size: a tractor of three *pairs*, a special tractor of two *triples*."""


def _number(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def class_words(suit_class: int) -> str:
    """``spades`` .. ``diamonds``, or ``trumps``."""
    return "trumps" if suit_class == TRUMP else CLASS_NAMES[suit_class]


def tractor_shape_words(kind: tractor_combos.Kind, unit: int, units: int) -> str:
    """A 拖拉机 combination's shape in words (§4): ``a pair``, ``a 4-card bomb``, ``a tractor of three pairs``."""
    if kind is tractor_combos.Kind.SINGLE:
        return "a single card"
    if kind is tractor_combos.Kind.BOMB:
        return f"a {unit}-card bomb"
    if kind is tractor_combos.Kind.TRACTOR:
        return f"a tractor of {_number(units)} pairs"
    if kind is tractor_combos.Kind.SPECIAL_TRACTOR:
        return f"a special tractor of {_number(units)} {UNIT_WORDS.get(unit, f'groups of {unit}')}"
    return f"a {kind.value}"


def tractor_combo_words(combo: tractor_combos.Combo, cards: Sequence[Card] = ()) -> str:
    """A 拖拉机 combination in words: ``a pair of spades``, ``a tractor of three pairs in hearts``, ``the big
    joker`` (a single joker, when its ``cards`` are given)."""
    if combo.kind is tractor_combos.Kind.SINGLE and len(cards) == 1 and SUIT_OF[cards[0]] is None:
        return JOKER_NAMES[RANK_OF[cards[0]]]
    shape = tractor_shape_words(combo.kind, combo.unit, combo.units)
    if combo.kind is tractor_combos.Kind.SINGLE:
        shape = "a single card"
    linked = combo.kind in (tractor_combos.Kind.TRACTOR, tractor_combos.Kind.SPECIAL_TRACTOR)
    return f"{shape} {'in' if linked else 'of'} {class_words(combo.suit_class)}"


def card_count(n: int, what: str = "card") -> str:
    """``1 card``, ``2 cards`` (``what``: ``level card``, ``trick``...)."""
    return f"{n} {what}{'s' if n != 1 else ''}"


# --- following a 拖拉机 lead (§6) ---------------------------------------------------------------------


@dataclass(frozen=True)
class FollowOwed:
    """What a 拖拉机 follow owes (§6), as the engine's turn says it (``Turn.tractor_follow``): ``count``
    cards; ``must_include`` one realisation of what the seat's cards of the led class (``suit_cards``) must give,
    then ``free`` more (of the class when ``free_of_suit``); ``exact`` when the seat holds no more of the class than
    the lead's count; ``pattern`` names the priority row or D-TR-5 realisation that applies."""

    count: int
    suit_class: int
    suit_cards: tuple[Card, ...]
    must_include: tuple[Card, ...]
    exact: bool
    free: int
    free_of_suit: bool
    pattern: str


PATTERN_PARTS = {
    "P": ("a pair", "pairs"),
    "T": ("a triple", "triples"),
    "B4": ("a 4-card bomb", "4-card bombs"),
    "B5": ("a 5-card bomb", "5-card bombs"),
    "B6": ("a 6-card bomb", "6-card bombs"),
    "TR2": ("a tractor of two pairs", "tractors of two pairs"),
    "TR3": ("a tractor of three pairs", "tractors of three pairs"),
    "TR4": ("a tractor of four pairs", "tractors of four pairs"),
    "ST3×2": ("a special tractor of two triples", "special tractors of two triples"),
    "(TR2|B4)": ("a tractor of two pairs or a 4-card bomb", "tractors of two pairs or 4-card bombs"),
}
"""The parts of the follow patterns of tractor.md §6 (``P`` a pair, ``T`` a triple, ``Bn`` an n-bomb, ``TRk`` a
tractor of k pairs, ``ST3×2`` a special tractor of two triples), in words."""


def pattern_words(pattern: str) -> str:
    """A follow pattern of §6 in words: ``P x x`` -> ``a pair and 2 more cards``, ``x×6`` -> ``any 6 cards``,
    ``B4 P`` -> ``a 4-card bomb and a pair``; a D-TR-5 realisation (``a 6-card structure + a group of 2``) ->
    ``a tractor or bomb of 6 cards and a pair``."""
    if "structure" in pattern or "group of" in pattern:
        return _realisation_words(pattern)
    parts: dict[str, int] = {}
    loose = 0
    for token in pattern.replace("x x", "x×2").split():
        if token.startswith("x"):
            loose += int(token.split("×")[1]) if "×" in token else 1
        else:
            parts[token] = parts.get(token, 0) + 1
    words = [
        PATTERN_PARTS[t][0] if n == 1 else f"{_number(n)} {PATTERN_PARTS[t][1]}" if t in PATTERN_PARTS else t
        for t, n in parts.items()
    ]
    if not words:
        return f"any {card_count(loose)}"
    if loose:
        words.append(f"{'1 more card' if loose == 1 else f'{loose} more cards'}")
    return listed(words)


def _realisation_words(text: str) -> str:
    """A D-TR-5 realisation of the rules core (``a 6-card structure + a group of 2``) in words."""
    words = []
    for part in text.split(" + "):
        found = re.fullmatch(r"an? (\d+)-card structure", part)
        group = re.fullmatch(r"a group of (\d+)", part)
        if found:
            words.append(f"a tractor or bomb of {found.group(1)} cards")
        elif group:
            n = int(group.group(1))
            words.append({2: "a pair", 3: "a triple"}.get(n, f"{n} identical cards"))
        else:
            words.append(part)
    return listed(words)


def plain_reason(reason: str) -> str:
    """A 拖拉机 refusal with the rules core's shorthand put in words: ``follow a pair of spades with P of spades,
    which you hold (priority: P, §6)`` -> ``… with a pair of spades, which you hold (the first of: a pair, §6)``;
    ``a 6-card structure + a group of 2`` -> ``a tractor or bomb of 6 cards and a pair``."""

    def row(m: re.Match[str]) -> str:
        priority = " → ".join(pattern_words(p) for p in m.group(3).split(" → "))
        owed = pattern_words(m.group(1))
        return f"with {owed} of {m.group(2)}, which you hold (the first your hand allows of: {priority}, §6)"

    text = re.sub(r"with (.+?) of (\w+), which you hold \(priority: (.+?), §6\)", row, reason)
    text = re.sub(r"\ba (\d)-bomb of", r"a \1-card bomb of", text)
    text = re.sub(
        r"\ba (tractor|special tractor) of (\d+) units of (\d+) in",
        lambda m: tractor_shape_words(tractor_combos.Kind(m.group(1)), int(m.group(3)), int(m.group(2))) + " in",
        text,
    )
    return re.sub(
        r"(?:an? \d+-card structure|a group of \d+)(?: \+ (?:an? \d+-card structure|a group of \d+))*",
        lambda m: _realisation_words(m.group(0)),
        text,
    )


def shape_parts(cards: Sequence[Card], trumps: Trumps) -> list[tuple[tuple[Card, ...], str]]:
    """Cards of one suit class split into the combinations they hold, each with its shape in words: a tractor (or
    special tractor) for linked groups of the same size, else a pair, a triple, a bomb, single cards."""
    try:
        combo = tractor_combos.classify(cards, trumps)
        return [(tuple(sort_cards(cards, trumps.order_key)), tractor_shape_words(combo.kind, combo.unit, combo.units))]
    except IllegalAction:
        pass
    counts = Counter(cards)
    distinct = sorted(counts, key=trumps.order_key)
    used: set[Card] = set()
    parts: list[tuple[tuple[Card, ...], str]] = []
    for c in distinct:
        if c in used:
            continue
        run = [c]
        while counts[c] >= 2:
            nxt = next(
                (
                    d
                    for d in distinct
                    if d not in used and d not in run and counts[d] == counts[c] and trumps.adjacent(run[-1], d)
                ),
                None,
            )
            if nxt is None:
                break
            run.append(nxt)
        group = tuple(d for d in run for _ in range(counts[c]))
        try:
            combo = tractor_combos.classify(group, trumps)
        except IllegalAction:
            run = [c]
            group = (c,) * counts[c]
            combo = tractor_combos.classify(group, trumps)
        used.update(run)
        parts.append((group, tractor_shape_words(combo.kind, combo.unit, combo.units)))
    return parts


PLURALS = {"a single card": "single cards", "a pair": "pairs", "a triple": "triples"}


def _plural(shape: str) -> str:
    """``a pair`` -> ``pairs``, ``a 4-card bomb`` -> ``4-card bombs``, ``a tractor of two pairs`` -> ``tractors of
    two pairs``."""
    if shape in PLURALS:
        return PLURALS[shape]
    words = shape.split(" ", 1)[1].split(" ")
    for i, word in enumerate(words):
        if word in ("bomb", "tractor"):
            words[i] = word + "s"
            break
    return " ".join(words)


def _parts_words(view: TractorView, parts: Sequence[tuple[tuple[Card, ...], str]]) -> str:
    """The parts of a follow, largest first, like parts together: ``a tractor of three pairs (7S 7S 8S 8S 9S 9S)
    and two pairs (4S 4S, KS KS)``."""
    shapes: dict[str, list[str]] = {}
    for cards, shape in sorted(parts, key=lambda p: -len(p[0])):
        shapes.setdefault(shape, []).append(tractor_cards(view, cards))
    words = []
    for shape, groups in shapes.items():
        if not shape:
            words.append(", ".join(groups))
        elif len(groups) == 1:
            words.append(f"{shape} ({groups[0]})")
        else:
            words.append(f"{_number(len(groups))} {_plural(shape)} ({', '.join(groups)})")
    return listed(words)


def _more(n: int, cls: str | None) -> str:
    """``2 more spades``, ``1 more card of any suit``."""
    if cls is None:
        return f"{n} more card{'s' if n != 1 else ''} of any suit"
    return f"{n} more {cls}" if n != 1 else f"1 more card of {cls}"


def tractor_follow_lines(view: TractorView, owed: FollowOwed) -> list[str]:
    """What a follower owes now (§6), in plain words, from the engine's requirement: the lead, the cards of its
    suit the player holds, what they must include, and how to type a follow."""
    trumps = tractor_trumps(view)
    trick = view.trick
    n, cls = owed.count, class_words(owed.suit_class)
    lead = tractor_combo_words(trick.lead, trick.plays[0]) if trick is not None else f"the lead ({card_count(n)})"
    held = len(owed.suit_cards)
    if owed.exact:  # no more of the class than the lead's count: all of them, and any others (§6.1)
        if held == 0:
            owes = f"you have no {cls}, so play any {card_count(n)} (§6.1)."
        elif owed.free == 0:
            owes = f"you hold just {card_count(held)} of {cls}: play {'it' if held == 1 else 'them all'} (§6.1)."
        else:
            owes = (
                f"you hold only {card_count(held)} of {cls}: play {'it' if held == 1 else 'them all'} "
                f"and {_more(owed.free, None)} (§6.1)."
            )
    elif n == 1:
        owes = f"you hold {cls}, so play one of them (§6.2)."
    else:
        owes = f"you hold more than {card_count(n)} of {cls}, so your {n} cards must all be {cls}"
        if owed.must_include:
            parts = shape_parts(owed.must_include, trumps) if trumps is not None else [(owed.must_include, "")]
            named = _parts_words(view, parts)
            owes += (
                f" and include {named}, plus any {owed.free} more of your {cls}" if owed.free else f" and make {named}"
            )
        owes += " (§6.2)."
        if "structure" in owed.pattern or "group of" in owed.pattern:
            owes += " That is the best your hand allows, from the longest tractor down (D-TR-5)."
        elif trick is not None and (trick.lead.kind, trick.lead.size) in PATTERN_NAMES:
            rows = PATTERN_NAMES[(trick.lead.kind, trick.lead.size)]
            if owed.pattern in rows and rows.index(owed.pattern) > 0:
                order = " → ".join(pattern_words(r) for r in rows[: rows.index(owed.pattern) + 1])
                owes += f" The order for this lead is {order}: the first your {cls} allow is owed."
    lines = wrapped("", f"You must follow {lead} with {card_count(n)}: {owes}")
    if held:
        lines += wrapped(f"Your {cls} ({held}): ", tractor_cards(view, owed.suit_cards))
    how = "the card you play" if n == 1 else f"the {n} cards you play, at once or a few at a time (c starts again)"
    lines += wrapped("", f"Type {how}, or 1 for the follow offered.")
    return lines


@dataclass(frozen=True)
class Composed:
    """The cards chosen so far for a 拖拉机 follow, fewer than the lead's count."""

    cards: tuple[Card, ...]
    message: str


def compose(
    chosen: Sequence[Card], typed: Sequence[Card], owed: FollowOwed, hand: Sequence[Card]
) -> Composed | Problem | tuple[Card, ...]:
    """Add typed cards to a follow being composed: the whole follow once it has the lead's count (the engine
    judges it), the cards so far while it has fewer, or a problem (more cards than the lead's, a card not held)."""
    cards = (*chosen, *typed)
    missing = Counter(cards) - Counter(hand)
    if missing:
        held = Counter(hand)
        have = ", ".join(f"{held[c]} × {format_cards([c])}" if held[c] else f"no {format_cards([c])}" for c in missing)
        return Problem(f"You do not hold {format_cards(cards)}: your hand has {have}.")
    if len(cards) >= owed.count and not chosen:
        return cards  # typed at once: the engine judges it, a wrong count too
    if len(cards) > owed.count:
        return Problem(
            f"That makes {card_count(len(cards))}; the lead has {owed.count}. Chosen so far: "
            f"{format_cards(chosen)}; type {owed.count - len(chosen)} more, or c to start again."
        )
    if len(cards) == owed.count:
        return cards
    left = owed.count - len(cards)
    return Composed(cards, f"Chosen so far: {format_cards(cards)}. Type {left} more (c starts again).")


def zlj_prompt_hint(view: ZljView) -> str:
    """What the player is asked to do now, in words."""
    if view.phase is zlj_model.Phase.CUT:
        return f"Cut the deck (搬牌): type how many cards to move from top to bottom, 1..{ZLJ_CUT_MAX}."
    if view.phase is zlj_model.Phase.PICK:
        return "Pick your tribute cards (进贡) from the pool."
    if view.phase is zlj_model.Phase.RETURN:
        return "Return cards of rank 5..Q (还贡) for the tribute you received."
    if view.phase is zlj_model.Phase.TAKE_BACK:
        return "Take back returned cards from the pool."
    if view.current is None:
        return "You lead: play any combination."
    return "Beat the play or pass."


def tractor_waiting(view: TractorView) -> str | None:
    """What a seat with nothing to do waits for in the phases when no one seat is to act (``None``: the others)."""
    if view.phase is tractor_model.Phase.BID:
        return "Waiting for the other seats' concealed bids..."
    if view.phase is tractor_model.Phase.COUNTER:
        return "Waiting for the other team's concealed counters..."
    if view.phase is tractor_model.Phase.FLIP:  # before the first deal, or after a first deal nobody bid on
        if view.deal == 0:
            return "Waiting for the first deal (the seats' shares of the shuffle, then the flip)..."
        return "Nobody bid: waiting for the deal to be dealt again..."
    return None


def tractor_prompt_hint(view: TractorView) -> str:
    if view.phase is tractor_model.Phase.CUT:
        return f"Cut the deck: type how many cards to move from top to bottom, 1..{TRACTOR_CUT_MAX}."
    if view.phase is tractor_model.Phase.BID:
        return "Concealed bid (暗叫): bid a suit by showing level cards, or pass. Nobody sees it before the reveal."
    if view.phase is tractor_model.Phase.COUNTER:
        return "Counter (反): show more level cards than the winning bid, or pass."
    if view.phase is tractor_model.Phase.REFORM:
        return "Choose your team's remedy for the other team's 劳改."
    if view.trick is not None:
        lead = tractor_combo_words(view.trick.lead, view.trick.plays[0])
        return f"Follow {lead}: play {card_count(view.trick.lead.size)}."
    return "You lead: play one combination (no throws)."


# --- the turn timer ------------------------------------------------------------------------------------

COUNTDOWN_WARNINGS = (60, 30, 10, 5)
"""Seconds left at which a running turn timer is told (those below the timer's own length)."""


def turn_deadline(deadline: float | None, recorded_at: float | None, received_at: float) -> float | None:
    """When the player's turn runs out, in this machine's time: the turn's ``deadline`` as the engine's Watch stream
    sends it (``Turn.deadline``, by the engine's clock; ``None``: nothing runs out), which the engine counts from its
    game's last event (the envelope's ``recorded_at``; it arrived here at ``received_at``). The time it leaves is
    counted from the earlier of the recorded time and the arrival, so that a clock running behind the engine's never
    shows more time than there is (``recorded_at`` unknown: the deadline as it is)."""
    if deadline is None:
        return None
    if recorded_at is None:
        return deadline
    return min(recorded_at, received_at) + (deadline - recorded_at)


def delayed_words(moves: int) -> str:
    """What a spectator of a delayed table is told once, as the web view says "Delayed by n moves"
    (docs/rules/spectators.md, D-SPEC-2): each turn comes ``moves`` moves late, its deadline already passed, so none
    is counted down."""
    behind = f"{moves} {'move' if moves == 1 else 'moves'}"
    return f"Delayed by {behind}: this table's spectators see its game {behind} behind."


def countdown(left: float | None) -> str:
    """The prompt's status while a turn timer runs: ``[12 s left] ``; nothing without a timer."""
    return "" if left is None else f"[{max(0, math.ceil(left))} s left] "


def countdown_warning(left: float, turn_seconds: int, told: set[int]) -> str | None:
    """The line to print as the time left crosses a warning (`COUNTDOWN_WARNINGS`), once each: ``told`` keeps
    the warnings given, and forgets those above the time left when the deadline moved later."""
    told.difference_update({t for t in told if left > t})
    crossed = {t for t in COUNTDOWN_WARNINGS if t < turn_seconds and left <= t} - told
    if not crossed or left <= 0:
        return None
    told.update(crossed)
    return f"  {math.ceil(left)} s left to move, then the engine moves for you."


# --- reading what the player types --------------------------------------------------------------------


@dataclass(frozen=True)
class Act:
    """Send this command."""

    command: Any
    text: str


@dataclass(frozen=True)
class Problem:
    """The line cannot be acted on; tell the player why."""

    message: str


@dataclass(frozen=True)
class Command:
    """A client command: ``quit``, ``help``, ``table``, ``more`` (the next page of options), ``clear`` (a follow
    being composed) or ``nothing`` (an empty line)."""

    name: str


Intent = Act | Problem | Command

QUIT_WORDS = {"q", "quit", "exit"}
HELP_WORDS = {"h", "help", "?"}
TABLE_WORDS = {"t", "table"}
MORE_WORDS = {"m", "more"}
CLEAR_WORDS = {"c", "clear"}
PASS_WORDS = {"p", "pass"}


def client_command(text: str) -> Command | None:
    """The client commands that work at any time (also while others are to act)."""
    word = text.strip().lower()
    if not word:
        return Command("nothing")
    if word in QUIT_WORDS:
        return Command("quit")
    if word in HELP_WORDS:
        return Command("help")
    if word in TABLE_WORDS:
        return Command("table")
    if word in MORE_WORDS:
        return Command("more")
    if word in CLEAR_WORDS:
        return Command("clear")
    return None


def interpret(text: str, seat: int, options: Sequence[Option], actions: Sequence[Any], phase: Any) -> Intent:
    """What a typed line asks for: an option number, typed cards, ``p``/``pass``, a cut count, or a client
    command. Cards are sent as typed (the engine judges them and explains a refusal); a card the notation
    does not know is explained here."""
    found = client_command(text)
    if found is not None:
        return found
    word = text.strip()
    cuts = cut_range(actions)
    if cuts is not None:
        if not word.isdigit() or not cuts[0] <= int(word) <= cuts[1]:
            return Problem(f"Type how many cards to cut: a number from {cuts[0]} to {cuts[1]}.")
        count = int(word)
        cut = next(a for a in actions if isinstance(a, zlj_model.Cut | tractor_model.Cut))
        return Act(type(cut)(seat, count, 0), f"cut {count}")
    if word.isdigit():
        n = int(word)
        if not 1 <= n <= len(options):
            return Problem(f"There is no option {n}: choose 1..{len(options)}, or type cards.")
        option = options[n - 1]
        return Act(option.command, option.label)
    if word.lower() in PASS_WORDS:
        passes = [o for o in options if isinstance(o.command, zlj_model.Pass | tractor_model.Pass)]
        if passes:
            return Act(passes[0].command, passes[0].label)
        if isinstance(phase, zlj_model.Phase) and phase is zlj_model.Phase.PLAY:
            return Act(zlj_model.Pass(seat), "pass")  # the engine explains why not (a leader must play)
        return Problem("You cannot pass now.")
    try:
        cards = parse_cards(word)
    except CardSyntaxError as e:
        return Problem(f"{e.reason}. Type `h` for help.")
    return _typed(seat, cards, word, actions, phase)


def _typed(seat: int, cards: tuple[Card, ...], text: str, actions: Sequence[Any], phase: Any) -> Intent:
    """The command typed cards stand for in this phase."""
    shown = " ".join(text.upper().split())
    if isinstance(phase, zlj_model.Phase):
        kinds: dict[zlj_model.Phase, Any] = {
            zlj_model.Phase.PLAY: zlj_model.Play,
            zlj_model.Phase.PICK: zlj_model.PickTribute,
            zlj_model.Phase.RETURN: zlj_model.ReturnTribute,
            zlj_model.Phase.TAKE_BACK: zlj_model.TakeBack,
        }
        kind = kinds.get(phase)
        if kind is None:
            return Problem("Cards are not what this step asks for; choose an option by its number.")
        return Act(kind(seat, cards), shown)
    if phase is tractor_model.Phase.PLAY:
        return Act(tractor_model.Play(seat, cards), shown)
    if phase in (tractor_model.Phase.BID, tractor_model.Phase.COUNTER):
        for a in actions:
            if isinstance(a, tractor_model.MakeBid | tractor_model.Counter) and sorted(a.cards) == sorted(cards):
                return Act(a, shown)
        suits = [SUIT_OF[c] for c in cards if SUIT_OF[c] is not None and RANK_OF[c] not in (Rank.TWO,)]
        if not suits:
            return Problem("A bid shows level cards of the suit you bid; type them, e.g. `3H 3H`.")
        suit = max(set(suits), key=suits.count)
        assert suit is not None
        kind2: Any = tractor_model.Counter if phase is tractor_model.Phase.COUNTER else tractor_model.MakeBid
        return Act(kind2(seat, suit, cards), shown)
    return Problem("Cards are not what this step asks for; choose an option by its number.")


def same_options(a: Sequence[Option], b: Sequence[Option]) -> bool:
    return [o.command for o in a] == [o.command for o in b]


__all__ = [
    "HELP",
    "PROMPT",
    "PROMPT_AGAIN",
    "Act",
    "Command",
    "Intent",
    "Option",
    "Problem",
    "Seats",
    "card_count",
    "client_command",
    "cut_range",
    "interpret",
    "option_lines",
    "option_pages",
    "same_options",
    "tractor_cards",
    "tractor_hand",
    "tractor_options",
    "tractor_order",
    "tractor_prompt_hint",
    "tractor_table",
    "tractor_waiting",
    "wrapped",
    "zlj_cards",
    "zlj_hand",
    "zlj_options",
    "zlj_prompt_hint",
    "zlj_table",
]
