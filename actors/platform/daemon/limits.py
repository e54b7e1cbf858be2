"""The daemon's open-file limit, raised as it starts to what the system allows.

A daemon hosting many sessions holds descriptors for each of them: its shell's pipes, its provider
connections, its sockets. At 400 busy sessions the concurrency benchmark's daemon held about 1,100,
past the soft limit of 1,024 most systems start a process with, and every session fails once it is
reached. The soft limit is only a default; the hard limit is what the administrator allows, so the
daemon takes that, capped: an unlimited one would make children that close every possible descriptor
(some still loop over them all) crawl.
"""

from __future__ import annotations

import logging
import resource

__all__ = ["MAX_OPEN_FILES", "raise_open_file_limit"]

log = logging.getLogger(__name__)

#: The most the soft limit is raised to, however high the hard limit is.
MAX_OPEN_FILES = 65536


def raise_open_file_limit(cap: int = MAX_OPEN_FILES) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit, at most ``cap``; the soft limit now.

    Never lowers it, and a refusal (a hard limit the kernel will not grant) is logged, not raised.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
        return soft
    log.info("open-file limit raised from %d to %d", soft, target)
    return target
