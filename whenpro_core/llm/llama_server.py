"""``python -m whenpro_core.llm.llama_server [--no-repack] ARGS``: llama-cpp-python's
OpenAI-compatible server (``python -m llama_cpp.server ARGS``), as
:mod:`whenpro_core.llm.local_server` starts it for ``local:`` models.

``--no-repack`` loads the weights without llama.cpp's extra buffer types (weight
repacking, AMX tiles): some virtual machines report AMX but fault on its first tile
instruction (a general protection fault in ``libggml-cpu``), which kills the server on its
first answer. :mod:`~whenpro_core.llm.local_server` restarts a server that dies so with
this flag. Needs the ``whenpro[local]`` extra.
"""

from __future__ import annotations

import sys


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


def main(argv: list[str] | None = None) -> None:
    """Run the server with ``argv`` (default: this process's arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--no-repack" in args:
        args.remove("--no-repack")
        _without_extra_buffers()
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *args]
    serve()  # type: ignore[no-untyped-call]  # llama-cpp-python leaves main() unannotated


if __name__ == "__main__":
    main()
