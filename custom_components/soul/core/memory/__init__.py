"""Long-term memory: one interface, several backends (docs/memory.md)."""

from .base import MEMORY_TYPES, MemoryBackend, MemoryBackendError, MemoryItem

__all__ = ["MEMORY_TYPES", "MemoryBackend", "MemoryBackendError", "MemoryItem"]
