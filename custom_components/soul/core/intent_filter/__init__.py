"""The intent filter (spec §4.4), split by concept.

So far: ``numbers`` (Arabic, Chinese and English numerals), ``durations``
("10分钟后", "一个半小时", "in half an hour"), ``timepoints`` ("明天早上8点",
"at 3:30 pm") and ``segmenter`` (clauses with spans). The lexicon, matcher,
response builder and the ``filter_intents`` entry point follow.
"""
