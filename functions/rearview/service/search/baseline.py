"""What a query's cosine to unrelated text is: the vector channel's per-query, per-script zero.

Embedders score unrelated texts far above 0 (e5: 0.75-0.9), and how far depends on the query
(its length, its wording, its language against the memory's): no fixed cosine floor separates a
cross-lingual answer (0.81 on the small-tenant set) from the best of nothing relevant (0.84). The
candidates' own spread is no reference either: 5 candidates have none. So each query is also
scored against `BACKGROUND`, a fixed set of everyday statements about no particular subject, in
Latin and in CJK script; the `BASELINE_QUANTILE` of those cosines is what this query scores
against unrelated text in that script, and a memory's vector evidence is how far it rises above
the baseline of its own script (`ranking_policy.RankingPolicy.vector_span`). The same for 5 memories as
for 500, and computed without reading the tenant.

The background is embedded once per embedder (lazily, on the first search) as documents, the way
memories are; each query then costs one small matrix product.
"""

from __future__ import annotations

import threading

from rearview.ports import Embedder, Vector, query_views_of
from rearview.text import is_cjk_text

BACKGROUND_LATIN: tuple[str, ...] = (
    "The meeting was moved to the afternoon.",
    "It rained most of the weekend.",
    "The train was ten minutes late this morning.",
    "Someone left a jacket in the hallway.",
    "The printer on the second floor is out of paper again.",
    "We ordered pizza for the team on Friday.",
    "The neighbours are renovating their kitchen.",
    "The user watched a documentary about whales.",
    "The new bakery on the corner opens at seven.",
    "The battery of the remote control is almost empty.",
    "A package arrived while nobody was home.",
    "The garden needs watering twice a week in summer.",
    "The user thinks the last movie was too long.",
    "There is construction noise outside the office.",
    "The library extended its opening hours.",
    "The user bought new running shoes last month.",
    "The elevator was out of order for two days.",
    "The kids have a school trip next week.",
    "The user found an old photo album in the attic.",
    "Parking near the station is expensive.",
    "The soup was too salty.",
    "The user prefers to take the stairs.",
    "A bird built a nest on the balcony.",
    "The concert tickets sold out in an hour.",
)
BACKGROUND_CJK: tuple[str, ...] = (
    "会议改到了下午。",
    "周末大部分时间都在下雨。",
    "今天早上火车晚点了十分钟。",
    "有人把外套落在了走廊里。",
    "二楼的打印机又没纸了。",
    "周五我们给团队订了披萨。",
    "邻居正在装修厨房。",
    "用户看了一部关于鲸鱼的纪录片。",
    "街角新开的面包店七点开门。",
    "遥控器的电池快没电了。",
    "家里没人的时候到了一个包裹。",
    "夏天花园每周要浇两次水。",
    "用户觉得上一部电影太长了。",
    "办公室外面有施工的噪音。",
    "图书馆延长了开放时间。",
    "用户上个月买了新跑鞋。",
    "电梯坏了两天。",
    "孩子们下周有学校组织的旅行。",
    "用户在阁楼里找到了一本旧相册。",
    "车站附近停车很贵。",
    "汤太咸了。",
    "用户更喜欢走楼梯。",
    "一只鸟在阳台上筑了巢。",
    "演唱会的票一个小时就卖完了。",
)
BACKGROUND: tuple[str, ...] = (*BACKGROUND_LATIN, *BACKGROUND_CJK)
"""The Latin background, then the CJK one: what `Baselines` embeds in one call."""


BASELINE_QUANTILE = 0.9
"""Which of the query's background cosines is its zero: high (one background line may happen to be
related), not the maximum."""


class Baselines:
    """The background's vectors for one embedder, embedded on first use.

    `of(query)`: the query's zero per script; `question_means()`: the mean question per script, what
    `centring.centred` takes out of a query.
    """

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._lock = threading.Lock()
        self._vectors: tuple[Vector, Vector] | None = None
        self._question_means: Vector | None = None

    def of(self, query_vector: Vector) -> tuple[float, float]:
        """(Latin, CJK) baseline cosine of a query: `BASELINE_QUANTILE` of its background cosines.

        Raises what the embedder raises (`EmbedderError`) on the first call if it cannot embed.
        """
        import numpy as np

        latin, cjk = self._background()
        q = np.asarray(query_vector, dtype=np.float32)
        return (
            float(np.quantile(latin @ q, BASELINE_QUANTILE)),
            float(np.quantile(cjk @ q, BASELINE_QUANTILE)),
        )

    def question_means(self) -> Vector:
        """(2, dim): the background's mean `query: ` embedding, Latin (row 0) and CJK (row 1).

        Embedded as document work (`ports.query_views_of`) on the first call; raises what the embedder
        raises (`EmbedderError`) then if it cannot embed.
        """
        import numpy as np

        with self._lock:
            if self._question_means is None:
                latin, cjk = _by_script(query_views_of(self._embedder, BACKGROUND))
                self._question_means = np.stack([latin.mean(axis=0), cjk.mean(axis=0)])
            return self._question_means

    def _background(self) -> tuple[Vector, Vector]:
        with self._lock:
            if self._vectors is None:
                self._vectors = _by_script(self._embedder.embed_documents(list(BACKGROUND)))
            return self._vectors


def _by_script(matrix: Vector) -> tuple[Vector, Vector]:
    """The rows of an embedded `BACKGROUND`: (the Latin ones, the CJK ones)."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    return rows[: len(BACKGROUND_LATIN)], rows[len(BACKGROUND_LATIN) :]


def script_of(content: str) -> int:
    """0 for a memory written mostly in Latin (or other spaced) script, 1 for mostly CJK."""
    return int(is_cjk_text(content))
