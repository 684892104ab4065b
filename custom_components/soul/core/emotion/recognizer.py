"""Rule-and-lexicon recognition of the user's emotion in Chinese and English text.

``analyze_emotion(text)`` folds the text (Traditional → Simplified, lower
case, elongations "sooo" → "so"), scans it once with the lexicon's combined
pattern and walks the tokens clause by clause:

* negators and degree words form a chain that applies to the next cue when it
  is close (two CJK characters or three English words away); an odd number
  of negators flips the cue (negative → calm, positive → its counterpart), an
  even number keeps it, softened;
* post-degree words ("死了", "so much") strengthen the cue just before them;
* each clause's cues are discounted when the clause is a request ("帮我…"),
  a condition ("如果…") or a question put to the listener ("你开心吗");
  clauses after a contrast ("但是", "结果", "but") weigh more;
* an expectation ("本来以为", "答应") followed by a contrast, or a negation
  after "居然"/"没想到", adds disappointment; "终于…了" adds to relief;
  a few structural patterns ("还是…不…", "试了…都…") add frustration.

The label with the most evidence wins; its strongest cue sets the intensity,
raised by further cues, "!" and repeated characters. A non-ASCII text that
cannot hold any surface of the lexicon or literal of a structure (most
commands: "帮我把灯变成绿色") is neutral without the scan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import operator
import re

from ..language import to_simplified
from .labels import PROTOTYPE, Emotion, rounded
from .lexicon import COMPILED_STRUCTURES, FLIP, PATTERN, TABLE, Kind, Token

MAX_CHARS = 2000  # longer texts are cut: the opening says enough
THRESHOLD = 0.25  # less evidence than this is neutral
CONTRAST_WEIGHT = 2.0  # clauses after "但是"/"but" (again for each contrast)
# "不生气" is calm: it counts NEGATED_NEGATIVE_WEIGHT of the cue as evidence, with
# a low intensity (NEGATED_NEGATIVE of the cue, at least NEGATED_FLOOR).
NEGATED_NEGATIVE_WEIGHT = 0.8
NEGATED_NEGATIVE = 0.4
NEGATED_FLOOR = 0.3
NEGATED_POSITIVE = 0.75  # "不开心" from "开心"
DOUBLE_NEGATION = 0.6  # "不是不开心"
EXPECTATION_MET = 0.7  # disappointment added by a contrast after "本来以为"
SURPRISE_NEGATED = 0.3  # "居然没…": its surprise turns into disappointment, plus this
FINALLY_BONUS = 0.2  # "终于…了"
REQUEST_FACTOR = 0.25
CONDITION_FACTOR = 0.3
ASKED_FACTOR = 0.2
QUESTION_SURPRISE = 1.3
UNATTACHED_DEATH = 0.5  # "我的猫死了": "死了" with no cue before it

# Labels a request does not discount: "谢谢帮我…", "你给我闭嘴".
_COMMANDING = frozenset({Emotion.GRATITUDE, Emotion.ANGER})
_NEGATIVE = frozenset(e for e, pad in PROTOTYPE.items() if pad.p < 0)
_ZERO: dict[str, str | float] = {
    "emotion": Emotion.NEUTRAL.value,
    "p": 0.0,
    "a": 0.0,
    "d": 0.0,
    "intensity": 0.0,
}

# Curly quotes as straight ones; emoji variation selectors dropped ("☺️" is "☺").
_TRANSLATE = str.maketrans({"\u2019": "'", "\u2018": "'", "\ufe0f": None})
# The characters ``_TRANSLATE`` changes: a text holding none of them is not
# translated (``str.translate`` reads a mapping for every character).
_TRANSLATED = frozenset(map(chr, _TRANSLATE))
_ELONGATED = re.compile(r"([a-z])\1{2,}")
_REPEATED_HAN = re.compile(r"([\u4e00-\u9fff])\1{2,}")
_REQUEST = re.compile(
    r"帮我|帮忙|给我|请你|请帮|播放|放一首|放首|来一首|来首|打开|关掉|关上|调到|调成|设置|设个|定个|"
    r"提醒我|^请|^把|^麻烦"
    r"|^(?:please|can you|could you|would you|will you)\b"
    r"|\b(?:play|turn (?:on|off)|switch (?:on|off)|set (?:a|an|the)|remind me|put on)\b"
)
_CONDITION = re.compile(r"如果|要是|假如|假设|的话|(?<!what )\b(?:if|in case|unless)\b")
_ASKED_EN = re.compile(r"^\s*(?:are|were|do|did|will|would|is|have|has) (?:you|u)\b")


# What the scan can find at all: a surface of the lexicon (a token) or a
# structure's literal. Each one-character word, and the first two characters
# of every longer one, say whether one may occur: a folded text holding none
# of them has no evidence. ASCII text nearly always holds a pair that begins
# an English surface, so it goes straight to the scan.
_WORDS = (*TABLE, *(literal for literal, *_rest in COMPILED_STRUCTURES))
_WORD_CHARS = frozenset(word for word in _WORDS if len(word) == 1)
_WORD_PAIRS = frozenset(word[:2] for word in _WORDS if len(word) > 1)
_SKIPS = "" not in _WORDS  # an empty word would be found anywhere


def _no_evidence(folded: str) -> bool:
    """Whether ``folded`` (as ``_fold`` returns it) surely holds no evidence."""
    return (
        _SKIPS
        and not folded.isascii()
        and _WORD_CHARS.isdisjoint(folded)
        and _WORD_PAIRS.isdisjoint(map(operator.add, folded, folded[1:]))
    )


def _fold(text: str) -> tuple[str, int]:
    """Return the text as the lexicon spells it, and how many words were elongated.

    Line breaks become clause breaks, runs of white space one space.
    """
    text = text[:MAX_CHARS]
    if not text.isascii():
        if not _TRANSLATED.isdisjoint(text):
            text = text.translate(_TRANSLATE)
        try:
            text = to_simplified(text)
        except UnicodeError:  # lone surrogates: zhconv cannot take them
            text = to_simplified(
                text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            )
    text = text.lower()
    elongations = 0
    if _ELONGATED.search(text):
        text, elongations = _ELONGATED.subn(r"\1", text)
    return " ".join(text.replace("\n", " . ").split()), elongations


def _asked(clause: str) -> bool:
    """Whether a clause asks the listener about a feeling ("你开心吗", "are you ok")."""
    if _ASKED_EN.match(clause):
        return True
    asks = clause.rstrip(" ?？!！")[-1:] in {"吗", "嘛", "么"}
    return asks and ("你" in clause or "您" in clause)


def _near(gap: str) -> bool:
    """Whether a modifier this far before a cue still reaches it."""
    if not gap:
        return True
    if len(gap) > 24:
        return False
    if gap.isascii():
        return gap.count(" ") <= 3
    return len(gap.strip()) <= 2


@dataclass(slots=True)
class _Chain:
    """Negators and degree words waiting for the cue they modify."""

    end: int = -1
    negations: int = 0
    degree: float = 1.0
    imperative: bool = False  # "别…": does not reach "烦人"


@dataclass(slots=True)
class _Evidence:
    """One cue's contribution: ``weight`` to the label's score, ``peak`` to intensity."""

    label: Emotion
    weight: float
    peak: float
    finally_at: int = -1  # "终于" here: "…了" after it adds to relief


@dataclass(slots=True)
class _State:
    """Evidence gathered so far while walking the tokens."""

    text: str
    scores: dict[Emotion, float] = field(default_factory=dict)
    peaks: dict[Emotion, float] = field(default_factory=dict)
    counts: dict[Emotion, int] = field(default_factory=dict)
    clause: list[_Evidence] = field(default_factory=list)
    clause_start: int = 0
    clause_weight: float = 1.0
    chain: _Chain = field(default_factory=_Chain)
    last_cue_end: int = -1
    expecting: bool = False  # "本来以为" seen, no contrast yet
    surprised: bool = False  # "居然" seen: a dangling negation is disappointment
    exclaims: int = 0

    def add(self, label: Emotion, weight: float, peak: float | None = None) -> None:
        """Add evidence to the open clause."""
        self.clause.append(_Evidence(label, weight, weight if peak is None else peak))

    def drop_chain(self) -> None:
        """Forget a chain no cue took; after "居然", a lone negation disappoints."""
        if self.chain.negations and self.surprised:
            self.surprised = False
            for item in self.clause:
                if item.label is Emotion.SURPRISE:
                    item.label = Emotion.DISAPPOINTMENT
            self.add(Emotion.DISAPPOINTMENT, SURPRISE_NEGATED)
        self.chain = _Chain()

    def flush(self, end: int, *, question: bool = False) -> None:
        """Close the clause ending at ``end``: discount it and add its evidence."""
        self.drop_chain()
        if self.clause:
            clause_text = self.text[self.clause_start : end]
            factor = self.clause_weight
            if _CONDITION.search(clause_text):
                factor *= CONDITION_FACTOR
            request = _REQUEST.search(clause_text) is not None
            asked = _asked(clause_text)
            for item in self.clause:
                scale = factor
                if request and item.label not in _COMMANDING:
                    scale *= REQUEST_FACTOR
                if item.label is Emotion.SURPRISE:
                    scale *= QUESTION_SURPRISE if question else 1.0
                elif asked:
                    scale *= ASKED_FACTOR
                if (
                    item.finally_at >= 0
                    and self.text.find("了", item.finally_at, end) >= 0
                ):
                    item.weight += FINALLY_BONUS
                    item.peak += FINALLY_BONUS
                self._count(item, scale)
            self.clause = []
        self.clause_start = end
        self.last_cue_end = -1

    def _count(self, item: _Evidence, scale: float) -> None:
        """Add one piece of evidence of a closed clause to the totals."""
        label = item.label
        self.scores[label] = self.scores.get(label, 0.0) + item.weight * scale
        peak = item.peak * min(scale, 1.0)
        self.peaks[label] = max(self.peaks.get(label, 0.0), peak)
        self.counts[label] = self.counts.get(label, 0) + 1


def _cue(state: _State, token: Token, start: int, end: int) -> None:
    """Add a cue's evidence, applying the modifier chain before it."""
    label = token.label or Emotion.NEUTRAL
    weight = peak = token.weight
    chain = state.chain
    if chain.end >= 0 and _near(state.text[chain.end : start]):
        negations = 0 if chain.imperative and token.causative else chain.negations
        if negations % 2 and token.negatable:
            label, weight, peak = _negate(token, chain.degree)
        elif negations:
            weight = peak = weight * DOUBLE_NEGATION * chain.degree
        else:
            weight = peak = weight * chain.degree
        state.chain = _Chain()
    else:
        state.drop_chain()
    if token.surprise_marker:
        state.surprised = True
    evidence = _Evidence(label, weight, peak)
    if label is Emotion.RELIEF and state.text.startswith("终于", start):
        evidence.finally_at = end
    state.clause.append(evidence)
    state.last_cue_end = end


