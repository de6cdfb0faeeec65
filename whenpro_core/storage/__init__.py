"""Files on disk: atomic writes, JSON bytes in and out, whenpro's own folders, and loading without GC pauses."""
