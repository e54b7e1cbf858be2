"""Session hosts (``daemon.hosts``): the daemon's sessions in several processes under one front
(docs/DECISIONS.md#d-session-hosts).

The front (the daemon process) keeps the control socket, the HTTP API, the platforms and cron. Under
``hosts`` it supervises N host processes, each its own Trio actor system with its sessions, tools,
providers and store connection (``process``); ``hosts/host:<n>`` is the front's actor for one
(``actor``). The front reaches each over a Unix socket in the control protocol (``link``), places
sessions on them (``placement``) and hands them the requests they answer (``host_requests``);
``mcp_relay`` serves a host the front's MCP tools.
"""
