#!/usr/bin/env python3
"""examples/train_mnist.cpp in PyTorch, for comparing peak memory and time of the same run: MLP
784-1000-1000-10, Adam, batch 100, shuffled each epoch, evaluated on the test set every epoch.
Reads the same IDX .gz files (Debian's dataset-fashion-mnist by default).

    python3 bench/train_mnist_torch.py --epoch 5 --threads 1
"""
import argparse
import gzip
import os
import resource
import time

import numpy as np
import torch


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(directory, prefix):
    x = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz")).reshape(-1, 784)
    t = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"))
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(t.astype(np.int64))


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epoch", "-e", type=int, default=20)
    parser.add_argument("--batchsize", "-b", type=int, default=100)
    parser.add_argument("--unit", "-u", type=int, default=1000)
    parser.add_argument("--threads", "-t", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset-dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x_train, t_train = load(args.dataset_dir, "train")
    x_test, t_test = load(args.dataset_dir, "t10k")
    model = torch.nn.Sequential(torch.nn.Linear(784, args.unit), torch.nn.ReLU(),
                                torch.nn.Linear(args.unit, args.unit), torch.nn.ReLU(),
                                torch.nn.Linear(args.unit, 10))
    optimizer = torch.optim.Adam(model.parameters())
    start = time.perf_counter()
    print("epoch  main/loss  validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time  rss_mib")
    for epoch in range(1, args.epoch + 1):
        model.train()
        order = torch.randperm(len(x_train))
        loss_sum = acc_sum = 0.0
        batches = 0
        for i in range(0, len(order), args.batchsize):
            idx = order[i:i + args.batchsize]
            x, t = x_train[idx], t_train[idx]
            optimizer.zero_grad()
            y = model(x)
            loss = torch.nn.functional.cross_entropy(y, t)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item()
            acc_sum += (y.argmax(1) == t).float().mean().item()
            batches += 1
        model.eval()
        val_loss = val_acc = 0.0
        with torch.no_grad():  # in batches, as the Evaluator does
            for i in range(0, len(x_test), args.batchsize):
                y, t = model(x_test[i:i + args.batchsize]), t_test[i:i + args.batchsize]
                val_loss += torch.nn.functional.cross_entropy(y, t, reduction="sum").item()
                val_acc += (y.argmax(1) == t).float().sum().item()
        val_loss /= len(x_test)
        val_acc /= len(x_test)
        print(f"{epoch:<6d} {loss_sum / batches:<10.6f} {val_loss:<21.6f} {acc_sum / batches:<14.6f} "
              f"{val_acc:<25.4f} {time.perf_counter() - start:<13.3f} {rss_mib():.1f}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.1f} MiB")


if __name__ == "__main__":
    main()
