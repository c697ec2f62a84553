"""evalstream: turn LLM evaluation datasets of any size into exactly what each judge may see."""

__version__ = "0.1.0"