def _negate(token: Token, degree: float) -> tuple[Emotion, float, float]:
    """Return the label, weight and peak of a negated cue."""
    label = token.label or Emotion.NEUTRAL
    if token.negated_as is not None:
        weight = token.weight * DOUBLE_NEGATION
        return token.negated_as, weight, weight
    if label in _NEGATIVE:
        peak = max(NEGATED_FLOOR, token.weight * NEGATED_NEGATIVE)
        return Emotion.CALM, token.weight * NEGATED_NEGATIVE_WEIGHT, peak
    weight = token.weight * NEGATED_POSITIVE * min(degree, 1.3)
    return FLIP.get(label, Emotion.NEUTRAL), weight, weight


def _modifier(state: _State, token: Token, start: int, end: int) -> None:
    """Extend the pending chain with a negator or degree word, or start a new one."""
    chain = state.chain
    if not (chain.end >= 0 and _near(state.text[chain.end : start])):
        state.drop_chain()
        chain = state.chain
    if token.kind is Kind.NEGATOR:
        chain.negations += 1
        chain.imperative = chain.imperative or token.imperative
    chain.degree *= token.weight
    chain.end = end


def _post_degree(state: _State, token: Token, start: int) -> None:
    """Strengthen the cue just before a post-degree word ("开心死了")."""
    if state.clause and state.last_cue_end >= 0 and start - state.last_cue_end <= 1:
        last = state.clause[-1]
        last.weight *= token.weight
        last.peak *= token.weight
    elif state.text.startswith("死了", start) and not state.clause:
        state.add(Emotion.SADNESS, UNATTACHED_DEATH)


