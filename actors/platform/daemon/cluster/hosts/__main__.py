"""``python -m actors.platform.daemon.cluster.hosts INDEX``: a session-host process, started by the daemon's front."""

import sys

from actors.platform.daemon.cluster.hosts.process import run_host

if __name__ == "__main__":
    sys.exit(run_host(int(sys.argv[1])))
