#!/usr/bin/env python3
"""The training step of bench/mlp_train.cpp in PyTorch: an MLP classifier with Adam, forward, cross
entropy and accuracy, backward, one update, on batches already in memory.

    python3 bench/mlp_train_torch.py --hidden 1000,1000 --batchsize 100 --threads 1
"""
import torch

import torch_step


def main():
    parser = torch_step.parser(__doc__, batchsize=100, warmup=20)
    parser.add_argument("--hidden", default="1000,1000")
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
    torch_step.run_steps("mlp " + "-".join(["784"] + [str(u) for u in hidden] + ["10"]), model, optimizer, (784,), args)


if __name__ == "__main__":
    main()
