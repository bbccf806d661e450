"""What `merge_safety` knows of a text's facts: its word tables and the one regex that finds them.

Month and weekday names, relative days, number words, negations, units, the common sentence
openers that are not names, Chinese numerals, classifiers and surnames, and `PATTERN`: one
alternation of every kind of fact, tried left to right, each repetition bounded so a hostile input
stays linear. Plain data; `merge_safety` reads and compares the facts.
"""

from __future__ import annotations

import re

from rearview.text import STOPWORDS

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sep", "Sept"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: index
    for index, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ],
        start=1,
    )
    for name in names
}
RELATIVE_DAYS = {
    "today": "today",
    "tonight": "tonight",
    "tomorrow": "tomorrow",
    "yesterday": "yesterday",
    "morning": "morning",
    "afternoon": "afternoon",
    "evening": "evening",
    "noon": "noon",
    "midnight": "midnight",
    "weekend": "weekend",
    "weekday": "weekday",
    "今天": "today",
    "今日": "today",
    "今晚": "tonight",
    "明天": "tomorrow",
    "明日": "tomorrow",
    "昨天": "yesterday",
    "后天": "day-after-tomorrow",
    "前天": "day-before-yesterday",
    "上午": "morning",
    "早上": "morning",
    "下午": "afternoon",
    "晚上": "evening",
    "中午": "noon",
    "周末": "weekend",
    "工作日": "weekday",
}


def _words(text: str) -> list[str]:
    return text.split()


NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
            "fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "dozen": 12,
    "once": 1,
    "twice": 2,
}
NEGATIONS = frozenset(_words("not no never none nothing nobody nowhere neither nor without cannot"))
UNITS = "kb|mb|gb|tb|kib|mib|gib|tib|ms|us|ns|sec|secs|s|min|mins|h|hr|hrs|d|px|k|m|x|%|percent|°c|°f"


# Words that open a sentence without being names ("Always", "Prefers"). Any other capitalized
# opener counts as a possible name: wrongly calling a word a name only costs a separate memory.
COMMON_OPENERS = STOPWORDS | frozenset(
    _words(
        """
    after again all also always any anyone as avoid because before being both but by can check
    confirmed could currently do don't during each either even every everyone except first for
    from going had has have he her here his how however i i'm if in instead is it it's just keep
    last later let's like likes loves hates make many maybe most much must my never new next no
    nobody none not note now often once only our per please prefer prefers preferred
    remember right run same send set should since so some sometimes still store such than thanks
    that the their daily nightly weekly monthly yearly annual quarterly add ask call create delete
    them then there these they this those though to today tomorrow too try turns until usually
    use used uses user user's users we we're we've what when whenever where whether which while
    who why will with within without would yes yesterday you your
    """
    )
)
CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
CJK_DIGITS |= {"八": 8, "九": 9}
CJK_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
CJK_NUM = "零〇一二两三四五六七八九十百千万亿"
CJK_CLASSIFIERS = "个位台次天年周岁人倍元块件条张本页遍届层名颗只份项种章节行秒分钟小时核杯瓶碗米克斤度"


# Surnames that are rarely ordinary words inside a sentence (何/程/许/曾/高/周... are left out).
CJK_SURNAMES = (
    "王李张刘陈杨黄赵吴徐孙朱胡郭林罗郑梁宋唐冯邓曹彭肖董袁潘"
    "蒋蔡杜叶苏魏吕丁沈姚卢姜崔谭汪贾韦邹孟邱尹薛闫侯陶黎郝龚邵覃"
)
CJK_NAME_BEFORE = "由和跟找问让给与是被叫请"


# Compounds containing a negation character that do not negate ("不过" = but, "未来" = future).
CJK_NOT_NEGATION = "不过|不错|不断|不仅|不少|不久|不管|无论|别人|别的|特别|区别|分别|级别|类别|识别|未来|无线"


CJK = "\u3400-\u4dbf\u4e00-\u9fff"


