"""Model Context Protocol servers as the souls' tools (XingChen-V §4)."""
