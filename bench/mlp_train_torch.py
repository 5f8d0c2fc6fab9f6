#!/usr/bin/env python3
"""The training step of bench/mlp_train.cpp in PyTorch: an MLP classifier with Adam, forward, cross
entropy and accuracy, backward, one update, on batches already in memory.

    python3 bench/mlp_train_torch.py --hidden 1000,1000 --batchsize 100 --threads 1
"""
import argparse
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hidden", default="1000,1000")
    parser.add_argument("--batchsize", "-b", type=int, default=100)
    parser.add_argument("--threads", "-t", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    hidden = [int(u) for u in args.hidden.split(",") if u]
    layers, size = [], 784
    for units in hidden:
        layers += [torch.nn.Linear(size, units), torch.nn.ReLU()]
        size = units
    layers.append(torch.nn.Linear(size, 10))
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.Adam(model.parameters())

    batches = [(torch.rand(args.batchsize, 784), torch.randint(0, 10, (args.batchsize,))) for _ in range(8)]
    step = 0

    def train_step():
        nonlocal step
        x, t = batches[step % len(batches)]
        step += 1
        optimizer.zero_grad()
        y = model(x)
        loss = torch.nn.functional.cross_entropy(y, t)
        (y.argmax(1) == t).float().mean().item()  # the accuracy a Chainer Classifier reports
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(args.warmup):
        train_step()
    rates = []
    for _ in range(args.repeats):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            train_step()
            steps += 1
        rates.append(steps * args.batchsize / (time.perf_counter() - start))
    rates.sort()
    shape = "-".join(["784"] + [str(u) for u in hidden])
    print(f"torch mlp {shape}-10 batch {args.batchsize} threads {args.threads}: samples/s "
          f"min {rates[0]:.0f} median {rates[len(rates) // 2]:.0f} max {rates[-1]:.0f}")


if __name__ == "__main__":
    main()
