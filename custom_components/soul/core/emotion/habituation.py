"""Habituation: a soul gets used to one source's repeated outbursts.

A shared soul has one mood for everyone. Without habituation one user who
shouted at it once a minute kept it shocked (``exec_mode: blocked``), and it
refused every other user's commands for as long as that user went on. So
each soul keeps, per source (the Home Assistant user who spoke, else the
body the words came through), a *strain*: the intensities of that source's
alarming inputs (the emotions that can shock: anger, disgust, frustration,
anxiety, fear), which halves every ``HALF_LIFE`` seconds and stays at most
``MAX_STRAIN``.

- **The shock** is decided on ``intensity / (1 + strain)``: a first
  outburst may shock; one from the same source soon after is felt at about
  half, and a shock asks for 0.95 (``dynamics.is_shock``). The soul is used
  to that source until its strain is under about 0.05: some 20 minutes after
  one outburst, at most about 38 however long the source went on.
- **The mood** moves in full for a source's first few outbursts (a strain
  up to ``MOOD_GRACE``), so a few angry turns still bring the soul to ask
  first (``confirm``), then by ``intensity / (1 + strain - MOOD_GRACE)``:
  one source cannot hold it at ``blocked`` by keeping on.

Any other input (sadness too) is felt in full and adds no strain. Nothing is
stored: a restart forgets the strains. Pure: times come from the caller.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .dynamics import SHOCK_PLEASURE
from .labels import PROTOTYPE, Emotion

HALF_LIFE = 300.0  # seconds for a source's strain to halve
MAX_STRAIN = 10.0  # however long a source went on
MOOD_GRACE = 5.0  # strain up to which a source's outbursts move the mood in full
MAX_SOURCES = 1024  # (soul, source) strains kept; the oldest go first
FORGOTTEN = 0.01  # a strain this small is as none
_NEG_LN2 = -math.log(2)
# The emotions that can shock a soul (``dynamics.is_shock`` at intensity 1).
ALARMING = frozenset(e for e, pad in PROTOTYPE.items() if pad.p <= SHOCK_PLEASURE)

type Source = tuple[str, str]  # (soul id, source)


class Felt(NamedTuple):
    """How intensely a soul feels one input."""

    mood: float  # how far it moves the soul's PAD state
    shock: float  # what its shock is decided on


class Habituation:
    """Each soul's strain from each source's alarming input."""

    def __init__(self) -> None:
        """Start with no strain from anyone."""
        # (soul id, source) → (strain, when it was last raised); oldest first
        self._strains: dict[Source, tuple[float, float]] = {}

    def strain(self, soul_id: str, source: str, now: float) -> float:
        """Return ``source``'s strain on the soul at ``now``."""
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

        An alarming emotion is felt less the more strain its source put on
        the soul (the module's rules) and adds its intensity (1 at most) to
        that strain; any other input is felt as it is and adds nothing.
        """
        if emotion not in ALARMING or not intensity > 0:  # also NaN
            return Felt(intensity, intensity)
        key = (soul_id, source)
        strain = self.strain(soul_id, source, now)
        heard = min(1.0, intensity)
        self._strains.pop(key, None)  # re-inserted last: the newest
        self._strains[key] = (min(MAX_STRAIN, strain + heard), now)
        if len(self._strains) > MAX_SOURCES:
            self._forget(now)
        return Felt(
            heard / (1.0 + max(0.0, strain - MOOD_GRACE)), heard / (1.0 + strain)
        )

    def forget_soul(self, soul_id: str) -> None:
        """Drop every strain on a soul that is gone."""
        for key in [key for key in self._strains if key[0] == soul_id]:
            del self._strains[key]

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
