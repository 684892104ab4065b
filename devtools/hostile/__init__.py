r"""Attack a running Home Assistant with Soul, black-box, and report PASS/FAIL.

``python -m devtools.hostile`` (or ``scripts/hostile-check``) plays a
hostile body (an MQTT client on the broker Home Assistant uses), a non-admin
and a read-only user (HTTP and WebSocket), and Star clients
(``/api/soul/star/…``) against a real Home Assistant with Soul — for example
``scripts/develop`` — and checks that every bad input gets a clear, fast
answer and that nothing it sends corrupts state:

1. poisoned storage: lone surrogates (``\ud800`` as a JSON escape) in a soul
   name, a body's ``soul_hint`` and chat fields;
2. untrusted regexes with catastrophic backtracking (inline catalog, a body's
   catalog then chat, a skill schema ``pattern`` then ``soul.invoke_skill``),
   and a pattern that timed out on one body must stay on for an identical one;
3. a ~143 KB retained catalog of 20,000 keywords;
4. a flood of skill snapshots full of new schemas;
5. 1,100 heartbeat-only terminal ids, then a real body still gets a device
   (with 1,100 heartbeats of one known body as the control);
6. identities: reserved Star ids, taking over another user's id, admin-only
   actions and views, other users' sessions and user ids, read-only users;
7. Star liveness after 90 s, a burst within the rate limit, a flooder;
8. deep JSON, bad time zones and terminal ids, hostile ``$ref``, a Star chat
   with string parameters, large bodies (300 KiB read whole, 600 KiB → 413);
9. ``soul_emotion_update`` events per minute of an idle bound body;

and finally that Home Assistant still answers and still saves (``.storage``
files valid JSON without lone surrogates, written after the attack).

While it attacks, a thread sends ``GET /api/`` every 50 ms and every check
reports the worst latency seen during it: over 250 ms fails the check, over
60 ms warns. The exit code is 1 when a check failed.

Tokens: ``--token`` (admin), ``--user-token`` (non-admin), ``--readonly-token``
(read-only), or ``--tokens-file FILE`` as written by ``--bootstrap FILE``,
which onboards a fresh Home Assistant if needed, creates the three users and
long-lived tokens, and adds the Soul integration::

    SOUL_CONFIG_DIR=/tmp/soul-hostile-config scripts/develop &
    scripts/hostile-check --bootstrap /tmp/soul-hostile-tokens.json
    scripts/hostile-check --tokens-file /tmp/soul-hostile-tokens.json \
        --config-dir /tmp/soul-hostile-config

``--only 1,2,S`` runs some groups (setup always runs). Everything the harness
creates (terminals, retained messages, souls) is named ``hx<run>-…`` and
removed at the end.

Modules: ``cli`` (arguments, the run and its summary), ``bootstrap``
(onboarding, users, tokens, the Soul entry), ``fixtures`` (the run's souls,
bodies and clean-up), ``context`` (what the checks share, verdicts, latency
per check), ``client`` (HTTP, WebSocket, the pinger), ``mqtt`` (the hostile
body), ``starclient`` (Star connections), ``payloads`` (what is sent), and one
module per group of checks: ``storage`` (1), ``regexes`` (2), ``floods``
(3-5), ``identity`` (6), ``star`` (7), ``answers`` (8), ``recorder`` (9),
``saving`` (S).
"""
