"""Lazy OpenCV import with quiet native logging.

``cv2`` costs about 0.2 s to import (CRAFT, "Textual facts"), so every media function
imports it through :func:`cv2` instead of at module level. Before the first import the
OpenCV and FFmpeg log levels default to quiet (``OPENCV_LOG_LEVEL=ERROR``,
``OPENCV_FFMPEG_LOGLEVEL=-8``, i.e. ``AV_LOG_QUIET``): a corrupt or truncated file must
end in one :class:`~whenpro_core.errors.MediaError` line, not in a burst of decoder
warnings on stderr. Set either variable yourself to see the native messages.
"""

from __future__ import annotations

import os
from types import ModuleType

_cv2: ModuleType | None = None


def cv2() -> ModuleType:
    """Return the ``cv2`` module, importing it on first use with quiet native logs."""
    global _cv2
    if _cv2 is None:
        os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
        os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")
        import cv2 as module  # lazy: OpenCV is slow to import; loaded on the first video

        _cv2 = module
    return _cv2
