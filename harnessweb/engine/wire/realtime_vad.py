"""Voice activity detection for the socket protocols' audio input (Realtime's ``server_vad``, Live's automatic
activity detection), deterministic: a PCM16 sample is speech when its magnitude reaches a level
(:data:`SPEECH_LEVEL` unless the session's threshold says otherwise), and speech stops after a run of quiet samples
as long as the session's silence duration. Measured in samples, never in wall time, so a test that appends the same
bytes gets the same events at the same offsets.
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass

SPEECH_LEVEL = 500  # about -36 dBFS: room noise and dithering stay under it, a voice's (or a test tone's) peaks don't


@dataclass(frozen=True)
class Speech:
    """What one chunk of audio showed: where speech started and, if it stopped, where (session-wide samples, the
    stop counted after its silence as the API counts it)."""

    started: int | None = None
    stopped: int | None = None


@dataclass
class Detector:
    """Speech in a stream of PCM16 mono audio. ``at`` counts the samples scanned in the whole session (timestamps
    are session-wide), ``pending`` holds what arrived after a stop (scanned by the next :meth:`feed`, so one call
    reports at most one turn) and an odd trailing byte."""

    at: int = 0
    start: int | None = None
    quiet: int = 0
    pending: bytes = b""

    @property
    def speaking(self) -> bool:
        return self.start is not None

    def feed(self, pcm: bytes, silence_samples: int, level: int = SPEECH_LEVEL) -> Speech:
        """Scan ``pcm`` (after what is pending) until speech stops: the speech that started and stopped in it (a
        sample whose magnitude reaches ``level`` is speech)."""
        data = self.pending + pcm
        whole = len(data) - len(data) % 2
        samples = array("h")
        samples.frombytes(data[:whole])
        if sys.byteorder == "big":  # PCM16 on the wire is little-endian
            samples.byteswap()
        started = None
        for i, sample in enumerate(samples):
            loud = sample >= level or sample <= -level
            if self.start is None:
                if loud:
                    self.start = started = self.at + i
                    self.quiet = 0
            elif loud:
                self.quiet = 0
            else:
                self.quiet += 1
                if self.quiet >= silence_samples:
                    self.at += i + 1
                    self.pending = data[2 * (i + 1) :]
                    self.start, self.quiet = None, 0
                    return Speech(started, self.at)
        self.at += len(samples)
        self.pending = data[whole:]
        return Speech(started, None)

    def reset(self) -> None:
        """Forget the speech under way and skip what is pending (the buffer was committed or cleared)."""
        self.at += len(self.pending) // 2
        self.pending, self.start, self.quiet = b"", None, 0


def level_of(threshold: float) -> int:
    """Realtime's ``threshold`` (0.0 to 1.0, default 0.5) as a sample level: the default is :data:`SPEECH_LEVEL`,
    a higher threshold needs louder audio."""
    return round(threshold * 2 * SPEECH_LEVEL)


def ms(samples: int, rate: int) -> int:
    """Samples as whole milliseconds at ``rate``."""
    return samples * 1000 // rate
