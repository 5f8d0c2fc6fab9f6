#!/usr/bin/python3
"""torchvision's DataLoader with PIL on the pairs file of bench_image_loader, with the same
transforms; prints images/s like it.

  bench/image_loader/loader_torch.py PAIRS --root DIR --recipe goyal|chainermn [--mean M] --workers N
"""
import argparse
import os
import time

import numpy
import torch
import torchvision.transforms as T
from PIL import Image


class Pairs(torch.utils.data.Dataset):
    def __init__(self, pairs, root, transform):
        with open(pairs) as f:
            self.pairs = [(p, int(l)) for p, l in (line.split() for line in f if line.strip())]
        self.root, self.transform = root, transform

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, i):
        path, label = self.pairs[i]
        with open(os.path.join(self.root, path), "rb") as f:
            image = Image.open(f).convert("RGB")
        return self.transform(image), label


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pairs")
    p.add_argument("--root", default=".")
    p.add_argument("--recipe", default="goyal")
    p.add_argument("--mean")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batchsize", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    if a.recipe == "goyal":
        tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    else:
        mean = torch.from_numpy(numpy.load(a.mean)) / 255.0
        crop = T.RandomCrop(224)
        # ChainerMN's order (mean first, then the crop) on a tensor, as the example's numpy code.
        tf = T.Compose([T.ToTensor(), lambda x: x - mean, crop, T.RandomHorizontalFlip()])
    ds = Pairs(a.pairs, a.root, tf)
    # One worker per core: num_workers=0 loads in this process (one core); N > 1 uses N processes.
    workers = 0 if a.workers == 1 else a.workers
    rates = []
    for r in range(a.repeats + 1):
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batchsize, shuffle=True, num_workers=workers)
        start = time.perf_counter()
        n = 0
        for x, t in loader:
            n += x.shape[0]
        if r > 0:
            rates.append(n / (time.perf_counter() - start))
    rates.sort()
    print("torchvision %s, %d workers: images/s min %.1f median %.1f max %.1f"
          % (a.recipe, a.workers, rates[0], rates[len(rates) // 2], rates[-1]))


if __name__ == "__main__":
    main()
