"""Write cellexec's kernel logo, SIZE pixels square, as a PNG to OUT:
a dark blue tile with three cells, the last one lit.  Standard library
only, so the build needs no image tool.  Usage: make_logo.py SIZE OUT"""
import struct
import sys
import zlib

BACKGROUND = (0x1F, 0x3A, 0x5F, 0xFF)
CELL = (0x9F, 0xB8, 0xD9, 0xFF)
LIT = (0xF2, 0xA9, 0x00, 0xFF)


def pixel(x, y, size):
    """The colour at X, Y: three stacked cells inside a margin."""
    margin = size // 8
    inner = size - 2 * margin
    if not (margin <= x < size - margin and margin <= y < size - margin):
        return BACKGROUND
    band = inner / 3
    row = int((y - margin) // band)
    top = margin + row * band
    gap = max(1, size // 32)
    if y < top + gap or y >= top + band - gap:
        return BACKGROUND
    return LIT if row == 2 else CELL


def png(size):
    rows = b"".join(b"\0" + b"".join(bytes(pixel(x, y, size)) for x in range(size))
                    for y in range(size))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    size, out = int(sys.argv[1]), sys.argv[2]
    with open(out, "wb") as f:
        f.write(png(size))
