"""Shared by the PyTorch training-step benchmarks (mlp_train_torch.py, cnn_step_torch.py,
lstm_lm_torch.py): the flags, synthetic batches and the timed loop of bench/train_step.h, in PyTorch."""
import argparse
import contextlib
import time

import torch


def parser(description, batchsize, warmup):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--batchsize", "-b", type=int, default=batchsize)
    p.add_argument("--threads", "-t", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--dtype", default="float32", choices=["float32", "mixed_bf16", "mixed16"],
                   help="mixed_bf16: torch.autocast('cpu', dtype=torch.bfloat16) around forward and loss")
    return p


def autocast(args):
    """The forward's context for args.dtype: PyTorch's CPU autocast for mixed_bf16. Its CPU autocast
    has no float16, so mixed16 exits with a message."""
    if args.dtype == "float32":
        return contextlib.nullcontext()
    if args.dtype == "mixed16":
        raise SystemExit("torch: CPU autocast supports bfloat16 only (no mixed16)")
    return torch.autocast("cpu", dtype=torch.bfloat16)


def time_steps(label, train_step, args):
    """Runs args.warmup untimed steps, then args.repeats timed runs, and prints the rates like rensa."""
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
    if args.dtype != "float32":
        label += " " + args.dtype
    digits = 2 if rates[len(rates) // 2] < 100 else 0  # hundredths for slow steps, as rensa prints
    print(f"torch {label} batch {args.batchsize} threads {args.threads}: samples/s "
          f"min {rates[0]:.{digits}f} median {rates[len(rates) // 2]:.{digits}f} max {rates[-1]:.{digits}f}")


def run_steps(label, model, optimizer, sample_shape, args):
    """Times optimizer steps of `model` on a few synthetic batches and prints the rates like rensa."""
    batches = [(torch.rand(args.batchsize, *sample_shape), torch.randint(0, 10, (args.batchsize,)))
               for _ in range(4)]
    step = 0

    def train_step():
        nonlocal step
        x, t = batches[step % len(batches)]
        step += 1
        optimizer.zero_grad()
        with autocast(args):
            y = model(x)
            loss = torch.nn.functional.cross_entropy(y, t)
        (y.argmax(1) == t).float().mean().item()  # the accuracy a Chainer Classifier reports
        loss.backward()
        optimizer.step()
        return loss.item()

    time_steps(label, train_step, args)
