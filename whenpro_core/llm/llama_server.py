"""``python -m whenpro_core.llm.llama_server [--no-repack] [--parent-pid PID] ARGS``: llama-cpp-python's
OpenAI-compatible server (``python -m llama_cpp.server ARGS``), as
:mod:`whenpro_core.llm.local_server` starts it for ``local:`` models.

``--no-repack`` loads the weights without llama.cpp's extra buffer types (weight
repacking, AMX tiles): some virtual machines report AMX but fault on its first tile
instruction (a general protection fault in ``libggml-cpu``), which kills the server on its
first answer. :mod:`~whenpro_core.llm.local_server` restarts a server that dies so with
this flag. ``--parent-pid`` ends the server when that process (the whenpro run that
started it) is gone, however it ended (a killed run runs no exit handler). Needs the
``whenpro[local]`` extra.
"""

from __future__ import annotations

import os
import sys
import threading
import time


def _without_extra_buffers() -> None:
    """Make every model load with ``use_extra_bufts = False`` (llama-cpp-python builds its
    model parameters from ``llama_model_default_params`` and has no option for it)."""
    from llama_cpp import llama_cpp as low

    default = low.llama_model_default_params

    def params() -> object:
        built = default()
        built.use_extra_bufts = False
        return built

    low.llama_model_default_params = params


def _end_with(parent: int) -> None:
    """End this process once ``parent`` is no longer its parent (checked every second)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="whenpro-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    """Run the server with ``argv`` (default: this process's arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--parent-pid" in args:
        at = args.index("--parent-pid")
        _end_with(int(args[at + 1]))
        del args[at : at + 2]
    if "--no-repack" in args:
        args.remove("--no-repack")
        _without_extra_buffers()
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *args]
    serve()  # type: ignore[no-untyped-call]  # llama-cpp-python leaves main() unannotated


if __name__ == "__main__":
    main()
