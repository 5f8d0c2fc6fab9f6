#!/usr/bin/python3
"""Chainer 7.8.1's MultiprocessIterator on the pairs file of bench_image_loader with ChainerMN's
imagenet preprocessing (per-pixel mean, random 224 crop, flip, / 255; 256 x 256 inputs), or the
goyal recipe written with numpy and PIL; prints images/s like it. Needs Chainer on PYTHONPATH.

  PYTHONPATH=CHAINER bench/image_loader/loader_chainer.py PAIRS --root DIR --mean M --workers N
"""
import argparse
import math
import random
import time

import chainer
import numpy
from PIL import Image


class ChainerMNPreprocessed(chainer.dataset.DatasetMixin):
    """train_imagenet.py's PreprocessedDataset (random=True)."""

    def __init__(self, pairs, root, mean, crop_size):
        self.base = chainer.datasets.LabeledImageDataset(pairs, root)
        self.mean = mean.astype(numpy.float32)
        self.crop_size = crop_size

    def __len__(self):
        return len(self.base)

    def get_example(self, i):
        image, label = self.base[i]
        _, h, w = image.shape
        top = random.randint(0, h - self.crop_size - 1)
        left = random.randint(0, w - self.crop_size - 1)
        if random.randint(0, 1):
            image = image[:, :, ::-1]
        bottom, right = top + self.crop_size, left + self.crop_size
        image = image[:, top:bottom, left:right]
        image -= self.mean[:, top:bottom, left:right]
        image *= (1.0 / 255.0)
        return image, label


class Goyal(chainer.dataset.DatasetMixin):
    """RandomResizedCrop(224) with PIL's bilinear resize, flip, per-channel normalization."""

    def __init__(self, pairs, root):
        self.base = chainer.datasets.LabeledImageDataset(pairs, root, dtype=numpy.uint8)
        self.mean = numpy.array([123.675, 116.28, 103.53], numpy.float32)[:, None, None]
        self.std = numpy.array([58.395, 57.12, 57.375], numpy.float32)[:, None, None]

    def __len__(self):
        return len(self.base)

    def get_example(self, i):
        image, label = self.base[i]
        _, h, w = image.shape
        for _ in range(10):
            area = h * w * random.uniform(0.08, 1.0)
            ratio = math.exp(random.uniform(math.log(3 / 4), math.log(4 / 3)))
            cw, ch = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
            if 0 < cw <= w and 0 < ch <= h:
                break
        else:
            cw, ch = min(w, h), min(w, h)
        top, left = random.randint(0, h - ch), random.randint(0, w - cw)
        crop = Image.fromarray(image[:, top:top + ch, left:left + cw].transpose(1, 2, 0))
        out = numpy.asarray(crop.resize((224, 224), Image.BILINEAR), numpy.float32).transpose(2, 0, 1)
        if random.randint(0, 1):
            out = out[:, :, ::-1]
        return (out - self.mean) / self.std, label


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pairs")
    p.add_argument("--root", default=".")
    p.add_argument("--recipe", default="chainermn")
    p.add_argument("--mean")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batchsize", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    if a.recipe == "chainermn":
        ds = ChainerMNPreprocessed(a.pairs, a.root, numpy.load(a.mean), 224)
    else:
        ds = Goyal(a.pairs, a.root)
    rates = []
    for r in range(a.repeats + 1):
        it = chainer.iterators.MultiprocessIterator(ds, a.batchsize, repeat=False, n_processes=a.workers)
        start = time.perf_counter()
        n = 0
        for batch in it:
            x, t = chainer.dataset.concat_examples(batch)
            n += x.shape[0]
        it.finalize()
        if r > 0:
            rates.append(n / (time.perf_counter() - start))
    rates.sort()
    print("chainer %s, %d workers: images/s min %.1f median %.1f max %.1f"
          % (a.recipe, a.workers, rates[0], rates[len(rates) // 2], rates[-1]))


if __name__ == "__main__":
    main()
