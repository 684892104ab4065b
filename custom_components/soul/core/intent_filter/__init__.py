"""The intent filter (spec §4.4): commands to catalog intents, without a model.

``filter_intents(request) -> response`` is the entry point. The package is split
by concept: ``numbers``, ``durations`` and ``timepoints`` read values;
``segmenter`` splits clauses; ``text`` detects the locale and folds text;
``lexicon`` holds Soul's built-in vocabulary and decision markers; ``entries``
checks one catalog entry (an intent and its slots) and ``catalog`` compiles a
whole catalog (keyword index, cached by content); ``request`` checks the
request; ``reading`` reads each clause once; ``slots`` fills an intent's slots;
``scoring`` scores an intent against a clause; ``engine`` decides.
"""

from .catalog import cached_catalog, clear_compile_cache, compile_catalog
from .engine import filter_intents
from .entries import IntentFilterError
from .request import valid_timezone_name

__all__ = [
    "IntentFilterError",
    "cached_catalog",
    "clear_compile_cache",
    "compile_catalog",
    "filter_intents",
    "valid_timezone_name",
]
