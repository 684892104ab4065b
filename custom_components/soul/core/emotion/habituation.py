"""Habituation: a soul gets used to outbursts, one source's and everyone's.

A shared soul has one mood for everyone. Without habituation one user who
shouted at it once a minute kept it shocked (``exec_mode: blocked``), and it
refused every other user's commands for as long as that user went on; one
who said "I'm scared!" once a second kept its mood below ``CONFIRM_AT``, to
the same effect. So a soul keeps *strains*: the intensities of alarming
inputs (the emotions that can shock: anger, disgust, frustration, anxiety,
fear), which halve every ``HALF_LIFE`` seconds. It keeps one per source (the
Home Assistant user who spoke, else the body the words came through) and one
of every source together.

- **The shock** is decided on ``intensity / (1 + strain)``, with the
  source's strain or everyone's less ``SOUL_SHOCK_GRACE``, whichever is
  more: a first outburst may shock, and a second by someone else soon
  after; then none until the strains have faded (a shock asks for 0.95,
  ``dynamics.is_shock``): some 20 minutes after one outburst of a source.
- **The mood** moves in full for a source's first few outbursts (its strain
  up to ``MOOD_GRACE``, everyone's up to ``SOUL_MOOD_GRACE``), so a few angry
  turns still bring a soul to ask first (``confirm``); past those, by
  ``intensity / (1 + strain - grace)``. The strain grows with every input,
  so however fast a source (or several) goes on, what it moves the mood in
  a half-life stays about the same: not enough to hold it at ``blocked``.

Any other input (sadness too) is felt in full and adds no strain. Nothing is
stored: a restart forgets the strains. Pure: times come from the caller.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .dynamics import SHOCK_PLEASURE
from .labels import PROTOTYPE, Emotion

HALF_LIFE = 300.0  # seconds for a strain to halve
# Only a bound for the arithmetic: an hour of an input a second is ~430,
# after which the soul is used to that source for about 65 minutes.
MAX_STRAIN = 1000.0
MOOD_GRACE = 5.0  # a source's strain up to which its outbursts move the mood in full
SOUL_MOOD_GRACE = 10.0  # everyone's together
SOUL_SHOCK_GRACE = 1.0  # everyone's strain a shock may come on top of
MAX_SOURCES = 1024  # (soul, source) strains kept; the oldest go first
FORGOTTEN = 0.01  # a strain this small is as none
EVERYONE = "*"  # the source of a soul's strain from every source together
_NEG_LN2 = -math.log(2)
# The emotions that can shock a soul (``dynamics.is_shock`` at intensity 1).
ALARMING = frozenset(e for e, pad in PROTOTYPE.items() if pad.p <= SHOCK_PLEASURE)

type Source = tuple[str, str]  # (soul id, source)


class Felt(NamedTuple):
    """How intensely a soul feels one input."""

    mood: float  # how far it moves the soul's PAD state
    shock: float  # what its shock is decided on


class Habituation:
    """Each soul's strain from each source's alarming input, and from everyone's."""

    def __init__(self) -> None:
        """Start with no strain from anyone."""
        # (soul id, source) → (strain, when it was last raised); oldest first
        self._strains: dict[Source, tuple[float, float]] = {}

    def strain(self, soul_id: str, source: str, now: float) -> float:
        """Return ``source``'s strain on the soul at ``now`` (``EVERYONE``: all of it)."""
        kept = self._strains.get((soul_id, source))
        if kept is None:
            return 0.0
        strain, at = kept
        return strain * math.exp(_NEG_LN2 * max(0.0, now - at) / HALF_LIFE)

    def felt(
        self,
        soul_id: str,
        source: str,
        emotion: Emotion,
        intensity: float,
        now: float,
    ) -> Felt:
        """Return how intensely the soul feels the input, and count it.

        An alarming emotion is felt less the more strain its source, and
        everyone, put on the soul (the module's rules), and adds its
        intensity (1 at most) to both; any other input is felt as it is and
        adds nothing.
        """
        if emotion not in ALARMING or not intensity > 0:  # also NaN
            return Felt(intensity, intensity)
        heard = min(1.0, intensity)
        own = self._raise(soul_id, source, heard, now)
        everyone = self._raise(soul_id, EVERYONE, heard, now)
        mood_strain = max(own - MOOD_GRACE, everyone - SOUL_MOOD_GRACE, 0.0)
        shock_strain = max(own, everyone - SOUL_SHOCK_GRACE, 0.0)
        return Felt(heard / (1.0 + mood_strain), heard / (1.0 + shock_strain))

    def forget_soul(self, soul_id: str) -> None:
        """Drop every strain on a soul that is gone."""
        for key in [key for key in self._strains if key[0] == soul_id]:
            del self._strains[key]

    def _raise(self, soul_id: str, source: str, heard: float, now: float) -> float:
        """Add an input's intensity (1 at most) to a strain; return the strain before it."""
        key = (soul_id, source)
        strain = self.strain(soul_id, source, now)
        self._strains.pop(key, None)  # re-inserted last: the newest
        self._strains[key] = (min(MAX_STRAIN, strain + heard), now)
        if len(self._strains) > MAX_SOURCES:
            self._forget(now)
        return strain

    def _forget(self, now: float) -> None:
        """Drop the strains that have faded, then the oldest while too many."""
        for key in [key for key in self._strains if self.strain(*key, now) < FORGOTTEN]:
            del self._strains[key]
        while len(self._strains) > MAX_SOURCES:
            del self._strains[next(iter(self._strains))]


def source_of(user_id: str | None, terminal_id: str | None) -> str:
    """Name the source of a user turn: its user, else the body it came through."""
    if user_id:
        return f"user:{user_id}"
    if terminal_id:
        return f"terminal:{terminal_id}"
    return ""
