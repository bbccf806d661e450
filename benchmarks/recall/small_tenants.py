"""A small-tenant recall set: synthetic users with 30-300 memories, asked the way agents ask.

Most users of a memory service are one person's few dozen to few thousand memories (preferences,
decisions, lessons), asked with short keyword queries and natural questions, sometimes in another
language than the memory. This module builds such users deterministically (no model, no network):

- a topic bank (`TOPICS`): one fact per topic with an English and a Chinese wording, a keyword
  query and a natural question in each language, and values to fill in;
- filler memories (`_filler`): everyday episodic notes in either language that answer none of the
  questions but share the common words ("use", "prefer", 使用, 喜欢) a keyword channel trips on;
- users (`USERS`): a size, a language (`en`, `zh`, `mixed`), a seed, and a split. The topic bank is
  split in two halves: `train` users draw their facts from the first half, `test` users from the
  second, so a constant chosen on `train` is scored on users *and* topics it never saw.

Questions per stored topic: `keyword` and `natural` in the memory's language, `cross` (the natural
question in the other language). Per user: `nothing` questions about topics of its half it did not
store (the right answer is no memory at all), and `superseded` questions about topics whose value
changed (the old memory written first, then the new one with `supersedes`; the old one written
again verbatim afterwards, as an agent replaying its notes does). The expected memory of a
`superseded` question is the new one; the old one in the context counts as irrelevant.

Written before the ranking was tuned (issue 21); `benchmarks/recall/small_tenant_recall.py` scores it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Language = Literal["en", "zh"]
Kind = Literal["keyword", "natural", "cross", "nothing", "superseded"]


@dataclass(frozen=True, slots=True)
class Topic:
    """One fact a user may hold: wordings with a `{v}` slot, the queries that should find it, values."""

    key: str
    en: str
    zh: str
    keyword_en: str
    keyword_zh: str
    question_en: str
    question_zh: str
    values: tuple[str, ...]

    def fact(self, language: Language, value: str) -> str:
        return (self.en if language == "en" else self.zh).format(v=value)

    def keyword(self, language: Language) -> str:
        return self.keyword_en if language == "en" else self.keyword_zh

    def question(self, language: Language) -> str:
        return self.question_en if language == "en" else self.question_zh


TOPICS: tuple[Topic, ...] = (
    # --- first half: the train users' topics ---
    Topic(
        "package_manager",
        "For JavaScript projects the user uses {v} as the package manager.",
        "用户的 JavaScript 项目用 {v} 作为包管理器。",
        "package manager",
        "包管理器",
        "Which package manager should I use to install dependencies?",
        "用户喜欢哪个包管理器？",
        ("pnpm", "yarn", "npm", "bun"),
    ),
    Topic(
        "database",
        "We decided to use {v} as the main database for the billing service.",
        "我们决定计费服务的主数据库使用 {v}。",
        "billing database",
        "计费 数据库",
        "What database does the billing service run on?",
        "计费服务用的是什么数据库？",
        ("PostgreSQL", "MySQL", "CockroachDB", "SQLite"),
    ),
    Topic(
        "editor_theme",
        "The user prefers the {v} color theme in the code editor.",
        "用户在代码编辑器里偏好 {v} 配色主题。",
        "editor theme",
        "编辑器 主题",
        "Which color scheme does the user like for coding?",
        "用户写代码时喜欢什么配色？",
        ("Solarized Dark", "Dracula", "Gruvbox", "One Light"),
    ),
    Topic(
        "coffee",
        "Every morning the user drinks a {v}.",
        "用户每天早上喝一杯{v}。",
        "morning coffee",
        "早上 咖啡",
        "What does the user drink in the morning?",
        "用户早上喝什么？",
        ("flat white", "oat latte", "double espresso", "cold brew"),
    ),
    Topic(
        "pet",
        "The user's cat is called {v}.",
        "用户的猫叫{v}。",
        "cat name",
        "猫 名字",
        "What is the name of the user's pet?",
        "用户的宠物叫什么名字？",
        ("Mochi", "Tofu", "Pixel", "Nian Gao"),
    ),
    Topic(
        "deploy_day",
        "Releases are deployed to production every {v} afternoon.",
        "每周{v}下午把新版本部署到生产环境。",
        "production deploy",
        "部署 生产环境",
        "When do we ship new releases to prod?",
        "什么时候发布上线？",
        ("Tuesday", "Thursday", "Wednesday", "Monday"),
    ),
    Topic(
        "ci_timeout",
        "CI jobs time out after {v} minutes.",
        "持续集成的任务 {v} 分钟后超时。",
        "CI timeout",
        "CI 超时",
        "How long can a build run before it is killed?",
        "构建最多能跑多久？",
        ("45", "30", "60", "20"),
    ),
    Topic(
        "allergy",
        "The user is allergic to {v}.",
        "用户对{v}过敏。",
        "allergy",
        "过敏",
        "Does the user have any food allergies?",
        "用户有什么食物过敏吗？",
        ("peanuts", "shellfish", "gluten", "sesame"),
    ),
    Topic(
        "python_version",
        "The user's services target Python {v}.",
        "用户的服务以 Python {v} 为目标版本。",
        "Python version",
        "Python 版本",
        "Which Python release should new code support?",
        "新代码应该支持哪个 Python 版本？",
        ("3.12", "3.11", "3.13", "3.10"),
    ),
    Topic(
        "timezone",
        "The user works in the {v} time zone.",
        "用户在{v}时区工作。",
        "time zone",
        "时区",
        "What time zone is the user in?",
        "用户在哪个时区？",
        ("Europe/Berlin", "Asia/Shanghai", "America/New_York", "Asia/Tokyo"),
    ),
    Topic(
        "code_review",
        "Every pull request needs {v} approvals before merging.",
        "每个合并请求需要 {v} 个批准才能合并。",
        "pull request approvals",
        "合并请求 批准",
        "How many reviewers must sign off on a PR?",
        "一个 PR 需要几个人审核通过？",
        ("two", "one", "three", "four"),
    ),
    Topic(
        "lesson_migrations",
        "Lesson learned: run {v} before applying database migrations.",
        "经验教训：执行数据库迁移之前先运行 {v}。",
        "migration checklist",
        "迁移 步骤",
        "What must happen before a schema migration?",
        "改表结构之前要先做什么？",
        ("a full backup", "the dry-run check", "pg_dump", "the lock audit"),
    ),
    Topic(
        "meeting_time",
        "The team stand-up is at {v} every weekday.",
        "团队站会在每个工作日 {v} 开始。",
        "stand-up time",
        "站会 时间",
        "When is the daily team meeting?",
        "每天的团队会议几点？",
        ("9:30", "10:00", "9:15", "11:00"),
    ),
    Topic(
        "laptop",
        "The user's work laptop is a {v}.",
        "用户的工作电脑是一台 {v}。",
        "work laptop",
        "工作电脑",
        "What computer does the user work on?",
        "用户用什么电脑办公？",
        ("ThinkPad X1", "MacBook Pro", "Framework 13", "Dell XPS"),
    ),
    Topic(
        "shell",
        "The user's login shell is {v}.",
        "用户的登录 shell 是 {v}。",
        "login shell",
        "shell",
        "Which command-line shell does the user run?",
        "用户的终端用的是哪个 shell？",
        ("zsh", "fish", "bash", "nushell"),
    ),
    Topic(
        "manager",
        "{v} leads the payments team.",
        "{v} 负责支付团队。",
        "payments team lead",
        "支付团队 负责人",
        "Who is in charge of the payments group?",
        "谁管支付组？",
        ("Li Wei", "Maria Lopez", "Sam Okafor", "Anna Berg"),
    ),
    Topic(
        "backup_retention",
        "Backups are kept in cold storage for {v} days.",
        "备份在冷存储里保留 {v} 天。",
        "backup retention",
        "备份 保留",
        "How long are backups stored?",
        "备份会保存多久？",
        ("35", "90", "30", "14"),
    ),
    Topic(
        "diet",
        "The user is {v} and does not eat meat.",
        "用户是{v}，不吃肉。",
        "vegetarian diet",
        "饮食 吃肉",
        "What should I keep in mind when booking dinner for the user?",
        "给用户订晚餐要注意什么？",
        ("vegetarian", "vegan", "pescatarian", "flexitarian"),
    ),
    Topic(
        "cloud_region",
        "Production runs in the AWS region {v}.",
        "生产环境运行在 AWS 的 {v} 区域。",
        "AWS region",
        "AWS 区域",
        "Where are the production servers hosted?",
        "生产服务器部署在哪里？",
        ("eu-central-1", "us-east-1", "ap-southeast-1", "eu-west-2"),
    ),
    Topic(
        "indentation",
        "The team formats code with {v} spaces of indentation.",
        "团队格式化代码时缩进 {v} 个空格。",
        "indentation",
        "缩进",
        "How wide should code be indented?",
        "代码缩进多宽？",
        ("four", "two", "eight", "three"),
    ),
    Topic(
        "language_learning",
        "The user is learning {v} in the evenings.",
        "用户晚上在学{v}。",
        "learning language",
        "学 语言",
        "Which foreign language is the user studying?",
        "用户在学哪门外语？",
        ("Japanese", "Spanish", "German", "Korean"),
    ),
    Topic(
        "vpn",
        "The office VPN client is {v}.",
        "公司的 VPN 客户端是 {v}。",
        "VPN client",
        "VPN 客户端",
        "What do I install to reach the internal network from home?",
        "在家怎么连公司内网？",
        ("WireGuard", "Tailscale", "OpenVPN", "Cisco AnyConnect"),
    ),
    # --- second half: the test users' topics ---
    Topic(
        "test_runner",
        "The project runs its tests with {v}.",
        "项目用 {v} 跑测试。",
        "test runner",
        "测试 框架",
        "Which tool executes the test suite?",
        "测试是用什么工具运行的？",
        ("pytest", "vitest", "jest", "cargo nextest"),
    ),
    Topic(
        "message_queue",
        "We chose {v} as the message broker for order events.",
        "我们选了 {v} 作为订单事件的消息队列。",
        "message broker",
        "消息队列",
        "What carries the order events between services?",
        "订单事件通过什么在服务之间传递？",
        ("Kafka", "RabbitMQ", "NATS", "SQS"),
    ),
    Topic(
        "font",
        "The user likes the {v} font in the terminal.",
        "用户喜欢在终端里用 {v} 字体。",
        "terminal font",
        "终端 字体",
        "Which typeface does the user want for the console?",
        "用户的命令行用什么字体？",
        ("JetBrains Mono", "Fira Code", "Iosevka", "Cascadia Code"),
    ),
    Topic(
        "tea",
        "In the afternoon the user drinks {v} tea.",
        "用户下午喝{v}茶。",
        "afternoon tea",
        "下午 茶",
        "What does the user have to drink after lunch?",
        "用户午饭后喝什么？",
        ("jasmine", "oolong", "green", "rooibos"),
    ),
    Topic(
        "dog",
        "The user's dog is named {v}.",
        "用户的狗叫{v}。",
        "dog name",
        "狗 名字",
        "What is the dog of the user called?",
        "用户家的狗叫什么？",
        ("Biscuit", "Doudou", "Rex", "Luna"),
    ),
    Topic(
        "freeze",
        "There is a code freeze every {v} before the release.",
        "每次发布前的{v}会冻结代码。",
        "code freeze",
        "代码冻结",
        "When are merges blocked before a release?",
        "发布前什么时候不能合并代码？",
        ("Friday", "Thursday", "weekend", "Monday"),
    ),
    Topic(
        "rate_limit",
        "The public API allows {v} requests per minute per key.",
        "公开 API 每个密钥每分钟允许 {v} 次请求。",
        "API rate limit",
        "API 限流",
        "How many calls per minute can a client make?",
        "客户端每分钟最多能调用几次？",
        ("600", "120", "1000", "60"),
    ),
    Topic(
        "seat",
        "On flights the user always books an {v} seat.",
        "坐飞机时用户总是订{v}座位。",
        "flight seat",
        "飞机 座位",
        "Where does the user like to sit on a plane?",
        "用户坐飞机喜欢坐哪里？",
        ("aisle", "window", "exit-row", "front-row"),
    ),
    Topic(
        "node_version",
        "The frontend builds with Node.js {v}.",
        "前端用 Node.js {v} 构建。",
        "Node version",
        "Node 版本",
        "Which Node release does the web app need?",
        "网页应用需要哪个 Node 版本？",
        ("22", "20", "18", "24"),
    ),
    Topic(
        "oncall",
        "{v} is on call for the search cluster this month.",
        "这个月搜索集群的值班人是{v}。",
        "on-call search cluster",
        "值班 搜索集群",
        "Who do I page when search goes down?",
        "搜索挂了找谁？",
        ("Chen Jing", "Tom Novak", "Priya Shah", "Lars Holm"),
    ),
    Topic(
        "log_retention",
        "Application logs are retained for {v} days.",
        "应用日志保留 {v} 天。",
        "log retention",
        "日志 保留",
        "For how long do we keep logs?",
        "日志会存多久？",
        ("7", "30", "14", "180"),
    ),
    Topic(
        "sport",
        "The user plays {v} on weekends.",
        "用户周末打{v}。",
        "weekend sport",
        "周末 运动",
        "What sport does the user do?",
        "用户做什么运动？",
        ("badminton", "tennis", "basketball", "table tennis"),
    ),
    Topic(
        "container_runtime",
        "Local development uses {v} to run containers.",
        "本地开发用 {v} 运行容器。",
        "container runtime",
        "容器 运行",
        "What do developers use for containers on their laptops?",
        "开发者在电脑上用什么跑容器？",
        ("Podman", "Docker Desktop", "OrbStack", "colima"),
    ),
    Topic(
        "lesson_flaky",
        "Lesson learned: the flaky checkout test fails when {v}.",
        "经验教训：结账测试在{v}时会不稳定地失败。",
        "flaky checkout test",
        "结账测试 失败",
        "Why does the checkout test sometimes break?",
        "结账那个测试为什么有时候挂？",
        (
            "the cache is cold",
            "two workers share a port",
            "the clock crosses midnight",
            "the mock server is slow",
        ),
    ),
    Topic(
        "city",
        "The user lives in {v}.",
        "用户住在{v}。",
        "home city",
        "住 城市",
        "Which city is the user based in?",
        "用户住在哪个城市？",
        ("Hangzhou", "Lisbon", "Toronto", "Munich"),
    ),
    Topic(
        "keyboard",
        "The user types on a {v} keyboard layout.",
        "用户用 {v} 键盘布局打字。",
        "keyboard layout",
        "键盘 布局",
        "Which key arrangement does the user type with?",
        "用户打字用什么键位？",
        ("Colemak", "Dvorak", "QWERTZ", "Workman"),
    ),
    Topic(
        "branch",
        "Feature branches are merged into {v}.",
        "功能分支合并到 {v} 分支。",
        "merge branch",
        "合并 分支",
        "Which branch do features go to?",
        "新功能合到哪个分支？",
        ("main", "develop", "trunk", "next"),
    ),
    Topic(
        "budget",
        "The monthly cloud budget is {v} dollars.",
        "每月的云预算是 {v} 美元。",
        "cloud budget",
        "云 预算",
        "How much can we spend on hosting each month?",
        "每个月服务器能花多少钱？",
        ("5000", "12000", "800", "30000"),
    ),
    Topic(
        "music",
        "While coding the user listens to {v}.",
        "用户写代码时听{v}。",
        "coding music",
        "听 音乐",
        "What does the user put on while programming?",
        "用户编程的时候听什么？",
        ("lo-fi beats", "jazz", "classical piano", "film scores"),
    ),
    Topic(
        "secret_store",
        "Secrets are stored in {v}.",
        "密钥存放在 {v} 里。",
        "secrets storage",
        "密钥 存放",
        "Where do we keep passwords and API tokens?",
        "密码和令牌放在哪里？",
        ("Vault", "AWS Secrets Manager", "1Password", "SOPS files"),
    ),
)
HALF = len(TOPICS) // 2


_DAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DAYS_ZH = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
_PEOPLE = ("Anna", "Ben", "Chen", "Dana", "Emil", "Fatima", "Goro", "Hana", "Ivan", "Julia")
_PLACES_EN = (
    "the park",
    "the library",
    "a noodle shop",
    "the train station",
    "the gym",
    "a bookshop",
    "the market",
    "a bakery",
)
_PLACES_ZH = ("公园", "图书馆", "面馆", "火车站", "健身房", "书店", "菜市场", "面包店")
_ACTS_EN = (
    "used a map app to find",
    "met {p} at",
    "walked with {p} to",
    "preferred to wait at",
    "used the phone to call {p} from",
    "liked the new bench at",
    "talked to {p} about plans near",
    "lost an umbrella at",
    "took photos at",
    "bought a gift for {p} at",
)
_ACTS_ZH = (
    "用手机地图找到了",
    "和{p}在这里见面：",
    "和{p}一起走到了",
    "喜欢在这里等人：",
    "用电话联系了{p}，地点是",
    "喜欢新装的长椅，在",
    "和{p}聊了计划，在",
    "把伞忘在了",
    "拍了照片，在",
    "给{p}买了礼物，在",
)


def _filler(rng: random.Random, language: Language, n: int) -> list[str]:
    """`n` distinct everyday notes that answer none of the questions (common words on purpose)."""
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        day, act, person = rng.randrange(7), rng.randrange(len(_ACTS_EN)), rng.choice(_PEOPLE)
        place = rng.randrange(len(_PLACES_EN))
        if language == "en":
            text = f"On {_DAYS_EN[day]} the user {_ACTS_EN[act].format(p=person)} {_PLACES_EN[place]}."
        else:
            text = f"{_DAYS_ZH[day]}用户{_ACTS_ZH[act].format(p=person)}{_PLACES_ZH[place]}。"
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


@dataclass(frozen=True, slots=True)
class User:
    name: str
    size: int
    language: Literal["en", "zh", "mixed"]
    seed: int
    split: Literal["train", "test"]


USERS: tuple[User, ...] = (
    User("ada", 30, "en", 1, "train"),
    User("bo", 60, "zh", 2, "train"),
    User("cyd", 120, "mixed", 3, "train"),
    User("dee", 300, "en", 4, "train"),
    User("eli", 45, "mixed", 5, "train"),
    User("fan", 200, "zh", 6, "train"),
    User("gus", 35, "zh", 7, "test"),
    User("hu", 80, "en", 8, "test"),
    User("ivy", 150, "mixed", 9, "test"),
    User("jun", 300, "zh", 10, "test"),
    User("kai", 50, "en", 11, "test"),
    User("lea", 250, "mixed", 12, "test"),
)


@dataclass(frozen=True, slots=True)
class Write:
    """One memory to write, in order; `key` names it for questions, `supersedes` a key written before."""

    key: str
    content: str
    supersedes: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """`expected` is the key of the memory that answers it; None: nothing stored answers it."""

    text: str
    kind: Kind
    expected: str | None
    stale: str | None = None
    """For `superseded`: the key of the retired memory (irrelevant if it comes back)."""


@dataclass(frozen=True, slots=True)
class Tenant:
    user: User
    writes: tuple[Write, ...]
    questions: tuple[Question, ...]


STORED_TOPICS = 14
NOTHING_QUESTIONS = 4
SUPERSEDED_TOPICS = 2


def build(user: User) -> Tenant:
    """The writes and questions of one user (deterministic in `user.seed`)."""
    rng = random.Random(user.seed)
    half = TOPICS[:HALF] if user.split == "train" else TOPICS[HALF:]
    order = list(half)
    rng.shuffle(order)
    stored, unstored = order[:STORED_TOPICS], order[STORED_TOPICS:]
    changed = set(t.key for t in stored[:SUPERSEDED_TOPICS])

    def language() -> Language:
        if user.language == "mixed":
            return rng.choice(("en", "zh"))
        return user.language

    facts: list[Write] = []
    replays: list[Write] = []
    questions: list[Question] = []
    for topic in stored:
        lang = language()
        other: Language = "zh" if lang == "en" else "en"
        old, new = rng.sample(topic.values, 2)
        if topic.key in changed:
            facts.append(Write(f"{topic.key}:old", topic.fact(lang, old)))
            facts.append(Write(topic.key, topic.fact(lang, new), supersedes=f"{topic.key}:old"))
            replays.append(Write(f"{topic.key}:old", topic.fact(lang, old)))
            asked = rng.choice((lang, other))
            questions.append(Question(topic.question(asked), "superseded", topic.key, f"{topic.key}:old"))
            continue
        facts.append(Write(topic.key, topic.fact(lang, new)))
        questions.append(Question(topic.keyword(lang), "keyword", topic.key))
        questions.append(Question(topic.question(lang), "natural", topic.key))
        questions.append(Question(topic.question(other), "cross", topic.key))
    for topic in unstored[:NOTHING_QUESTIONS]:
        questions.append(Question(topic.question(language()), "nothing", None))
    n_filler = user.size - len(facts)
    fillers = []
    if user.language == "mixed":
        per_language = {"en": n_filler // 2, "zh": n_filler - n_filler // 2}
        for lang_, n in per_language.items():
            fillers += _filler(rng, lang_, n)  # type: ignore[arg-type]
    else:
        fillers = _filler(rng, user.language, n_filler)
    writes = [Write(f"filler:{i}", text) for i, text in enumerate(fillers)] + facts
    rng.shuffle(writes)  # facts land among the fillers; a superseding write stays after its original
    writes = _supersedes_after_original(writes)
    return Tenant(user, tuple(writes) + tuple(replays), tuple(questions))


def _supersedes_after_original(writes: list[Write]) -> list[Write]:
    """`writes` with each superseding write moved right after the one it supersedes, if it came first."""
    out: list[Write] = []
    pending: dict[str, Write] = {}
    for w in writes:
        if w.supersedes is not None and w.supersedes not in {o.key for o in out}:
            pending[w.supersedes] = w
            continue
        out.append(w)
        if w.key in pending:
            out.append(pending.pop(w.key))
    return out


def tenants(split: Literal["train", "test", "all"] = "all") -> list[Tenant]:
    return [build(u) for u in USERS if split in ("all", u.split)]
