"""Soul's Star Protocol client SDK: agents, environments and humans on a Star hub.

The whole API lives in ``soul_star.client`` and is re-exported here::

    from soul_star import AgentClient, EnvironmentClient, HumanClient
"""

from .client import (
    CLIENT_TYPES,
    HUB_ID,
    MAX_BATCH,
    PATH_PREFIX,
    AgentClient,
    Envelope,
    EnvironmentClient,
    HumanClient,
    Party,
    StarAuthError,
    StarClient,
    StarConnectionError,
    StarError,
    StarHubError,
    StarTimeoutError,
    new_id,
    now_iso,
    valid_id,
)

__version__ = "0.1.0"

__all__ = [
    "CLIENT_TYPES",
    "HUB_ID",
    "MAX_BATCH",
    "PATH_PREFIX",
    "AgentClient",
    "Envelope",
    "EnvironmentClient",
    "HumanClient",
    "Party",
    "StarAuthError",
    "StarClient",
    "StarConnectionError",
    "StarError",
    "StarHubError",
    "StarTimeoutError",
    "__version__",
    "new_id",
    "now_iso",
    "valid_id",
]
