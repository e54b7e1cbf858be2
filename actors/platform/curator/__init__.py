"""The skills curator: the daemon's periodic upkeep of the skills the agent wrote (Hermes's curator).

The ``curator`` actor (:mod:`actors.platform.curator.actor`) runs a pass on Hermes's schedule or when
``hermes-actors skills curate`` asks; each pass is a ``run`` job (:mod:`actors.platform.curator.job`). The
file work is :mod:`tools.skills.curation`, the model's request :mod:`conversation.curation`.
"""

from actors.platform.curator.actor import CURATOR, Curate, CuratorActor
from actors.platform.curator.job import CURATOR_SESSION, CurationJob, CurationReport

__all__ = ["CURATOR", "CURATOR_SESSION", "Curate", "CurationJob", "CurationReport", "CuratorActor"]
