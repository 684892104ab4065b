"""The rule-and-lexicon emotion recognizer: labels, rules, intensity and robustness."""

from __future__ import annotations

from collections import Counter
import random

import pytest

from custom_components.soul.core.emotion import (
    LABELS,
    PROTOTYPE,
    Emotion,
    analyze_emotion,
    group_of,
    lexicon,
    recognizer,
)


def label(text: str) -> str:
    return str(analyze_emotion(text)["emotion"])


def intensity(text: str) -> float:
    return float(analyze_emotion(text)["intensity"])


# --- output contract --------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["我好开心", "气死我了！！！", "I'm so scared", "😭😭"]
)
def test_result_is_the_prototype_scaled_by_intensity(text: str) -> None:
    result = analyze_emotion(text)
    assert set(result) == {"emotion", "p", "a", "d", "intensity"}
    assert result["emotion"] in LABELS
    value = result["intensity"]
    assert isinstance(value, float)
    assert 0.0 < value <= 1.0
    assert round(value, 3) == value
    pad = PROTOTYPE[Emotion(result["emotion"])]
    assert result["p"] == round(pad.p * value, 3)
    assert result["a"] == round(pad.a * value, 3)
    assert result["d"] == round(pad.d * value, 3)


@pytest.mark.parametrize(
    "text", ["", "帮我把灯打开", "turn on the light", "明天几点开会"]
)
def test_neutral_has_zero_intensity_and_pad(text: str) -> None:
    assert analyze_emotion(text) == {
        "emotion": "neutral",
        "p": 0.0,
        "a": 0.0,
        "d": 0.0,
        "intensity": 0.0,
    }


def test_results_are_fresh_dicts() -> None:
    first = analyze_emotion("")
    first["emotion"] = "anger"
    assert analyze_emotion("")["emotion"] == "neutral"


# --- robustness -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\n\t\r",
        "\x00\x01\x02\x1b[31m",
        "！！！？？？。。。",
        "!!!???...,,,",
        "...",
        "🙂",
        "🫠🫥🪿",
        "\ufe0f\u200d",
        "a\ud800b",
        "\udfff难过",
        "\u202e生气\u202c",
        "e\u0301\u0301\u0301",
        "İİİ",
        "ß" * 50,
        "你" * 3000 + "开心",
        "不" * 3000,
        "终于" * 1500,
        "哈" * 5000,
        "a" * 100_000,
        "not " * 5000 + "happy",
        "😡" * 10_000,
    ],
)
def test_never_raises_and_stays_in_range(text: str) -> None:
    result = analyze_emotion(text)
    assert result["emotion"] in LABELS
    assert 0.0 <= float(result["intensity"]) <= 1.0


def test_random_text_never_raises() -> None:
    rng = random.Random(20260222)  # noqa: S311 - reproducible fuzzing, not crypto
    alphabet = (
        "我不很太没别开心生气害怕谢谢终于居然但是结果！？，。 notbuthappysad!?😡🙏😭"
        + "".join(chr(code) for code in range(0x20, 0x7F))
    )
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        result = analyze_emotion(text)
        assert result["emotion"] in LABELS
        assert 0.0 <= float(result["intensity"]) <= 1.0
    for _ in range(50):
        text = "".join(chr(rng.randint(0, 0x2FFFF)) for _ in range(200))
        assert analyze_emotion(text)["emotion"] in LABELS


def test_non_string_is_neutral() -> None:
    assert analyze_emotion(None)["emotion"] == "neutral"  # type: ignore[arg-type]


