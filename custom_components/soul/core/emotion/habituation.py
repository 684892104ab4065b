"""Habituation: a soul gets used to one source's repeated alarming input.

A shared soul has one mood for everyone. Without habituation one user who
keeps shouting at it keeps it shocked (``exec_mode: blocked``), and it
refuses every other user's commands for as long as that user goes on. So
each soul keeps, per source (the Home Assistant user, else the body the
words came through), a *strain*: the intensities of that source's alarming
inputs (the emotions that can shock: anger, disgust, frustration, anxiety,
fear), decaying with ``HALF_LIFE``. Such an input is felt at
``intensity / (1 + strain)``; any other (sadness too) is felt in full.

One intense outburst still shocks the soul; a second from the same source
soon after is felt at about half, which does not shock (``dynamics.is_shock``
asks for 0.95), and a source that goes on shouting moves the soul less and
less. The soul is used to a source again once its strain has decayed: some
20 minutes after one outburst. Another user's first outburst is felt in full.

Nothing is stored: a restart forgets the strains. Pure: times come from the
caller.
"""

from __future__ import annotations

import math

from .dynamics import SHOCK_PLEASURE
from .labels import PROTOTYPE, Emotion

HALF_LIFE = 300.0  # seconds for a source's strain to halve
MAX_SOURCES = 1024  # (soul, source) strains kept; the oldest go first
FORGOTTEN = 0.01  # a strain this small is as none
_NEG_LN2 = -math.log(2)
# The emotions that can shock a soul (``dynamics.is_shock`` at intensity 1).
ALARMING = frozenset(e for e, pad in PROTOTYPE.items() if pad.p <= SHOCK_PLEASURE)

type Source = tuple[str, str]  # (soul id, source)


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
    ) -> float:
        """Return how intensely the soul feels the input, and count it.

        An alarming emotion's intensity is divided by ``1 + strain`` and
        then adds its whole intensity (1 at most) to the strain; any other
        input is felt as it is and leaves the strain alone.
        """
        if emotion not in ALARMING or not intensity > 0:  # also NaN
            return intensity
        key = (soul_id, source)
        strain = self.strain(soul_id, source, now)
        felt = intensity / (1.0 + strain)
        self._strains.pop(key, None)  # re-inserted last: the newest
        self._strains[key] = (strain + min(1.0, intensity), now)
        if len(self._strains) > MAX_SOURCES:
            self._forget(now)
        return felt

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
