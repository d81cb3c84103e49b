"""Same Llama architecture and step as bench/trainer.bench.ts, in PyTorch (CPU), for the ratio.

Usage: python3 torch-llama.py HIDDEN LAYERS HEADS INTERMEDIATE VOCAB BATCH SEQ STEPS THREADS [KV_HEADS] [MODE]
MODE `sft` (default): cross-entropy over every position. MODE `grpo`: TRL's GRPO loss with
num_iterations 1 (ratio against the detached current logprobs), clipping 0.2 / 0.28, k3 KL
(beta 0.04) to a frozen reference copy (a no-grad forward per step), token mean, one random
advantage per sequence.
Prints one JSON line: {"tokensPerSecond": ...}.
"""
import copy
import json
import math
import sys
import time

import torch

hidden, layers, heads, inter, vocab, batch, seq, steps, threads = map(int, sys.argv[1:10])
kv_heads = int(sys.argv[10]) if len(sys.argv) > 10 else heads
mode = sys.argv[11] if len(sys.argv) > 11 else "sft"
torch.manual_seed(0)
torch.set_num_threads(threads)
head_dim = hidden // heads


class RMSNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(hidden), RMSNorm(hidden)
        self.q = torch.nn.Linear(hidden, hidden, bias=False)
        self.k = torch.nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v = torch.nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o = torch.nn.Linear(hidden, hidden, bias=False)
        self.gate = torch.nn.Linear(hidden, inter, bias=False)
        self.up = torch.nn.Linear(hidden, inter, bias=False)
        self.down = torch.nn.Linear(inter, hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, heads, head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, kv_heads, head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, kv_heads, head_dim).transpose(1, 2)
        if kv_heads != heads:
            k = k.repeat_interleave(heads // kv_heads, dim=1)
            v = v.repeat_interleave(heads // kv_heads, dim=1)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim) + mask
        attention = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, hidden)
        x = x + self.o(attention)
        h = self.ln2(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList([Layer() for _ in range(layers)])
        self.norm = RMSNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        inverse = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(t).float(), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        mask = torch.full((t, t), float('-inf')).triu(1)
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.head(self.norm(x))


model = Model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, vocab, (batch, seq + 1))


reference = copy.deepcopy(model).eval()
advantages = torch.randn(batch, 1)
targets = ids[:, 1:].unsqueeze(-1)


def grpo_loss():
    with torch.no_grad():
        ref = torch.log_softmax(reference(ids[:, :-1]), -1).gather(-1, targets).squeeze(-1)
    logp = torch.log_softmax(model(ids[:, :-1]), -1).gather(-1, targets).squeeze(-1)
    ratio = torch.exp(logp - logp.detach())
    surrogate = torch.min(ratio * advantages, ratio.clamp(0.8, 1.28) * advantages)
    kl = torch.exp(ref - logp) - (ref - logp) - 1
    return (-surrogate + 0.04 * kl).mean()


def step():
    if mode == "grpo":
        loss = grpo_loss()
    else:
        logits = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


step()
start = time.perf_counter()
for _ in range(steps):
    step()
elapsed = time.perf_counter() - start
print(json.dumps({"tokensPerSecond": batch * seq * steps / elapsed, "threads": threads}))