def test_only_the_opening_of_a_long_text_is_read() -> None:
    filler = "今天的天气是这样的。" * (recognizer.MAX_CHARS // 10 + 1)
    assert label(filler + "气死我了") == "neutral"
    assert label("气死我了。" + filler) == "anger"


# --- each label, in Simplified, Traditional Chinese and English --------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今天被插队了，真是气人", "anger"),
        ("我真的火大了，他凭什么这样对我", "anger"),
        ("氣死我了", "anger"),
        ("I'm so pissed off right now", "anger"),
        ("这味道好恶心，我要吐了", "disgust"),
        ("好噁心喔", "disgust"),
        ("Ew, that's so gross", "disgust"),
        ("折腾了半天还是没用", "frustration"),
        ("網路又斷了，崩潰", "frustration"),
        ("I've tried everything and it still doesn't work", "frustration"),
        ("下周就要面试了，我好焦虑", "anxiety"),
        ("心裡好不安", "anxiety"),
        ("我好著急", "anxiety"),
        ("I'm really nervous about the interview", "anxiety"),
        ("半夜听到奇怪的声音，我好害怕", "fear"),
        ("好可怕，我在發抖", "fear"),
        ("I'm terrified of spiders", "fear"),
        ("爷爷去世了，我很难过", "sadness"),
        ("我好難過", "sadness"),
        ("I feel so lonely tonight", "sadness"),
        ("期待了那么久，结果演唱会取消了", "disappointment"),
        ("原以為會很好吃，結果很普通", "disappointment"),
        ("I'm so disappointed in the ending", "disappointment"),
        ("周末在家没事干，闷死了", "boredom"),
        ("好無聊喔", "boredom"),
        ("There's nothing to do here, it's boring", "boredom"),
        ("和朋友吃火锅，好幸福", "joy"),
        ("今天真開心", "joy"),
        ("That was so much fun, haha", "joy"),
        ("太感谢了，你真是帮了大忙", "gratitude"),
        ("謝謝你", "gratitude"),
        ("Thanks a lot for your help", "gratitude"),
        ("幸好没下雨", "relief"),
        ("終於找到鑰匙了，鬆了一口氣", "relief"),
        ("Phew, that was close", "relief"),
        ("明天就去迪士尼了，好激动", "excitement"),
        ("超興奮的！", "excitement"),
        ("We won the game! Yay!", "excitement"),
        ("真的假的？他们分手了？", "surprise"),
        ("不會吧？", "surprise"),
        ("Wow, I didn't expect that", "surprise"),
        ("今天很放松，喝喝茶看看书", "calm"),
        ("別擔心，沒事的", "calm"),
        ("Take it easy, no rush", "calm"),
    ],
)
def test_labels(text: str, expected: str) -> None:
    assert label(text) == expected


# --- negation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # negated negative → calm, low intensity
        ("我一点都不生气", "calm"),
        ("我不害怕", "calm"),
        ("not angry at all", "calm"),
        ("I'm not worried at all", "calm"),
        ("别担心", "calm"),
        # negated positive → its negative counterpart
        ("I'm not happy", "sadness"),
        ("我今天不太开心", "sadness"),
        ("I don't feel happy", "sadness"),
        ("不放心他一个人去", "anxiety"),
        # "不开心" is a sadness cue, not 不 + 开心
        ("我不开心", "sadness"),
        ("不开心", "sadness"),
        # double negation → the cue itself, mild
        ("我没有不开心", "joy"),
        ("我不是不开心", "joy"),
        ("I'm not unhappy", "joy"),
    ],
)
def test_negation(text: str, expected: str) -> None:
    assert label(text) == expected


def test_negated_negative_is_mild() -> None:
    assert intensity("我一点都不生气") < 0.5
    assert intensity("我不害怕") < 0.5


def test_double_negation_is_milder_than_the_cue() -> None:
    assert intensity("我没有不开心") < intensity("我很开心")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("这个还不错", "joy"),
        ("不错", "joy"),
        ("不要紧的", "calm"),
        ("不好意思", "neutral"),
        ("不好意思打扰一下", "neutral"),
        ("我不知道怎么办", "anxiety"),
        ("不得不说，真开心", "joy"),
        ("开心得不得了", "joy"),
        ("I can't wait!", "excitement"),
        ("I can't believe it", "surprise"),
        ("I can't stop worrying", "anxiety"),
    ],
)
def test_words_containing_a_negator_are_not_negations(text: str, expected: str) -> None:
    assert label(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("他不在家，我很开心", "joy"),
        ("我没吃饭，好难过", "sadness"),
        ("I did not sleep. I'm happy though", "joy"),
        ("不是我说，真的好气人", "anger"),
    ],
)
def test_a_negator_does_not_reach_the_next_clause(text: str, expected: str) -> None:
    assert label(text) == expected


