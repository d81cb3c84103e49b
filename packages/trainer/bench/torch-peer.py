"""The PyTorch peer of bench/trainer.bench.ts at the shapes of real checkpoints.

Usage: python3 torch-peer.py '<json>'
JSON fields: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
intermediate_size, vocab_size, head_dim (default hidden / heads), tie_word_embeddings (default
false), qkv_bias (default false: Qwen2's q/k/v biases when true), rope_theta (default 10000),
rms_norm_eps (default 1e-6), batch, seq (completion tokens; one prompt token before them), steps,
threads, mode ("sft" | "grpo").

The model is Hugging Face's Llama / Qwen2 decoder (RMSNorm, rotate-half RoPE, GQA through
repeat_kv, SwiGLU), float32, random weights. `sft`: cross-entropy over the completion tokens,
backward, clip_grad_norm_(1.0), torch.optim.AdamW (lr 1e-4). `grpo`: TRL's GRPO loss with
num_iterations 1 (ratio against the detached current logprobs), clipping 0.2 / 0.28, k3 KL with
beta 0.04 to a frozen reference copy (a no-grad forward per step), token mean, one random advantage
per sequence; then the same backward, clipping and AdamW. One warm-up step, then `steps` timed ones.
Prints one JSON line: tokensPerSecond (completion tokens per step / the median step time),
stepSeconds (median), cpuSecondsPerStep (median process CPU time, all threads), peakRssBytes (VmHWM of this process since the model exists — reset through
/proc/self/clear_refs after the model, its reference and the optimizer are built: gradients,
optimizer state, activations of the steps), parameters.
"""
import copy
import json
import math
import resource
import sys
import time

import torch

spec = json.loads(sys.argv[1])
hidden = spec["hidden_size"]
layers = spec["num_hidden_layers"]
heads = spec["num_attention_heads"]
kv_heads = spec.get("num_key_value_heads", heads)
inter = spec["intermediate_size"]
vocab = spec["vocab_size"]
head_dim = spec.get("head_dim") or hidden // heads
tied = bool(spec.get("tie_word_embeddings", False))
qkv_bias = bool(spec.get("qkv_bias", False))
theta = float(spec.get("rope_theta", 10000.0))
eps = float(spec.get("rms_norm_eps", 1e-6))
batch, seq, steps, threads = spec["batch"], spec["seq"], spec["steps"], spec["threads"]
mode = spec.get("mode", "sft")
torch.manual_seed(0)
torch.set_num_threads(threads)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.q_proj = torch.nn.Linear(hidden, heads * head_dim, bias=qkv_bias)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=qkv_bias)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=qkv_bias)
        self.o_proj = torch.nn.Linear(heads * head_dim, hidden, bias=False)
        self.gate_proj = torch.nn.Linear(hidden, inter, bias=False)
        self.up_proj = torch.nn.Linear(hidden, inter, bias=False)
        self.down_proj = torch.nn.Linear(inter, hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, heads, head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, t, kv_heads, head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, t, kv_heads, head_dim).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if kv_heads != heads:  # Hugging Face's repeat_kv
            k = k.repeat_interleave(heads // kv_heads, dim=1)
            v = v.repeat_interleave(heads // kv_heads, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim) + mask
        attention = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, heads * head_dim)
        x = x + self.o_proj(attention)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(torch.nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList([Layer() for _ in range(layers)])
        self.norm = RMSNorm(hidden)
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)
        if tied:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, ids):
        t = ids.shape[1]
        inverse = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(t).float(), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


model = Model()
parameters = sum(p.numel() for p in model.parameters())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, vocab, (batch, seq + 1))
reference = copy.deepcopy(model).eval() if mode == "grpo" else None
for p in reference.parameters() if reference is not None else []:
    p.requires_grad_(False)
advantages = torch.randn(batch, 1)
# one prompt token, `seq` completion tokens: the loss positions are 0 .. seq - 1 of the inputs
inputs, targets = ids[:, :-1], ids[:, 1:]


def grpo_loss():
    with torch.no_grad():
        ref = torch.log_softmax(reference(inputs), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logp = torch.log_softmax(model(inputs), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(logp - logp.detach())
    surrogate = torch.min(ratio * advantages, ratio.clamp(0.8, 1.28) * advantages)
    kl = torch.exp(ref - logp) - (ref - logp) - 1
    return (-surrogate + 0.04 * kl).mean()


def vm_hwm():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def step():
    if mode == "grpo":
        loss = grpo_loss()
    else:
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


# the peak from here on: the training process with its weights (and reference) in memory
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
step()
times = []
cpu = []
for _ in range(steps):
    start = time.perf_counter()
    start_cpu = time.process_time()
    step()
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
times.sort()
cpu.sort()
median = times[len(times) // 2]
print(
    json.dumps(
        {
            "tokensPerSecond": batch * seq / median,
            "stepSeconds": median,
            "cpuSecondsPerStep": cpu[len(cpu) // 2],
            "peakRssBytes": vm_hwm(),
            "parameters": parameters,
            "threads": threads,
        }
    )
)
