"""The bytes of the fake images and audio, made with the standard library only and the same on every machine: a PNG
drawn from a seed (``zlib`` + ``struct``), silence as WAV (``wave``), raw PCM, or MP3 frames. Pure.

The PNG is a grid of 4 × 4 colour cells taken from SHA-256 of its seed, at a small size of the requested aspect. The
MP3 is a run of MPEG-1 Layer III frames (32 kbit/s, 32 kHz, mono) whose side information is all zeros: no main
data, which every decoder plays as silence.
"""

from __future__ import annotations

import hashlib
import io
import struct
import wave
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SMALL_SIDE = 64  # the longer side of a drawn image, in pixels
CELLS = 4  # the grid of colour cells each side
SAMPLE_RATE = 24_000  # OpenAI's speech PCM and WAV: 24 kHz, 16-bit signed little-endian, mono
MP3_RATE = 32_000
MP3_FRAME = b"\xff\xfb\x18\xc0" + bytes(140)  # 144 bytes: header, 17 bytes of zero side info, no main data
MP3_FRAME_SAMPLES = 1152


def small_size(width: int, height: int) -> tuple[int, int]:
    """The drawn size of an image asked for at ``width`` × ``height``: the longer side ``SMALL_SIDE``, the aspect
    kept (each side at least 1)."""
    scale = SMALL_SIDE / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(seed: str, width: int, height: int) -> bytes:
    """A ``width`` × ``height`` RGB PNG of ``CELLS`` × ``CELLS`` colour cells from SHA-256 of ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest() * 2  # 64 bytes: 16 cells × 3 channels and then some
    colours = [digest[i * 3 : i * 3 + 3] for i in range(CELLS * CELLS)]
    rows = []
    for y in range(height):
        cell_row = y * CELLS // height
        pixels = b"".join(colours[cell_row * CELLS + x * CELLS // width] for x in range(width))
        rows.append(b"\x00" + pixels)  # filter type 0 (None) on each scanline
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, deflate, no interlace
    idat = zlib.compress(b"".join(rows), 9)
    return PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def pcm_silence(seconds: float) -> bytes:
    """``seconds`` of 16-bit mono silence at ``SAMPLE_RATE``, raw."""
    return bytes(2 * round(seconds * SAMPLE_RATE))


def wav_silence(seconds: float) -> bytes:
    """``seconds`` of silence as a WAV file (16-bit mono PCM at ``SAMPLE_RATE``)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(pcm_silence(seconds))
    return out.getvalue()


def mp3_silence(seconds: float) -> bytes:
    """About ``seconds`` of silence as MP3 frames (at least one)."""
    frames = max(1, round(seconds * MP3_RATE / MP3_FRAME_SAMPLES))
    return MP3_FRAME * frames