def test_a_conjunction_ends_the_negation_scope() -> None:
    # Without the break, "not" would reach "happy" two words on.
    assert label("I'm not happy") == "sadness"
    assert label("not but happy") == "joy"
    assert label("没但开心") == "joy"


def test_a_distant_negator_does_not_reach_the_cue() -> None:
    assert label("我不知道为什么今天很开心") == "joy"
    assert label("没人告诉我这件事居然这么好玩") == "joy"


def test_commands_keep_causative_cues() -> None:
    assert label("你能不能别这么烦人") == "anger"
    assert label("don't be so annoying") == "anger"
    assert label("别这么难过") == "calm"


# --- degree, exclamation, repetition ---------------------------------------


def test_degree_words_raise_and_lower_intensity() -> None:
    assert intensity("有点生气") < intensity("生气") < intensity("非常生气")
    assert intensity("a bit sad") < intensity("sad") <= intensity("extremely sad")
    assert intensity("有点难过") < intensity("难过")


def test_post_degree_words_raise_intensity() -> None:
    assert intensity("烦死了") >= intensity("好烦")
    assert intensity("开心死了") > intensity("开心")
    assert intensity("高兴得要命") > intensity("高兴")
    assert label("开心死了") == "joy"


def test_exclamations_and_repetition_raise_intensity() -> None:
    assert intensity("生气！！！") > intensity("生气")
    assert intensity("有点烦!!!") > intensity("有点烦")
    assert intensity("哈哈哈哈哈") > intensity("哈哈")
    assert intensity("sooo glad") > intensity("so glad")
    assert label("sooo glad") == "joy"
    assert label("啊啊啊啊好害怕") == "fear"


def test_repeated_emoji_raise_intensity() -> None:
    assert label("😡") == "anger"
    assert label("😡😡😡") == "anger"
    assert intensity("😡😡😡") > intensity("😡")
    assert intensity("😡😡😡") >= 0.8


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("🤮", "disgust"),
        ("😭😢", "sadness"),
        ("😱", "fear"),
        ("😰", "anxiety"),
        ("😂🤣", "joy"),
        ("🙏", "gratitude"),
        ("😌", "relief"),
        ("🎉🎉", "excitement"),
        ("😲", "surprise"),
        ("🥱", "boredom"),
        ("😤", "frustration"),
        ("☺️", "joy"),
        ("T_T", "sadness"),
        (":)", "joy"),
    ],
)
def test_emoji(text: str, expected: str) -> None:
    assert label(text) == expected


def test_intensity_is_clamped() -> None:
    assert intensity("非常非常非常非常生气！！！！！！😡😡😡😡😡") == 1.0


# --- several cues and clause rules -----------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("虽然很累，但是很开心", "joy"),
        ("本来挺开心的，但是后来下雨了，好郁闷", "sadness"),
        ("我很生气，但是现在不生气了", "calm"),
        ("我不生气，但是很失望", "disappointment"),
        ("I was happy but now I'm sad", "sadness"),
        ("天哪，太可怕了", "fear"),
        ("我中奖了！太棒了！", "excitement"),
    ],
)
def test_later_and_stronger_cues_win(text: str, expected: str) -> None:
    assert label(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("终于考完了", "relief"),
        ("终于下班了", "relief"),
        ("Finally done with the exams", "relief"),
        ("本来以为能拿奖的，结果什么都没有", "disappointment"),
        ("原以为他会来，没想到他没来", "disappointment"),
        ("I thought it would be great, but it wasn't", "disappointment"),
        ("没想到他竟然没来", "disappointment"),
        ("什么？他居然结婚了？", "surprise"),
        ("他竟然考了第一名？", "surprise"),
        ("什么？", "surprise"),
        ("No way! Really?", "surprise"),
    ],
)
def test_pattern_rules(text: str, expected: str) -> None:
    assert label(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("他答应来的，结果又放我鸽子", "disappointment"),
        ("本来很期待的，结果一般般", "disappointment"),
        ("本来很期待的，结果太好玩了，超开心", "joy"),
        ("第五次了，还是编译不过", "frustration"),
        ("试了十次都没成功", "frustration"),
        ("还是不错的", "joy"),
    ],
)
def test_promises_and_structures(text: str, expected: str) -> None:
    assert label(text) == expected


