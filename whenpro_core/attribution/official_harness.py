"""The official Who&When Pro harness (``whowhen_eval``, just1nlee/whowhen_pro) read at run
time, so ``--preset whowhen-pro`` can word its request with the harness's own prompt code
without whenpro shipping that text.

``--official-harness PATH`` (PATH: a checkout holding ``whowhen_eval/``, or that folder
itself) or ``--official-harness installed`` (the importable ``whowhen_eval`` package)
chooses it; the choice travels in ``$WHENPRO_OFFICIAL_HARNESS`` (so bench workers see
it). With a harness, the preset's transcript (whenpro's renderers of the official rules)
is handed to the harness's ``prompts.all_at_once`` with the taxonomy read by its
``prompts.load_taxonomy``: the request is the harness's, byte for byte. Without one, the
preset uses whenpro's own wording of the same rules and says so in one line.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

from whenpro_core.errors import ConfigError
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.views.transcript import ImagePart, Part, TextPart

#: Where the choice of harness travels: a path, ``installed``, or unset.
HARNESS_ENV = "WHENPRO_OFFICIAL_HARNESS"
PACKAGE = "whowhen_eval"
#: The coordinate of the harness's block that holds the task images.
TASK_ANCHOR = "task"
#: The suffix of a bench setting worded by the official harness (its resume key, record and
#: report label), so runs of the two wordings never mix.
OFFICIAL_WORDING = "@official-wording"
WHENPRO_WORDING = (
    "wording: whenpro's own words for the official request (same rules, sections and formats); "
    "--official-harness PATH sends the official harness's own wording"
)


@dataclass(frozen=True)
class Harness:
    """The harness's modules used to word the request: ``prompts`` (``all_at_once``,
    ``load_taxonomy``) and ``base`` (``RenderResult``, ``TranscriptBlock``,
    ``TASK_ANCHOR``), and where they were read from."""

    prompts: ModuleType
    base: ModuleType
    origin: str

    @property
    def wording(self) -> str:
        """The one line a run and a dry run show."""
        return f"wording: the official harness's own (whowhen_eval.prompts read at run time from {self.origin})"


def require_for(setting: str) -> None:
    """ConfigError when the bench ``setting`` was planned with the official wording but
    this process has no harness (a worker that did not get ``$WHENPRO_OFFICIAL_HARNESS``)."""
    if setting.endswith(OFFICIAL_WORDING) and load_harness() is None:
        raise ConfigError(
            f"{setting} needs the official harness, and this process has none",
            expected=f"{HARNESS_ENV} set where the items run (as --official-harness sets it)",
        )


def choose(value: str | None) -> None:
    """Record the ``--official-harness`` choice for this process and its workers; checks it
    now (ConfigError when PATH holds no ``whowhen_eval`` or nothing is installed)."""
    if value is None:
        return
    os.environ[HARNESS_ENV] = value if value == "installed" else str(Path(value).expanduser().resolve())
    load_harness()


def _package_dir(value: str) -> Path:
    root = Path(value).expanduser()
    for candidate in (root / PACKAGE, root):
        if (candidate / "prompts.py").is_file() and (candidate / "__init__.py").is_file():
            return candidate.resolve()
    raise ConfigError(
        f"--official-harness {value}: no {PACKAGE} package there",
        path=root,
        expected=f"a checkout of the official harness holding {PACKAGE}/prompts.py (or that folder)",
    )


def _import_from(package_dir: Path) -> ModuleType:
    """``whowhen_eval`` imported from ``package_dir`` (its parent put first on sys.path);
    ConfigError when another copy is already imported."""
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", "") or "").resolve().parent
        if where != package_dir:
            raise ConfigError(
                f"--official-harness {package_dir}: another {PACKAGE} is already loaded from {where}",
                expected="one official harness per run",
            )
        return loaded
    parent = str(package_dir.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    return importlib.import_module(PACKAGE)


def load_harness() -> Harness | None:
    """The chosen harness (``$WHENPRO_OFFICIAL_HARNESS``), or ``None`` when none was
    chosen. ConfigError when the choice cannot be imported."""
    value = os.environ.get(HARNESS_ENV, "").strip()
    if not value:
        return None
    try:
        if value == "installed":
            if importlib.util.find_spec(PACKAGE) is None:
                raise ConfigError(
                    f"--official-harness installed: no {PACKAGE} package is installed",
                    expected="pip install a checkout of the official harness, or --official-harness PATH",
                )
            package = importlib.import_module(PACKAGE)
        else:
            package = _import_from(_package_dir(value))
        prompts = importlib.import_module(f"{PACKAGE}.prompts")
        base = importlib.import_module(f"{PACKAGE}.render.base")
    except ImportError as exc:
        raise ConfigError(
            f"--official-harness {value}: its {PACKAGE} cannot be imported ({type(exc).__name__}: {exc})",
            expected="the harness and its dependencies (pyyaml, pillow)",
        ) from None
    return Harness(prompts, base, str(Path(getattr(package, "__file__", "") or value).parent))


class BlockLike(Protocol):
    """A rendered transcript block: coordinate (``task`` for the task images), header
    text, the images after it and the body text after them."""

    @property
    def coord(self) -> str | None: ...
    @property
    def text(self) -> str: ...
    @property
    def images(self) -> list[ImagePart]: ...
    @property
    def body(self) -> str: ...


def _to_harness(part: ImagePart) -> JSONObject:
    return {"type": "image_url", "image_url": {"url": f"data:{part.mime};base64,{part.data}"}}


def _from_harness(part: object) -> Part:
    """One content part the harness built, as whenpro's; ConfigError for a part of
    another shape (a harness version whenpro does not know)."""
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return TextPart(part["text"])
    url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
    head, _, data = str(url).partition(",")
    if head.startswith("data:") and head.endswith(";base64"):
        return ImagePart(data, head[len("data:") : -len(";base64")])
    raise ConfigError(
        "the official harness built a content part whenpro cannot send", expected="text or base64 image_url parts"
    )


def harness_worded(harness: Harness, blocks: Sequence[BlockLike], hint: str, query: str, root: Path) -> list[Part]:
    """The request's content parts as the harness's ``prompts.all_at_once`` builds them
    from ``blocks`` (whenpro's rendering of the official rules), the step-coordinate
    ``hint``, the user question and the taxonomy the harness reads from ``root``."""
    base = harness.base
    result = base.RenderResult(
        blocks=[
            base.TranscriptBlock(
                coord=b.coord, text=b.text, images=[_to_harness(i) for i in b.images], body_text=b.body
            )
            for b in blocks
        ],
        step_format_hint=hint,
    )
    taxonomy = harness.prompts.load_taxonomy(root)
    built = harness.prompts.all_at_once(result, problem=query, taxonomy=taxonomy)
    return [_from_harness(p) for p in built]
