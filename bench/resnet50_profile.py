#!/usr/bin/env python3
"""Where a ResNet-50 training step's time goes in oneDNN: runs bench_resnet50_step for a few steps with
ONEDNN_VERBOSE=1, keeps the primitives executed in the last step, and prints per primitive kind (and per
convolution shape with --shapes) the calls, milliseconds, share of the step and, for convolutions,
GFLOP/s, with the kernels oneDNN chose. What is not in oneDNN (batch normalization, ReLU, the residual
adds, the loss, the update, allocation) is the rest of the step: see `perf record` for that part.

    bench/resnet50_profile.py [--build build/release] [--batchsize 32] [--threads 1] [--shapes]
"""
import argparse
import collections
import os
import re
import subprocess
import sys


def conv_flop(desc):
    """2 * MACs of a convolution from oneDNN's problem descriptor (mb32_ic64oc64_ih56oh56kh3... ) ."""
    f = {k: int(v) for k, v in re.findall(r"([a-z]+)(\d+)", desc)}
    g = f.get("g", 1)
    return 2 * f["mb"] * f["oc"] * f["oh"] * f["ow"] * (f["ic"] // g) * f["kh"] * f["kw"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build/release")
    p.add_argument("--batchsize", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=3, help="steps run; the last one is reported")
    p.add_argument("--dtype", default="float32", help="float32 or a mixed policy (mixed_bf16)")
    p.add_argument("--shapes", action="store_true", help="one row per convolution shape and direction")
    args = p.parse_args()
    exe = os.path.join(args.build, "bench", "bench_resnet50_step")
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS=str(args.threads))
    out = subprocess.run([exe, "--batchsize", str(args.batchsize), "--threads", str(args.threads), "--warmup",
                          str(args.steps - 1), "--repeats", "1", "--seconds", "0.01", "--dtype", args.dtype],
                         env=env, check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    rate = next(float(m.group(1)) for m in (re.search(r"median ([0-9.]+)", l) for l in lines) if m)
    step_ms = 1000.0 * args.batchsize / rate
    execs = [l.split(",") for l in lines if l.startswith("onednn_verbose,exec,")]
    # A step begins with the first layer's forward convolution (3 input channels).
    starts = [i for i, f in enumerate(execs) if f[3] == "convolution" and "forward" in f[5] and "_ic3oc" in f[-2]]
    if not starts:
        sys.exit("resnet50_profile: no convolution found in oneDNN's verbose output")
    last = execs[starts[-1]:]
    rows = collections.OrderedDict()
    kernels = collections.defaultdict(set)
    for f in last:
        kind, impl, prop, desc, ms = f[3], f[4], f[5], f[-2], float(f[-1])
        key = (kind, prop) + ((desc,) if args.shapes and kind == "convolution" else ())
        r = rows.setdefault(key, [0, 0.0, 0.0])
        r[0] += 1
        r[1] += ms
        if kind == "convolution":
            r[2] += conv_flop(desc)
        kernels[(kind, prop)].add(impl)
    print(next(l for l in lines if l.startswith("cpu:")))
    print(f"step: {step_ms:.0f} ms at batch {args.batchsize}, {args.threads} thread(s)")
    print(f"{'primitive':<60} {'calls':>5} {'ms':>9} {'% step':>7} {'GFLOP':>8} {'GFLOP/s':>8}")
    total_ms = total_flop = conv_ms = 0.0
    for key, (calls, ms, flop) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        total_ms += ms
        total_flop += flop
        conv_ms += ms if key[0] == "convolution" else 0.0
        rate_s = f"{flop / ms / 1e6:8.1f}" if flop else ""
        flop_s = f"{flop / 1e9:8.2f}" if flop else ""
        print(f"{' '.join(key):<60} {calls:>5} {ms:9.1f} {100 * ms / step_ms:6.1f}% {flop_s:>8} {rate_s:>8}")
    print(f"{'all oneDNN primitives':<60} {'':>5} {total_ms:9.1f} {100 * total_ms / step_ms:6.1f}%")
    print(f"{'rest of the step (not oneDNN)':<60} {'':>5} {step_ms - total_ms:9.1f} "
          f"{100 * (step_ms - total_ms) / step_ms:6.1f}%")
    print(f"convolutions: {total_flop / 1e9:.1f} GFLOP at {total_flop / conv_ms / 1e6:.1f} GFLOP/s; "
          f"the step: {total_flop / step_ms / 1e6:.1f} GFLOP/s")
    for (kind, prop), impls in sorted(kernels.items()):
        print(f"kernels {kind} {prop}: {', '.join(sorted(impls))}")


if __name__ == "__main__":
    main()