# One alternation, tried left to right at each position, so a URL or a version is consumed whole
# before its digits could count as numbers. Every repetition that is retried at each position of a
# long run is bounded ({0,64}, {1,12}), so a hostile 4,000-character run stays linear.
PATTERN = re.compile(
    rf"""
    (?P<url>\b(?:https?://|www\.)[^\s<>"'）)]+[^\s<>"'）).,;:!?。，])
  | (?P<email>\b[\w.+-]{{1,64}}@[\w-]+(?:\.[\w-]+)+)
  | (?P<path>(?<![\w/])(?:~|\.{{1,2}})?/[\w.\-]+(?:/[\w.\-]*)*|\b[A-Za-z]:\\[\w.\\-]+)
  | (?P<quoted>"[^"\n]{{1,200}}"|“[^”\n]{{1,200}}”|`[^`\n]{{1,200}}`|「[^」\n]{{1,200}}」|『[^』\n]{{1,200}}』
      |(?<!\w)'[^'\n]{{1,200}}'(?!\w)|‘[^’\n]{{1,200}}’)
  | (?P<iso_date>\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b)
  | (?P<cjk_date>[{CJK_NUM}\d]{{1,6}}[月日号]|[{CJK_NUM}\d]{{1,4}}点(?:半|[{CJK_NUM}\d]{{1,3}}分)?)
  | (?P<clock>\b\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:\s*[ap]\.?m\b\.?)?|\b\d{{1,2}}\s*[ap]\.?m\b\.?)
  | (?P<ip>\b\d{{1,3}}(?:\.\d{{1,3}}){{3}}(?:/\d{{1,2}})?(?::\d+)?\b)
  | (?P<version>\b[vV]\d+(?:\.\d+)*(?:[-+][\w.]+)?\b|\b\d+\.\d+\.\d+(?:[-+][\w.]+)?\b
      |\b[a-z][\w.-]{{0,64}}[:@]v?\d+(?:\.\d+)*\b|\b[a-z]+\d+(?:\.\d+)+\b)
  | (?P<channel>(?<![\w#])[#@][A-Za-z][\w.-]*\w)
  | (?P<quarter>\b[QH][1-4]\b)
  | (?P<ordinal>\b\d+(?:st|nd|rd|th)\b)
  | (?P<amount>\b\d+(?:,\d{{3}})*(?:\.\d+)?(?:\s?(?:{UNITS})\b|%)?)
  | (?P<identifier>\b(?=[\w-]{{0,64}}[A-Za-z])(?=[\w-]{{0,64}}\d)\w+(?:[-.:]\w+)*\b
      |\b[A-Za-z_]\w*_\w*|\b[a-z]+[A-Z]\w*|\b\w{{2,}}(?:\.\w{{2,}})+\b|\b\w+(?:-\w+){{2,}})
  | (?P<word>[A-Za-z][A-Za-z'’]*)
  | (?P<cjk_skip>{CJK_NOT_NEGATION})
  | (?P<cjk_relative>{"|".join(k for k in RELATIVE_DAYS if not k.isascii())})
  | (?P<cjk_weekday>(?:周|星期|礼拜)[一二三四五六日天1-7])
  | (?P<cjk_number>第?[{CJK_NUM}]{{1,12}}(?=[{CJK_CLASSIFIERS}]))
  | (?P<cjk_name>(?:(?<![{CJK}])|(?<=[{CJK_NAME_BEFORE}]))[老小]?[{CJK_SURNAMES}][{CJK}])
  | (?P<cjk_negation>没有|[不没别未无勿])
    """,
    re.VERBOSE | re.ASCII,  # ASCII \w and \b: "config.yaml里" ends at the ideograph
)


# "Python 3.11", "Node 20", "version 4": a bare number right after a product name is a version.
MONTH_NAMES = "|".join(MONTHS)
PRODUCT_BEFORE = re.compile(
    rf"(?:\b(?!(?:{MONTH_NAMES})\b)(?=[a-z]*[A-Z])[A-Za-z][\w+#]*|\bversion|\brelease|版本)\s?$", re.ASCII
)


# "May 3", "3 May", "the 3rd of May": a number next to a month is a day.
MONTH_BEFORE = re.compile(rf"\b(?:{MONTH_NAMES})\.?\s$", re.ASCII)
MONTH_AFTER = re.compile(rf"\s(?:of\b|(?:{MONTH_NAMES})\b)", re.ASCII)
SENTENCE_ENDS = frozenset(".!?。！？:;\n-•*")
