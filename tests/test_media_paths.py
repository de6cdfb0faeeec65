"""Media path resolution and confinement: untrusted trace content (docs/architecture.md, 'Untrusted content')."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from whenpro_core.errors import MediaError
from whenpro_core.media import decode_inline, image_size, read_media_bytes, resolve_media
from whenpro_core.trace.model import MediaRef

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def dataset(tmp_path: Path) -> dict[str, Path]:
    """A Who&When Pro-like layout: images under assets/, the trace under data/traces/,
    and a secret file next to (outside) the dataset root."""
    root = tmp_path / "dataset"
    (root / "assets" / "examples" / "car").mkdir(parents=True)
    (root / "data" / "traces").mkdir(parents=True)
    (root / "assets" / "examples" / "car" / "query_0.jpg").write_bytes(b"root-image")
    (root / "data" / "traces" / "local.png").write_bytes(b"trace-local")
    trace = root / "data" / "traces" / "t.json"
    trace.write_text("{}")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    return {"root": root, "trace": trace, "secret": secret}


def test_inline_base64_with_and_without_data_url_prefix():
    b64 = base64.b64encode(PNG_1x1).decode()
    assert decode_inline(b64) == PNG_1x1
    assert decode_inline("data:image/png;base64," + b64) == PNG_1x1
    wrapped = "\n".join(b64[i : i + 20] for i in range(0, len(b64), 20))
    assert resolve_media(MediaRef(data=wrapped)) == PNG_1x1
    assert image_size(resolve_media(MediaRef(data="data:image/png;base64," + b64))) == (1, 1)


def test_inline_data_bad_base64_and_size_cap():
    with pytest.raises(MediaError, match="not valid base64"):
        decode_inline("this is *not* base64!!")
    with pytest.raises(MediaError, match="empty"):
        decode_inline("data:image/png;base64,   ")
    big = base64.b64encode(b"x" * 5000).decode()
    with pytest.raises(MediaError, match="larger than 1000 bytes"):
        resolve_media(MediaRef(data=big), max_bytes=1000)


def test_relative_path_resolves_against_dataset_root_first(dataset):
    ref = MediaRef(path="assets/examples/car/query_0.jpg")
    got = resolve_media(ref, dataset["trace"], dataset["root"])
    assert got == (dataset["root"] / "assets/examples/car/query_0.jpg").resolve()
    assert read_media_bytes(ref, dataset["trace"], dataset["root"]) == b"root-image"


def test_relative_path_falls_back_to_trace_folder(dataset):
    ref = MediaRef(path="local.png")
    assert read_media_bytes(ref, dataset["trace"], dataset["root"]) == b"trace-local"
    # and with no dataset root at all
    assert read_media_bytes(ref, dataset["trace"], None) == b"trace-local"
    # Windows separators are separators
    win = MediaRef(path="assets\\examples\\car\\query_0.jpg")
    assert read_media_bytes(win, dataset["trace"], dataset["root"]) == b"root-image"


def test_dotdot_escaping_the_dataset_is_refused(dataset):
    rel = os.path.relpath(dataset["secret"], dataset["root"])  # "../secret.txt"
    with pytest.raises(MediaError, match="refused") as exc:
        resolve_media(MediaRef(path=rel), dataset["root"], dataset["root"])
    assert "do not read" not in str(exc.value)
    for evil in ("../../etc/passwd", "../../../../../../../../etc/passwd", "assets/../../secret.txt"):
        with pytest.raises(MediaError):
            read_media_bytes(MediaRef(path=evil), dataset["trace"], dataset["root"])


def test_absolute_paths_outside_are_refused_inside_are_accepted(dataset):
    with pytest.raises(MediaError, match="absolute media path refused"):
        resolve_media(MediaRef(path="/etc/passwd"), dataset["trace"], dataset["root"])
    with pytest.raises(MediaError, match="refused"):
        resolve_media(MediaRef(path=str(dataset["secret"])), dataset["trace"], dataset["root"])
    with pytest.raises(MediaError, match="refused"):
        resolve_media(MediaRef(path="C:\\Windows\\win.ini"), dataset["trace"], dataset["root"])
    inside = dataset["root"] / "assets/examples/car/query_0.jpg"
    assert resolve_media(MediaRef(path=str(inside)), dataset["trace"], dataset["root"]) == inside.resolve()


def test_symlink_out_of_the_root_is_refused(dataset):
    link = dataset["root"] / "assets" / "leak.jpg"
    link.symlink_to(dataset["secret"])
    with pytest.raises(MediaError, match="refused"):
        read_media_bytes(MediaRef(path="assets/leak.jpg"), dataset["trace"], dataset["root"])
    dir_link = dataset["root"] / "assets" / "up"
    dir_link.symlink_to(dataset["secret"].parent)
    with pytest.raises(MediaError, match="refused"):
        read_media_bytes(MediaRef(path="assets/up/secret.txt"), dataset["trace"], dataset["root"])
    # a link that stays inside the dataset is fine
    ok = dataset["root"] / "assets" / "alias.jpg"
    ok.symlink_to(dataset["root"] / "assets/examples/car/query_0.jpg")
    assert read_media_bytes(MediaRef(path="assets/alias.jpg"), dataset["trace"], dataset["root"]) == b"root-image"


def test_missing_file_error_names_the_path(dataset):
    with pytest.raises(MediaError) as exc:
        resolve_media(MediaRef(path="assets/examples/car/query_9.jpg"), dataset["trace"], dataset["root"])
    msg = exc.value.one_line()
    assert "assets/examples/car/query_9.jpg" in msg and "not found" in msg
    assert "\n" not in msg


def test_hostile_path_text_is_escaped_in_the_message(dataset):
    with pytest.raises(MediaError) as exc:
        resolve_media(MediaRef(path="\x1b[31mred\x1b[0m.jpg"), dataset["trace"], dataset["root"])
    msg = exc.value.one_line()
    assert "\x1b" not in msg and "\\x1b[31mred" in msg
    with pytest.raises(MediaError):
        resolve_media(MediaRef(path="a\x00b.jpg"), dataset["trace"], dataset["root"])


def test_urls_directories_and_empty_refs_are_refused(dataset):
    with pytest.raises(MediaError, match="remote"):
        resolve_media(MediaRef(path="https://example.com/x.jpg"), dataset["trace"], dataset["root"])
    with pytest.raises(MediaError, match="not found"):
        resolve_media(MediaRef(path="assets"), dataset["trace"], dataset["root"])  # a folder
    with pytest.raises(MediaError, match="neither data nor path"):
        resolve_media(MediaRef(kind="image"), dataset["trace"], dataset["root"])
    with pytest.raises(MediaError, match="without a trace folder or dataset root"):
        resolve_media(MediaRef(path="x.jpg"))


def test_file_size_cap(dataset):
    with pytest.raises(MediaError, match="larger than 4 bytes"):
        read_media_bytes(MediaRef(path="local.png"), dataset["trace"], None, max_bytes=4)


def _who_when_pro_refs(doc: dict) -> list[str]:
    paths = [im["path"] for im in doc.get("task", {}).get("images") or [] if isinstance(im, dict) and "path" in im]
    for entry in doc["trajectory"]:
        for key in ("images", "observation_images", "frames"):
            for item in entry.get(key) or []:
                if isinstance(item, dict) and "path" in item:
                    paths.append(item["path"])
    return paths


@pytest.mark.real_traces
def test_who_when_pro_sample_media_resolve_against_the_dataset_root(real_traces):
    root = real_traces / "who-when-pro-samples"
    traces = sorted((root / "data" / "traces").glob("*.json"))
    assert traces, "no Who&When Pro sample traces"
    seen = 0
    for trace in traces:
        for rel in _who_when_pro_refs(json.loads(trace.read_text())):
            assert rel.startswith("assets/examples/")
            data = read_media_bytes(MediaRef(path=rel), trace, root)
            w, h = image_size(data, source=rel)
            assert w > 0 and h > 0
            seen += 1
        # the same paths do not resolve against the trace folder alone: the root matters
    assert seen >= 10  # lvbench_camel alone has 10 frames
    with pytest.raises(MediaError, match="not found"):
        resolve_media(MediaRef(path="assets/examples/lvbench_camel/frame_0000.jpg"), traces[0], None)
