#!/usr/bin/env python3
"""The training step of bench/cnn_step.cpp in PyTorch: the cnn network
conv(1->32, 3x3)-relu-conv(32->64, 3x3)-relu-maxpool2-fc(9216->128)-relu-fc(128->10) with MomentumSGD,
forward, cross entropy and accuracy, backward, one update, on batches already in memory.

    python3 bench/cnn_step_torch.py --batchsize 64 --threads 1
"""
import torch

import torch_step


def main():
    args = torch_step.parser(__doc__, batchsize=64, warmup=5).parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(9216, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch_step.run_steps("cnn", model, optimizer, (1, 28, 28), args)


if __name__ == "__main__":
    main()
