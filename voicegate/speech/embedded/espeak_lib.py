"""libespeak-ng through ctypes: the library and voice data of the ``espeakng-loader`` wheel.

espeak-ng keeps its state (voice, rate, output buffer, synth callback) in process globals and
is not thread-safe, so an :class:`EspeakLibrary` makes exactly one worker thread call it: every
synthesis is a job queued to that thread, jobs run one after another, and nothing else ever
touches the library. Because the C state is process-wide, so is its handle: get it from
:func:`espeak_library`, which makes it once per process (a ``functools.cache``, the one
deliberate piece of module state here, mirroring the library's own). A second handle would
re-initialise the same C globals from a second thread and steal the first one's callback.

The library runs in ``AUDIO_OUTPUT_SYNCHRONOUS`` mode (speak_lib.h): ``espeak_Synth`` runs on
the calling thread and hands audio to the synth callback every ``CHUNK_MS`` of speech, so
chunks stream out while the rest of the text is still being synthesised, and a callback that
returns 1 aborts the synthesis at once (a cancelled turn).
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import importlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.clock.virtual import virtual_loop
from voicegate.errors import SpeechError

#: Audio per synth callback (espeak_Initialize's buflength): small, so the first chunk is quick.
CHUNK_MS = 50

# speak_lib.h constants.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # report a missing data directory instead of calling exit()
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_PARAMETER_RATE = 1
_EE_OK = 0
_CONTINUE, _ABORT = 0, 1

_SynthCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


@dataclass(frozen=True, slots=True)
class Voice:
    """Which espeak-ng voice speaks, and how fast."""

    name: str = "en-us"
    words_per_minute: int = 175


def bundled_paths() -> tuple[Path, Path]:
    """The library file and the ``espeak-ng-data`` directory the espeakng-loader wheel ships."""
    try:
        loader = importlib.import_module("espeakng_loader")
    except ImportError:
        raise SpeechError(
            "espeak: espeakng-loader is not installed (pip install 'espeakng-loader==0.2.4')"
        ) from None
    return Path(loader.get_library_path()), Path(loader.get_data_path())


@functools.cache
def espeak_library() -> EspeakLibrary:
    """The process's one handle on the bundled libespeak-ng (made, and initialised, once)."""
    library, data_dir = bundled_paths()
    return EspeakLibrary(library, data_dir)


class SynthesisJob:
    """One text being synthesised: chunks reach the event loop as the worker produces them."""

    def __init__(self, text: str, voice: Voice, loop: asyncio.AbstractEventLoop) -> None:
        self.text = text
        self.voice = voice
        self._loop = loop
        self._chunks: asyncio.Queue[Samples | SpeechError | None] = asyncio.Queue()
        self._stop = threading.Event()
        self.finished = threading.Event()
        self.aborted = False
        self.produced_samples = 0

    def stop(self) -> None:
        """Abort the synthesis at its next chunk (or before it starts); safe from any thread."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()

    async def chunks(self) -> Samples | None:
        """The next chunk of audio, or None at the end; raises ``SpeechError`` on failure."""
        item = await self._chunks.get()
        if isinstance(item, SpeechError):
            raise item
        return item

    def _deliver(self, item: Samples | SpeechError | None) -> None:
        """Hand an item to the job's event loop (worker thread); a closed loop stops the job."""
        try:
            self._loop.call_soon_threadsafe(self._chunks.put_nowait, item)
        except RuntimeError:
            self._stop.set()


class EspeakLibrary:
    """libespeak-ng and its one worker thread; use :func:`espeak_library`, not this directly."""

    def __init__(self, library_path: Path, data_dir: Path) -> None:
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="espeak")
        # Worker-thread state: touched only by jobs running on the worker.
        self._voice: Voice | None = None
        self._job: SynthesisJob | None = None
        self._callback = _SynthCallback(self._on_audio)  # kept alive as long as the library
        self._lib: Any = None
        self.sample_rate = self._worker.submit(self._initialize, library_path, data_dir).result()

    def check_voice(self, voice: Voice) -> None:
        """Raise ``SpeechError`` unless espeak-ng has ``voice`` (blocks for the worker)."""
        self._worker.submit(self._select, voice).result()

    def start(self, text: str, voice: Voice) -> SynthesisJob:
        """Queue ``text`` for synthesis; its chunks arrive on the running event loop."""
        job = SynthesisJob(text, voice, asyncio.get_running_loop())
        running = self._worker.submit(self._run, job)
        if (loop := virtual_loop()) is not None:
            loop.hold(running)  # virtual time stands still while espeak-ng works (issue 19)
        return job

    # --- the worker thread --------------------------------------------------------------------

    def _initialize(self, library_path: Path, data_dir: Path) -> int:
        try:
            lib = ctypes.CDLL(str(library_path))
        except OSError as error:
            raise SpeechError(f"espeak: cannot load {library_path}: {error}") from None
        _declare(lib)
        # The path argument is the directory that *contains* espeak-ng-data.
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS,
            CHUNK_MS,
            str(data_dir.parent).encode(),
            _INITIALIZE_DONT_EXIT,
        )
        if rate <= 0:
            raise SpeechError(f"espeak: cannot initialise with the voice data in {data_dir}")
        lib.espeak_SetSynthCallback(self._callback)
        self._lib = lib
        return int(rate)

    def _select(self, voice: Voice) -> None:
        if voice == self._voice:
            return
        if self._lib.espeak_SetVoiceByName(voice.name.encode()) != _EE_OK:
            self._voice = None
            raise SpeechError(f"espeak: no voice named {voice.name!r}")
        self._lib.espeak_SetParameter(_PARAMETER_RATE, voice.words_per_minute, 0)
        self._voice = voice

    def _run(self, job: SynthesisJob) -> None:
        outcome: SpeechError | None = None
        try:
            if not job.stopped:
                self._select(job.voice)
                self._synthesize(job)
        except SpeechError as error:
            outcome = error
        job.aborted = job.stopped
        job._deliver(outcome)
        job.finished.set()

    def _synthesize(self, job: SynthesisJob) -> None:
        text = job.text.encode("utf-8")
        buffer = ctypes.create_string_buffer(text)
        self._job = job
        try:
            status = self._lib.espeak_Synth(
                buffer, len(text) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
        finally:
            self._job = None
        if status != _EE_OK and not job.stopped:
            raise SpeechError(f"espeak: synthesis failed (espeak_Synth returned {status})")

    def _on_audio(self, wav: Any, count: int, events: Any) -> int:
        """The synth callback (worker thread): pass the chunk on, or abort a stopped job."""
        job = self._job
        if job is None or job.stopped:
            return _ABORT
        if count > 0 and wav:
            chunk = np.ctypeslib.as_array(wav, shape=(count,)).astype(np.int16, copy=True)
            job.produced_samples += count
            job._deliver(chunk)
        return _CONTINUE


def _declare(lib: Any) -> None:
    """Argument and result types of the speak_lib.h functions used here."""
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_SetSynthCallback.argtypes = [_SynthCallback]
    lib.espeak_SetSynthCallback.restype = None
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetVoiceByName.restype = ctypes.c_int
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_SetParameter.restype = ctypes.c_int
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.espeak_Synth.restype = ctypes.c_int
