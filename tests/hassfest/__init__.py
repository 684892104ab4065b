"""hassfest's rules for a custom integration, restated to check Soul's files.

hassfest (``script/hassfest`` in home-assistant/core) validates an integration's
translations, services.yaml, icons.json and manifest.json. It lives in Home
Assistant's source tree and is not shipped in the ``homeassistant`` wheel, so it
cannot be installed here; this package enforces the same rules with checks of
its own. Each module mirrors one of hassfest's scripts and names it:

- ``common``: the files, how they are loaded, and the schema building blocks
  (``text``, ``mapping``, ``keyed``, ``all_of``, ``exactly_one``, key rules);
- ``translations``: ``script/hassfest/translations.py``;
- ``services``: ``script/hassfest/services.py``;
- ``icons``: ``script/hassfest/icons.py``;
- ``manifest``: ``manifest.py``, ``requirements.py``, ``dependencies.py`` and
  ``config_flow.py``;
- ``code_keys``: the translation keys the source uses (``translation_key``,
  ``reason``, ``errors[...]``, ``step_id``, placeholders), read with ``ast``,
  as hassfest's translations.py and Home Assistant's own tests demand;
- ``runtime``: the same comparison at run time (the flows' forms, the actions'
  schemas, the entities Soul registers).

A check returns the problems it finds as ``"<key path>: <what is wrong>"``
lines and a test (``tests/test_hassfest_*.py``) asserts there are none, so a
failure names the file and the key; ``tests/test_hassfest_broken_copies.py``
runs the same checks on broken copies and shows that they fail.

Where hassfest is lenient with custom integrations (it validates only en.json,
takes actions without names), these checks hold every language and every
action to the rules of core integrations.
"""
