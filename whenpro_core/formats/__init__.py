"""Trace importers and the registry that picks one by sniffing content (docs/architecture.md, 'Module map' and
'Formats and step coordinates')."""

from whenpro_core.formats.registry import load_trace, load_traces, sniff, split_ref, walk

__all__ = ["load_trace", "load_traces", "sniff", "split_ref", "walk"]