def _contrast(state: _State, start: int) -> None:
    """Close the clause before a contrast; what follows weighs more."""
    state.flush(start)
    state.clause_weight *= CONTRAST_WEIGHT
    if state.expecting:
        state.expecting = False
        state.add(Emotion.DISAPPOINTMENT, EXPECTATION_MET)


def _walk(text: str) -> _State:
    """Scan ``text`` once and gather the evidence of every label."""
    state = _State(text)
    for match in PATTERN.finditer(text):
        token = TABLE.get(match.group())
        if token is None:
            continue
        start, end = match.span()
        kind = token.kind
        if kind is Kind.CUE:
            if token.contrast:
                _contrast(state, start)
            _cue(state, token, start, end)
        elif kind is Kind.NEGATOR or kind is Kind.DEGREE:
            _modifier(state, token, start, end)
        elif kind is Kind.POST_DEGREE:
            _post_degree(state, token, start)
        elif kind is Kind.BREAK:
            state.exclaims += token.exclaim
            if token.contrast:
                _contrast(state, start)
            else:
                state.flush(end, question=token.question)
        elif kind is Kind.EXPECT:
            state.drop_chain()
            state.expecting = True
            if token.weight:
                state.add(Emotion.DISAPPOINTMENT, token.weight)
        else:  # a blocker ends any chain
            state.drop_chain()
    state.flush(len(text))
    _structures(state, text)
    return state


