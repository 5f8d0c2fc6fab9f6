#!/usr/bin/python3
"""Makes ImageNet-like JPEGs from the photographs of Debian's mate-backgrounds package, for the image
loader benchmark: random crops of the photographs resized to ImageNet's typical sizes (the longer
side 500, the other 333 to 500), JPEG quality 90, in OUT/photos, with OUT/photos.txt ("path label";
the label is the source photograph); and the same images resized to 256 x 256 (ChainerMN's
preprocessing) in OUT/square, with OUT/square.txt and OUT/mean.npy.

  bench/image_loader/make_photos.py OUT [COUNT]      (default COUNT 512)
"""
import os
import random
import sys

import numpy
from PIL import Image

SOURCES = "/usr/share/backgrounds/mate/nature"


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    if not os.path.isdir(SOURCES):
        sys.exit("make_photos.py: no %s; apt-get install mate-backgrounds" % SOURCES)
    names = sorted(f for f in os.listdir(SOURCES) if f.lower().endswith(".jpg"))
    photos = [Image.open(os.path.join(SOURCES, f)).convert("RGB") for f in names]
    rng = random.Random(0)
    for sub in ("photos", "square"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    mean = numpy.zeros((256, 256, 3))
    with open(os.path.join(out, "photos.txt"), "w") as p, open(os.path.join(out, "square.txt"), "w") as s:
        for k in range(count):
            label = k % len(photos)
            src = photos[label]
            w, h = src.size
            # A window of 520 pixels to the whole shorter side (so the result is downscaled, with a
            # photograph's detail) with ImageNet's aspect ratios.
            side = int(rng.uniform(520, min(w, h)))
            ratio = rng.choice([4 / 3, 3 / 4, 1.0, 1.5])
            cw, ch = min(w, int(side * ratio)), min(h, side)
            x, y = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
            crop = src.crop((x, y, x + cw, y + ch))
            scale = 500.0 / max(cw, ch)
            img = crop.resize((max(1, round(cw * scale)), max(1, round(ch * scale))), Image.BILINEAR)
            name = "%05d.jpg" % k
            img.save(os.path.join(out, "photos", name), quality=90)
            square = img.resize((256, 256), Image.BILINEAR)
            square.save(os.path.join(out, "square", name), quality=90)
            mean += numpy.asarray(Image.open(os.path.join(out, "square", name)), dtype=numpy.float64)
            p.write("photos/%s %d\n" % (name, label))
            s.write("square/%s %d\n" % (name, label))
    numpy.save(os.path.join(out, "mean.npy"), (mean / count).transpose(2, 0, 1).astype(numpy.float32))
    print("make_photos.py: %d images from %d photographs in %s" % (count, len(photos), out))


if __name__ == "__main__":
    main()
