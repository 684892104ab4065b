"""The intent filter (spec §4.4), split by concept.

So far: ``numbers`` (Arabic, Chinese and English numerals) and ``durations``
(spans such as "10分钟后", "一个半小时", "in half an hour"). The segmenter,
time-point parser, matcher and ``filter_intents`` entry point follow.
"""
