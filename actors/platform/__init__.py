"""The daemon's front doors: the daemon process, its control socket and the CLI.

Daemon side (Trio): ``daemon`` (process, lock, signals, the root tree),
``control`` and ``connection`` (the socket server and one actor per client),
``service`` (what control requests do), ``store_actor``, ``providers_actor``
and ``sessions`` (the parts of the tree). Client side (no Trio, no SDKs, fast
to start): ``cli``, ``commands``, ``attach``/``attach_view``, ``client``,
``autostart``, ``render``, ``demo``. Shared: ``paths``, ``errors``, ``lock``.

Nothing is imported here, so ``hermes-actors tree`` loads only what it uses.
"""
