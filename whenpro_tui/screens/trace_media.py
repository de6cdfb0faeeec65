"""Images and video keyframes on the trace screen (tuimedia; issue "The trace debugger
TUI", items 4–5).

A part of :class:`whenpro_tui.screens.trace.TraceScreen` (:mod:`.trace_host`). Showing a step fills the
detail pane's :class:`~whenpro_tui.widgets.media_panel.MediaPanel`:

* **images** (the step's, and the task's on the task step): thumbnails with labels
  and sizes, decoded by a thread worker through
  :func:`whenpro_core.media.preview.load_image` (confined paths, pixel caps, on-disk
  thumbnail cache) and kept decoded per MediaRef in a :class:`~whenpro_tui.imaging.ThumbCache`;
* **frames**: frames the trace references (kind ``frame``, with ``time_s``) as a strip
  with timestamps; for a **video** file the keyframes (scene cuts + uniform fill) of
  :func:`whenpro_core.media.preview.video_keyframes`, decoded by a cancellable
  thread worker with progress — moving to another step cancels it, and the on-disk
  cache makes the next visit instant.

Keys: ``m`` opens the step's images full size in :class:`MediaModal`; ``M`` focuses
the frame strip (``←``/``→`` move, ``enter`` opens, ``escape`` returns). Bad media
(missing, outside the dataset, corrupt, too many pixels) become red error lines.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.worker import get_current_worker

from whenpro_core.media.images import THUMB_MAX_SIDE
from whenpro_core.media.preview import (
    MediaItem,
    StepMedia,
    error_line,
    format_time,
    frame_caption,
    keyframe_caption,
    load_image,
    media_step_near,
    step_media,
    video_keyframes,
)
from whenpro_core.media.video import KeyframesCancelled
from whenpro_core.safety.textsafe import plural
from whenpro_core.trace.model import Trace
from whenpro_tui import imaging
from whenpro_tui.app_settings import images_setting
from whenpro_tui.messages import KeyframesLoaded, KeyframesProgress, ThumbLoaded
from whenpro_tui.screens.media_modal import MediaModal
from whenpro_tui.screens.trace_host import TracePart
from whenpro_tui.widgets.media_panel import POOL, MediaPanel
from whenpro_tui.widgets.media_strip import Entry, ThumbStrip
from whenpro_tui.widgets.step_detail import StepDetail

#: Keyframes taken from a video file.
KEYFRAMES = 8
HINT_STYLE = "dim"


class MediaViewing(TracePart):
    """Media panel, keyframe strip and full-size modal (a part of the trace screen)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the trace and step the panel shows (``None``: nothing shown yet)
        self._media_key: tuple[Trace, int | None] | None = None
        #: bumped per step shown: worker results of an older step are dropped
        self._media_gen = 0
        self._media_now = StepMedia()
        self._media_video: MediaItem | None = None
        self._video_errors: list[str] = []
        self._thumbs: imaging.ThumbCache | None = None

    # ------------------------------------------------------------------ plumbing

    @property
    def media_mode(self) -> str:
        """The image renderer in use (``off``, ``halfcell``, ``sixel``, ``kitty``)."""
        return imaging.resolve(images_setting(self.app))

    def media_panel(self) -> MediaPanel | None:
        """The detail pane's media panel once mounted (``None`` with ``--images off``,
        before the first step with media, and while the panel is still mounting)."""
        return self.query_one(StepDetail).media_panel

    def _thumb_cache(self) -> imaging.ThumbCache:
        if self._thumbs is None:
            self._thumbs = imaging.ThumbCache()
        return self._thumbs

    def _thumb_rows(self, sections: int = 1) -> int:
        """Thumbnail height in cells: what the detail pane has left after the title and
        the step's text (which keeps at least a third of the pane when long), within
        the panel's cap (3/4 of the pane), shared by the ``sections`` strips; 3 to 10
        rows."""
        detail = self.query_one(StepDetail)
        height = detail.size.height or self.app.size.height // 2
        body = min(detail.body.line_count, max(4, height // 3))
        free = min(height - body - 1, height * 3 // 4) - 1  # title; panel cap, top border
        return max(3, min(10, free // max(1, sections) - 4))  # heading, caption, scrollbar

    def on_step_detail_media_panel_mounted(self, _message: StepDetail.MediaPanelMounted) -> None:
        """The panel requested by :meth:`show_media` is there: show the step on display."""
        self._media_key = None
        self.show_media(self.query_one(StepDetail).shown_index)

    def _cancel_media(self, group: str) -> None:
        self.app.workers.cancel_group(self, group)

    # ------------------------------------------------------------------ showing a step

    def show_media(self, idx: int | None) -> None:
        """Fill the media panel for step ``idx`` (``None``: no step). Cheap when the
        step is already shown; starts the thumbnail and keyframe workers as needed."""
        panel = self.media_panel()
        if panel is None:
            if idx is not None and not step_media(self.trace, idx).empty:
                self.query_one(StepDetail).request_media_panel()
            return
        key = (self.trace, idx)
        if self._media_key is not None and self._media_key[0] is key[0] and self._media_key[1] == idx:
            return
        self._media_key = key
        self._media_gen += 1
        media = step_media(self.trace, idx) if idx is not None else StepMedia()
        self._media_now = media
        self._media_video = media.videos[0] if media.videos else None
        self._video_errors = []
        if media.empty:
            if self.focused_strip() is not None:
                self.steps.focus()
            panel.clear()
            self._cancel_media("media-thumbs")
            self._cancel_media("media-keyframes")
            return
        jobs: list[tuple[str, int, MediaItem]] = []
        images = [self._entry("images", slot, item, jobs) for slot, item in enumerate(media.images)]
        frames = [self._entry("frames", slot, item, jobs) for slot, item in enumerate(media.frames)]
        sections = int(bool(images)) + int(bool(frames or media.videos))
        panel.show_sections(
            images,
            frames,
            images_head=self._images_head(images),
            frames_head=self._frames_head(media),
            rows=self._thumb_rows(sections),
        )
        if jobs:
            self.load_thumbs(self._media_gen, self.trace, jobs)
        else:
            self._cancel_media("media-thumbs")
        if self._media_video is not None:
            self.load_keyframes(self._media_gen, self.trace, self._media_video)
        else:
            self._cancel_media("media-keyframes")

    def _entry(self, strip: str, slot: int, item: MediaItem, jobs: list[tuple[str, int, MediaItem]]) -> Entry:
        if strip == "frames":
            when = frame_caption(item)
            entry = Entry(
                when or item.label, item.label, ref=item.ref, name=f"{item.label} · {when}" if when else item.label
            )
        else:
            entry = Entry(item.label, ref=item.ref)
        cached = self._thumb_cache().get(item.ref)
        if cached is not None:
            image, detail, error = cached
            entry.image, entry.error, entry.loading = image, error, False
            if strip == "images":
                entry.detail = detail
        elif slot < POOL:
            jobs.append((strip, slot, item))
        return entry

    def _images_head(self, images: list[Entry]) -> Text:
        head = Text("▣ ", style="bold cyan")
        head.append(f"Images {len(images)}", style="bold")
        if len(images) > POOL:
            head.append(f" (first {POOL} here)")
        head.append("   m: full size · click a thumbnail", style=HINT_STYLE)
        return head

    def _frames_head(self, media: StepMedia, status: str = "") -> Text | None:
        head = Text("▶ ", style="bold magenta")
        if media.videos:
            video = media.videos[0]
            head.append(video.label, style="bold")
            if len(media.videos) > 1:
                head.append(f" (+{len(media.videos) - 1} more video)")
            head.append(f" {status or '· decoding…'}")
        elif media.frames:
            head.append(f"Frames {len(media.frames)}", style="bold")
            times = [f.ref.time_s for f in media.frames if f.ref.time_s is not None]
            if times:
                head.append(f"  {format_time(min(times))} – {format_time(max(times))}")
            head.append(" referenced by the trace")
        else:
            return None
        head.append("   M: strip · ←/→ · enter: full size", style=HINT_STYLE)
        return head

    # ------------------------------------------------------------------ thumbnails

    @work(thread=True, exclusive=True, group="media-thumbs", exit_on_error=False, description="load thumbnails")
    def load_thumbs(self, gen: int, trace: Trace, jobs: list[tuple[str, int, MediaItem]]) -> None:
        """Decode the thumbnails of ``jobs`` (thread worker), one message each."""
        worker = get_current_worker()
        for strip, slot, item in jobs:
            if worker.is_cancelled:
                return
            try:
                preview = load_image(item.ref, trace, max_side=THUMB_MAX_SIDE, cancelled=lambda: worker.is_cancelled)
                image = imaging.pil_from_jpeg(preview.jpeg)
                message = ThumbLoaded(gen, strip, slot, item.ref, image=image, detail=preview.size_text())
            except KeyframesCancelled:
                return
            except Exception as exc:  # a bad image is an error line, never a crash
                message = ThumbLoaded(gen, strip, slot, item.ref, error=error_line(item.label, exc))
            self.post_message(message)

    def on_thumb_loaded(self, message: ThumbLoaded) -> None:
        message.stop()
        self._thumb_cache().put(message.ref, (message.image, message.detail, message.error))
        panel = self.media_panel()
        if panel is None or message.gen != self._media_gen:
            return
        strip = panel.strip(message.strip)
        if message.slot >= len(strip.entries) or strip.entries[message.slot].ref is not message.ref:
            return
        entry = strip.entries[message.slot]
        entry.image, entry.error, entry.loading = message.image, message.error, False
        if message.strip == "images":
            entry.detail = message.detail
        strip.update_entry(message.slot)
        if message.error:
            panel.show_errors(self._video_errors)
        if not any(e.loading for e in strip.entries[: strip.pool]):
            self._refit_media()  # every thumbnail is in: size them by their real shapes

    # ------------------------------------------------------------------ keyframes

    @work(thread=True, exclusive=True, group="media-keyframes", exit_on_error=False, description="extract keyframes")
    def load_keyframes(self, gen: int, trace: Trace, item: MediaItem) -> None:
        """Keyframes of a video (thread worker; cancelled when the step changes)."""
        worker = get_current_worker()

        def progress(done: int, total: int | None) -> None:
            self.post_message(KeyframesProgress(gen, done, total))

        try:
            result = video_keyframes(
                item.ref, trace, max_frames=KEYFRAMES, cancelled=lambda: worker.is_cancelled, progress=progress
            )
            thumbs = [imaging.pil_from_jpeg(jpeg, THUMB_MAX_SIDE) for jpeg in result.images]
        except KeyframesCancelled:
            return
        except Exception as exc:  # a bad video is an error line, never a crash
            self.post_message(
                KeyframesLoaded(
                    gen,
                    item.label,
                    error=error_line(item.label, exc),
                )
            )
            return
        if not worker.is_cancelled:
            self.post_message(
                KeyframesLoaded(
                    gen,
                    item.label,
                    result=result,
                    thumbs=thumbs,
                )
            )

    def on_keyframes_progress(self, message: KeyframesProgress) -> None:
        message.stop()
        panel = self.media_panel()
        if panel is None or message.gen != self._media_gen or self._media_video is None:
            return
        of = f"/{message.total:,}" if message.total else ""
        head = self._frames_head(self._media_now, f"· decoding {message.done:,}{of} frames…")
        if head is not None:
            panel.set_head("frames", head)

    def on_keyframes_loaded(self, message: KeyframesLoaded) -> None:
        message.stop()
        panel = self.media_panel()
        if panel is None or message.gen != self._media_gen:
            return
        media = self._media_now
        strip = panel.strip("frames")
        trace_frames = [e for e in strip.entries if e.jpeg is None]
        if message.error:
            self._video_errors = [message.error]
            panel.set_head("frames", self._frames_head(media, "· unavailable (see below)") or Text(""))
            panel.show_errors(self._video_errors)
            return
        self._video_errors = []
        result: Any = message.result
        entries = [
            Entry(
                keyframe_caption(kf),
                f"frame {kf.frame:,}",
                image=thumb,
                jpeg=jpeg,
                loading=False,
                name=f"{message.label} · {format_time(kf.time_s)} · "
                f"frame {kf.frame:,}" + (" · scene cut" if kf.cut else ""),
            )
            for kf, jpeg, thumb in zip(result.keyframes, result.images, message.thumbs, strict=False)
        ]
        cuts = sum(1 for kf in result.keyframes if kf.cut)
        status = (
            f"· {len(entries)} keyframes ({plural(cuts, 'cut')} ✂) · "
            f"{result.scan.frames:,} frames, {format_time(result.scan.duration_s)}"
        )
        if result.cache_hit:
            status += " · cached"
        panel.set_section(
            "frames",
            trace_frames + entries,
            self._frames_head(media, status),
            self._thumb_rows(1 + int(bool(panel.strip("images").entries))),
        )
        panel.show_errors(result.scan.warnings)

    # ------------------------------------------------------------------ keys

    def focused_strip(self) -> ThumbStrip | None:
        focused = self.app.focused
        return focused if isinstance(focused, ThumbStrip) else None

    def _catch_up(self) -> None:
        """Show the step under the cursor now if a burst of keys left it pending (``m``
        or ``M`` typed right after ``j``)."""
        if self.query_one(StepDetail).shown_index != self.steps.step_index:
            self._show_current()

    def action_open_media(self) -> None:
        """``m``: the step's images and frames full size."""
        self._catch_up()
        panel = self.media_panel()
        if panel is None:
            self.notify(self._no_panel_note(), severity="warning" if self.media_mode == "off" else "information")
            return
        entries = panel.entries()
        if not entries or not panel.display:
            self.notify("This step has no images or frames.")
            return
        index = 0
        strip = self.focused_strip()
        if strip is not None:
            index = self._offset(panel, strip) + strip.cursor
        self._open_modal(entries, index)

    def action_focus_media(self) -> None:
        """``M``: focus the keyframe strip (else the image strip)."""
        self._catch_up()
        panel = self.media_panel()
        for name in ("frames", "images"):
            if panel is not None and panel.display and panel.strip(name).shown:
                self.set_focus(panel.strip(name))  # now: keys may follow at once
                return
        if self.media_mode != "off":
            self._go_to_media()
            return
        self.notify("This step has no frames or images." if panel is not None else self._no_panel_note())

    def _go_to_media(self) -> None:
        """``M`` on a step without media: move to the step that shows the task's media, or
        to the next step with media, and say so in one line (issue 32: the video sample's
        video is the task's, shown on the step presenting the task)."""
        here = self.steps.step_index
        near = media_step_near(self.trace, here if here is not None else 0, self.steps.shown)
        if near is None:
            self.notify("This trace has no images or frames on any step shown.")
            return
        at, why = near
        position = self.steps.position_of(at)
        if position is None:
            return
        self.steps.move_cursor(position, center=True)
        coord = self.trace.steps[at].coord or str(at)
        if why == "task":
            what = "task's video" if any(r.kind == "video" for r in self.trace.task.images) else "task's images"
            self.notify(f"Showing the {what} on step {coord}, which presents the task. M again: its strip.")
        else:
            self.notify(f"This step has no frames or images: moved to step {coord}, the next that has. M: its strip.")

    def _no_panel_note(self) -> str:
        """Why there is no media panel: images turned off (by ``--images off``, or a
        renderer this terminal lacks), else no step shown so far has images or frames."""
        setting = images_setting(self.app)
        if setting == "off":
            return "Images are off (--images off)."
        if self.media_mode == "off":
            return f"Images are off: --images {setting} draws none here (try --images halfcell)."
        return "This step has no images or frames."

    def _offset(self, panel: MediaPanel, strip: ThumbStrip) -> int:
        return len(panel.strip("images").entries) if strip.id == "mp-frames" else 0

    def _open_modal(self, entries: list[Entry], index: int) -> None:
        self.app.push_screen(MediaModal(entries, index, self.trace, self.media_mode))

    def on_thumb_strip_chosen(self, event: ThumbStrip.Chosen) -> None:
        event.stop()
        panel = self.media_panel()
        if panel is not None:
            self._open_modal(panel.entries(), self._offset(panel, event.strip) + event.index)

    def on_thumb_strip_leave(self, event: ThumbStrip.Leave) -> None:
        event.stop()
        self.steps.focus()

    def media_resized(self) -> None:
        """The screen was resized (called by TraceScreen.on_resize): refit thumbnails."""
        self.call_after_refresh(self._refit_media)

    def _refit_media(self) -> None:
        panel = self.media_panel()
        if panel is None or not panel.display:
            return
        sections = sum(1 for n in ("images", "frames") if panel.strip(n).display)
        panel.set_rows(self._thumb_rows(sections or 1))