def test_finally_le_adds_to_relief() -> None:
    assert intensity("终于考完了") > intensity("终于")


def test_a_question_with_juran_is_more_surprised() -> None:
    assert intensity("他居然来了？") >= intensity("他居然来了")


@pytest.mark.parametrize(
    "text",
    [
        "帮我把灯打开",
        "turn on the light",
        "明天几点开会",
        "把空调调到26度",
        "Set a timer for ten minutes",
        "播放一首开心的歌",
        "can you play some relaxing music",
        "你开心吗",
        "Are you sad?",
        "如果你不开心可以告诉我",
        "还行吧",
        "一般般",
        "it's ok",
        "好的",
        "我在客厅",
    ],
)
def test_requests_questions_and_lukewarm_remarks_are_neutral(text: str) -> None:
    assert label(text) == "neutral"


def test_thanks_in_a_request_still_count() -> None:
    assert label("谢谢你帮我这么多") == "gratitude"


# --- the lexicon ------------------------------------------------------------


def test_every_label_has_a_broad_lexicon() -> None:
    zh: Counter[str] = Counter()
    en: Counter[str] = Counter()
    for surface, token in lexicon.TABLE.items():
        if token.kind is lexicon.Kind.CUE and token.label is not None:
            (en if surface.isascii() else zh)[token.label.value] += 1
    for emotion in Emotion:
        if emotion is Emotion.NEUTRAL:
            continue
        assert zh[emotion.value] >= 25, emotion
        assert en[emotion.value] >= 12, emotion


def test_every_surface_matches_itself_whole() -> None:
    for surface in lexicon.TABLE:
        match = lexicon.PATTERN.match(surface)
        assert match is not None, surface
        assert match.group() == surface


def test_no_surface_has_two_meanings() -> None:
    seen: Counter[str] = Counter()
    for tiers in lexicon.CUES.values():
        for spec in tiers.values():
            seen.update(lexicon._surfaces(spec))
    for table in (lexicon.NEGATORS, lexicon.DEGREE, lexicon.POST_DEGREE):
        for spec in table.values():
            seen.update(lexicon._surfaces(spec))
    for spec in (lexicon.BLOCKERS, lexicon.EXPECTATIONS, lexicon.BREAK_WORDS):
        seen.update(lexicon._surfaces(spec))
    contrast = set(lexicon._surfaces(lexicon.CONTRAST))
    seen.update(contrast - lexicon.CONTRAST_CUES)
    assert [surface for surface, count in seen.items() if count > 1] == []


def test_english_words_match_whole_words_only() -> None:
    found = [m.group() for m in lexicon.PATTERN.finditer("nothing xnot madness")]
    assert found == []
    found = [m.group() for m in lexicon.PATTERN.finditer("开心happy")]
    assert found == ["开心", "happy"]


def test_traditional_spellings_are_folded() -> None:
    assert label("我好難過") == "sadness"
    assert label("謝謝你") == "gratitude"
    assert label("氣死我了") == "anger"
    assert label("睡不著") == "anxiety"


def test_every_label_group_is_known() -> None:
    for emotion in Emotion:
        assert group_of(emotion.value) in {
            "angry",
            "afraid",
            "sad",
            "happy",
            "excited",
            "calm",
        }
