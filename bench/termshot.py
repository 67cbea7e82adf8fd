#!/usr/bin/env python3
"""Renders what a terminal showed into a PNG: a typescript written by script(1) (or the raw
bytes a program wrote, bench/browse_tty.py --raw) is fed to pyte (a VT100 emulator) and the
screen is drawn with a monospace font, in its colours and reverse video. With --upto TEXT, the
screen is taken at the Nth occurrence of TEXT in the output (a frame in the middle of a
progress bar), otherwise at the end.

    pip install pyte pillow
    python3 bench/termshot.py --cols 100 --rows 12 --upto freeing --nth 20 typescript out.png
"""
import argparse

import pyte
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
# For what the monospace font lacks (the spinner's braille patterns).
FALLBACK = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("typescript")
    ap.add_argument("png")
    ap.add_argument("--cols", type=int, default=100)
    ap.add_argument("--rows", type=int, default=12)
    ap.add_argument("--upto", help="stop at this text (the Nth time)")
    ap.add_argument("--nth", type=int, default=1)
    ap.add_argument("--prompt", default="$ ", help="shown before the first line")
    ap.add_argument("--command", default="", help="the command line to show first")
    a = ap.parse_args()

    data = open(a.typescript, "rb").read().decode("utf-8", "replace")
    # script(1)'s header and footer lines are not what the terminal showed.
    lines = data.split("\n")
    if lines and lines[0].startswith("Script started"):
        data = "\n".join(lines[1:])
    cut = data.find("\nScript done")
    if cut >= 0:
        data = data[:cut]
    if a.upto:
        at = -1
        for _ in range(a.nth):
            at = data.find(a.upto, at + 1)
            if at < 0:
                break
        if at >= 0:
            end = data.find("\r", at)
            data = data[: end if end >= 0 else len(data)]

    screen = pyte.Screen(a.cols, a.rows)
    stream = pyte.Stream(screen)
    if a.command:
        stream.feed(a.prompt + a.command + "\r\n")
    stream.feed(data.replace("\n", "\r\n").replace("\r\r\n", "\r\n"))

    font = ImageFont.truetype(FONT, 15)
    fallback = ImageFont.truetype(FALLBACK, 15)
    cw = font.getbbox("M")[2]
    ch = 20
    img = Image.new("RGB", (cw * a.cols + 24, ch * a.rows + 24), BG)
    draw = ImageDraw.Draw(img)
    for y in range(a.rows):
        row = screen.buffer[y]
        for x in range(a.cols):
            cell = row[x]
            fg, bg = colour(cell.fg, FG), colour(cell.bg, BG)
            if cell.reverse:
                fg, bg = bg, fg
            if bg != BG:
                draw.rectangle(
                    (12 + x * cw, 12 + y * ch, 12 + (x + 1) * cw - 1, 12 + (y + 1) * ch - 1),
                    fill=bg,
                )
            c = cell.data
            if c.strip():
                f = fallback if 0x2800 <= ord(c[0]) <= 0x28FF else font
                draw.text((12 + x * cw, 12 + y * ch), c, font=f, fill=fg)
    img.save(a.png)


FG, BG = (220, 220, 220), (30, 30, 30)
# pyte's colour names (SGR 30-37, 90-97), as a dark terminal theme shows them.
NAMED = {
    "black": (30, 30, 30), "red": (205, 49, 49), "green": (13, 188, 121),
    "yellow": (229, 229, 16), "blue": (36, 114, 200), "magenta": (188, 63, 188),
    "cyan": (17, 168, 205), "white": (229, 229, 229), "brightblack": (102, 102, 102),
    "brightred": (241, 76, 76), "brightgreen": (35, 209, 139), "brightyellow": (245, 245, 67),
    "brightblue": (59, 142, 234), "brightmagenta": (214, 112, 214), "brightcyan": (41, 184, 219),
    "brightwhite": (255, 255, 255),
}


def colour(name, default):
    """A pyte cell colour (a name, six hex digits, or "default") as RGB."""
    if name in NAMED:
        return NAMED[name]
    if isinstance(name, str) and len(name) == 6:
        try:
            return tuple(int(name[i : i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            pass
    return default


if __name__ == "__main__":
    main()
