#!/usr/bin/env python3
"""The training step of bench/resnet50_step.cpp in PyTorch: torchvision's resnet50 (1000 classes) with
MomentumSGD, forward, cross entropy and accuracy, backward, one update, on 224x224 batches already in
memory; then the process's peak resident memory.

    python3 bench/resnet50_step_torch.py --batchsize 32 --threads 1
"""
import resource

import torch
import torchvision

import torch_step


def main():
    args = torch_step.parser(__doc__, batchsize=32, warmup=2).parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=1000)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch_step.run_steps("resnet50", model, optimizer, (3, 224, 224), args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"torch resnet50 peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
