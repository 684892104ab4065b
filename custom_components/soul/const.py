"""Constants of the Soul integration."""

from __future__ import annotations

import logging
from typing import Final

from .core.invoker import DEFAULT_TIMEOUT
from .core.topics import DEFAULT_PREFIX

DOMAIN: Final = "soul"
LOGGER = logging.getLogger(__package__)

TITLE: Final = "Soul"

CONF_TOPIC_PREFIX: Final = "topic_prefix"
CONF_LLM_BASE_URL: Final = "llm_base_url"
CONF_LLM_API_KEY: Final = "llm_api_key"
CONF_LLM_MODEL: Final = "llm_model"
CONF_INVOKE_TIMEOUT: Final = "invoke_timeout"

DEFAULT_TOPIC_PREFIX: Final = DEFAULT_PREFIX
DEFAULT_INVOKE_TIMEOUT: Final = DEFAULT_TIMEOUT
