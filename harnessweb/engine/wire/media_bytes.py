"""The bytes of the fake images and audio, made with the standard library only and the same on every machine: a PNG
drawn from a seed (``zlib`` + ``struct``), silence as WAV (``wave``), raw PCM, FLAC or MP3 frames. Pure.

The PNG is a grid of 4 × 4 colour cells taken from SHA-256 of its seed, at a small size of the requested aspect. The
MP3 is a run of MPEG-1 Layer III frames (32 kbit/s, 32 kHz, mono) whose side information is all zeros: no main
data, which every decoder plays as silence. The FLAC is a ``STREAMINFO`` block (with the samples' MD5) and frames of
one CONSTANT subframe each (value 0, 16-bit mono at ``SAMPLE_RATE``): silence is what FLAC writes smallest.
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
FLAC_BLOCK = 4096  # samples a FLAC frame holds (the last one fewer)


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


def _crc8(data: bytes) -> int:
    """FLAC's frame header CRC: polynomial x^8 + x^2 + x + 1, initial 0."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def _crc16(data: bytes) -> int:
    """FLAC's frame CRC: polynomial x^16 + x^15 + x^2 + 1, initial 0."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def _utf8_number(number: int) -> bytes:
    """A frame number as FLAC codes it (UTF-8's scheme); a two-second clip needs at most two bytes."""
    return bytes([number]) if number < 0x80 else bytes([0xC0 | number >> 6, 0x80 | number & 0x3F])


def _flac_frame(number: int, samples: int) -> bytes:
    # Sync + fixed blocking; block size "16-bit (size - 1) at the header's end" (0111) and 24 kHz (0111); mono,
    # 16-bit samples (0000 100 0).
    header = b"\xff\xf8\x77\x08" + _utf8_number(number) + struct.pack(">H", samples - 1)
    header += bytes([_crc8(header)])
    frame = header + b"\x00\x00\x00"  # a CONSTANT subframe (no wasted bits) of the 16-bit value 0
    return frame + struct.pack(">H", _crc16(frame))


def flac_silence(seconds: float) -> bytes:
    """``seconds`` of silence as a FLAC file (16-bit mono at ``SAMPLE_RATE``)."""
    total = max(16, round(seconds * SAMPLE_RATE))
    sizes = [FLAC_BLOCK] * (total // FLAC_BLOCK) + ([total % FLAC_BLOCK] if total % FLAC_BLOCK else [])
    frames = [_flac_frame(number, size) for number, size in enumerate(sizes)]
    block = sizes[0] if len(sizes) == 1 else FLAC_BLOCK  # the smallest and largest, the last frame left out
    sizes_of = [len(f) for f in frames]
    info = struct.pack(">HH", block, block) + min(sizes_of).to_bytes(3, "big") + max(sizes_of).to_bytes(3, "big")
    # 20 bits of sample rate, 3 of channels - 1, 5 of bits per sample - 1, 36 of the sample count.
    info += ((SAMPLE_RATE << 44) | (0 << 41) | (15 << 36) | total).to_bytes(8, "big")
    info += hashlib.md5(pcm_silence(total / SAMPLE_RATE), usedforsecurity=False).digest()
    return b"fLaC" + b"\x80" + len(info).to_bytes(3, "big") + info + b"".join(frames)
