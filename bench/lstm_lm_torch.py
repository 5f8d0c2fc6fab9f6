#!/usr/bin/env python3
"""The training step of bench/lstm_lm.cpp in PyTorch: Embedding, a stacked nn.LSTM over a time-major
batch from a zero state, Linear to the vocabulary, cross entropy over every step, backward and one
SGD update.

    python3 bench/lstm_lm_torch.py --threads 1
"""

import torch

import torch_step


class LanguageModel(torch.nn.Module):
    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, embed)
        self.lstm = torch.nn.LSTM(embed, hidden, layers)
        self.out = torch.nn.Linear(hidden, vocab)

    def forward(self, x, t):
        h, _ = self.lstm(self.embed(x))
        y = self.out(h.reshape(-1, h.shape[-1]))
        return torch.nn.functional.cross_entropy(y, t.reshape(-1))


def main():
    parser = torch_step.parser(__doc__, batchsize=32, warmup=3)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=35)
    args = parser.parse_args()
    if args.dtype != "float32":
        raise SystemExit("lstm_lm_torch: only --dtype float32")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = LanguageModel(args.vocab, args.embed, args.hidden, args.layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    batches = [(torch.randint(0, args.vocab, (args.steps, args.batchsize)),
                torch.randint(0, args.vocab, (args.steps, args.batchsize))) for _ in range(4)]
    step = 0

    def train_step():
        nonlocal step
        x, t = batches[step % len(batches)]
        step += 1
        optimizer.zero_grad()
        loss = model(x, t)
        loss.backward()
        optimizer.step()
        return loss.item()

    label = (f"lstm-lm vocab {args.vocab} embed {args.embed} hidden {args.hidden}x{args.layers} "
             f"steps {args.steps}")
    torch_step.time_steps(label, train_step, args)


if __name__ == "__main__":
    main()
