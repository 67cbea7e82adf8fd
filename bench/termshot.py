#!/usr/bin/env python3
"""Renders what a terminal showed into a PNG: a typescript written by script(1) is fed to
pyte (a VT100 emulator) and the screen is drawn with a monospace font. With --upto TEXT, the
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
    img = Image.new("RGB", (cw * a.cols + 24, ch * a.rows + 24), (30, 30, 30))
    draw = ImageDraw.Draw(img)
    for y, line in enumerate(screen.display):
        for x, c in enumerate(line.rstrip()):
            f = fallback if 0x2800 <= ord(c) <= 0x28FF else font
            draw.text((12 + x * cw, 12 + y * ch), c, font=f, fill=(220, 220, 220))
    img.save(a.png)


if __name__ == "__main__":
    main()