def _structures(state: _State, text: str) -> None:
    """Add the evidence of the lexicon's structural patterns ("还是…不…")."""
    for literal, pattern, label, weight in COMPILED_STRUCTURES:
        if literal in text and pattern.search(text):
            state.add(label, weight)
    state.flush(len(text))


def _intensity(state: _State, label: Emotion, elongations: int, repeats: int) -> float:
    """Return the intensity of the winning label in [0, 1]."""
    value = state.peaks[label] + 0.1 * min(state.counts[label] - 1, 3)
    if label is not Emotion.CALM:
        value += 0.07 * min(state.exclaims, 3) + 0.07 * min(elongations + repeats, 3)
    return round(min(max(value, 0.0), 1.0), 3)


def analyze_emotion(text: str) -> dict[str, str | float]:
    """Return the user's emotion in ``text``: label, PAD and intensity.

    ``{"emotion": label, "p": …, "a": …, "d": …, "intensity": …}`` where the
    label is one of ``labels.LABELS`` and p/a/d are its prototype scaled by the
    intensity (all zero for neutral). Never raises on a string; only the first
    ``MAX_CHARS`` characters are read.
    """
    if not isinstance(text, str) or not text:
        return dict(_ZERO)
    folded, elongations = _fold(text)
    if _no_evidence(folded):
        return dict(_ZERO)
    state = _walk(folded)
    if not state.scores:
        return dict(_ZERO)
    label = max(state.scores, key=state.scores.__getitem__)
    if label is Emotion.NEUTRAL or state.scores[label] < THRESHOLD:
        return dict(_ZERO)
    repeats = len(_REPEATED_HAN.findall(folded)) if not folded.isascii() else 0
    intensity = _intensity(state, label, elongations, repeats)
    pad = PROTOTYPE[label]
    return {
        "emotion": label.value,
        "p": rounded(pad.p * intensity, 3),
        "a": rounded(pad.a * intensity, 3),
        "d": rounded(pad.d * intensity, 3),
        "intensity": intensity,
    }
