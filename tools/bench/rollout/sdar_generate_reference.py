#!/usr/bin/env python3
"""Peer figure for rollout_bench: SDAR's published block-diffusion generate loop, written plainly.

  python3 tools/bench/rollout/sdar_generate_reference.py [--models 1.7b,4b]
      [--batches 1,16,64,128] [--strategies static,dynamic] [--new-tokens 1024] [--prompt 64]
      [--block 4] [--steps 4] [--temperature 1] [--threshold 0.9]

transformers' Qwen3ForCausalLM with random bf16 weights on CUDA (SDPA), a DynamicCache and
explicit 4-D block-causal masks, one Python loop over blocks and steps as in SDAR's reference
generate (docs/REFERENCE.md section 2), written from that description:
  prefill the prompt (a whole number of blocks here) into the cache;
  per block: start all masked; per step, forward the block against the cache and crop the cache
  back (not stored), draw tokens (temperature / top-k / top-p, the mask token banned), commit by
  low_confidence_static (top-n by probability) or low_confidence_dynamic (all >= threshold if at
  least n, else top-n); once the whole batch has no mask left, one more forward stores the block.
So a block costs (steps it needed) + 1 forwards, and the batch moves in lock-step.
Prints the same table as rollout_bench (MiB/seq: peak CUDA memory above the weights; ms/fwd
counts the store forwards too).
"""
import argparse
import sys
import time

import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM

SHAPES = {
    "1.7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                 tie_word_embeddings=True),
    "4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128,
               tie_word_embeddings=False),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 tie_word_embeddings=False),
}
VOCAB = 151936
MASK_ID = 151669


def additive_mask(allowed, dtype):
    """bool [B, 1, Q, K] (True = attend) -> additive float mask for transformers."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def draw(logits, temperature, top_k, top_p):
    """Tokens and their probabilities under the (tempered, filtered) distribution."""
    z = logits.float()
    z[..., MASK_ID] = float("-inf")
    if temperature > 0:
        z = z / temperature
    if 0 < top_k < z.shape[-1]:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1:]
        z = z.masked_fill(z < kth, float("-inf"))
    if top_p < 1.0:
        sorted_z, order = torch.sort(z, dim=-1, descending=True)
        p = torch.softmax(sorted_z, dim=-1)
        drop = (p.cumsum(-1) - p) >= top_p
        z = torch.empty_like(z).scatter_(-1, order, sorted_z.masked_fill(drop, float("-inf")))
    probs = torch.softmax(z, dim=-1)
    if temperature == 0:
        tokens = probs.argmax(-1)
    else:
        tokens = torch.multinomial(probs.view(-1, probs.shape[-1]), 1).view(probs.shape[:-1])
    return tokens, probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def quota(masks, steps):
    """Tokens to commit at each step for a block with `masks` masked positions."""
    return [masks // steps + (1 if k < masks % steps else 0) for k in range(steps)]


def generate(model, prompt, args, strategy):
    """Returns (generated tokens [B, new], forwards)."""
    batch, plen = prompt.shape
    device, dtype = prompt.device, model.dtype
    block, steps = args.block, args.steps
    cache = DynamicCache()
    pos = torch.arange(plen, device=device)
    allowed = (pos[None, :] // block) <= (pos[:, None] // block)
    prefill_mask = additive_mask(allowed[None, None].expand(batch, 1, -1, -1), dtype)
    model(input_ids=prompt, attention_mask=prefill_mask, position_ids=pos[None].expand(batch, -1),
          past_key_values=cache, use_cache=True, logits_to_keep=1)
    length, forwards, out = plen, 0, []
    n_blocks = -(-args.new_tokens // block)
    for _ in range(n_blocks):
        x = torch.full((batch, block), MASK_ID, dtype=torch.long, device=device)
        positions = torch.arange(length, length + block, device=device)[None].expand(batch, -1)
        # The block sees every cached token and all of itself.
        mask = torch.zeros(batch, 1, block, length + block, dtype=dtype, device=device)
        schedule = quota(block, steps)
        for step in range(steps + 1):
            masked = x == MASK_ID
            if not bool(masked.any()):  # host sync, as in the reference loop
                model(input_ids=x, attention_mask=mask, position_ids=positions,
                      past_key_values=cache, use_cache=True, logits_to_keep=1)
                forwards += 1
                length += block
                break
            logits = model(input_ids=x, attention_mask=mask, position_ids=positions,
                           past_key_values=cache, use_cache=True).logits
            cache.crop(length)
            forwards += 1
            tokens, conf = draw(logits, args.temperature, 0, 1.0)
            conf = torch.where(masked, conf, torch.full_like(conf, -1.0))
            n = schedule[min(step, steps - 1)]
            n = max(n, 1)
            top = torch.zeros_like(masked)
            top.scatter_(1, torch.topk(conf, min(n, block), dim=1).indices, True)
            transfer = top & masked
            if strategy == "dynamic":
                high = masked & (conf >= args.threshold)
                enough = (high.sum(1, keepdim=True) >= n)
                transfer = torch.where(enough, high, transfer)
            x = torch.where(transfer, tokens, x)
        out.append(x)
    return torch.cat(out, 1)[:, :args.new_tokens], forwards


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="1.7b,4b")
    parser.add_argument("--batches", default="1,16,64,128")
    parser.add_argument("--strategies", default="static,dynamic")
    parser.add_argument("--new-tokens", type=int, default=1024)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--block", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="a 2-layer toy shape (smoke test)")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("sdar_generate_reference: skipped: needs a CUDA GPU (or --device cpu)")
        return 0
    if args.prompt <= 0 or args.prompt % args.block:
        sys.exit("sdar_generate_reference: --prompt must be a positive multiple of --block")
    if not 1 <= args.steps <= args.block:
        sys.exit("sdar_generate_reference: --steps must be in [1, --block]")
    for s in args.strategies.split(","):
        if s not in ("static", "dynamic"):
            sys.exit("sdar_generate_reference: --strategies: unknown %s (static, dynamic)" % s)

    device = torch.device(args.device)
    dtype = torch.bfloat16 if cuda else torch.float32
    print("sdar_generate_reference: torch %s; %s random weights, prompt %d, %d new tokens, "
          "block %d, %d steps, temperature %g, threshold %g, no stop tokens"
          % (torch.__version__, "bf16" if cuda else "fp32", args.prompt, args.new_tokens,
             args.block, args.steps, args.temperature, args.threshold))
    print("%-6s %6s %-8s %12s %9s %8s %8s %9s %10s" % ("model", "batch", "strategy", "tok/s",
                                                      "seconds", "ms/fwd", "fwd/tok", "proc/tok",
                                                      "MiB/seq"))
    for name in ["tiny"] if args.tiny else args.models.split(","):
        if name not in SHAPES:
            sys.exit("sdar_generate_reference: unknown model %s (1.7b or 4b)" % name)
        config = Qwen3Config(vocab_size=VOCAB, max_position_embeddings=32768, rms_norm_eps=1e-6,
                             rope_theta=1e6, attn_implementation="sdpa", **SHAPES[name])
        if cuda:
            with torch.device(device):  # initialise on the GPU: 4B parameters on a CPU take long
                model = Qwen3ForCausalLM(config).to(dtype).eval()
        else:
            model = Qwen3ForCausalLM(config).eval()
        weights = torch.cuda.memory_allocated() if cuda else 0
        for batch in map(int, args.batches.split(",")):
            for strategy in args.strategies.split(","):
                torch.manual_seed(2)
                prompt = torch.randint(0, MASK_ID, (batch, args.prompt), device=device)
                with torch.no_grad():
                    warm = argparse.Namespace(**vars(args))
                    warm.new_tokens = min(8, args.new_tokens)
                    generate(model, prompt, warm, strategy)
                    if cuda:
                        torch.cuda.synchronize()
                        torch.cuda.reset_peak_memory_stats()
                    start = time.perf_counter()
                    out, forwards = generate(model, prompt, args, strategy)
                    if cuda:
                        torch.cuda.synchronize()
                    seconds = time.perf_counter() - start
                assert out.shape == (batch, args.new_tokens) and not (out == MASK_ID).any()
                peak = "-"
                if cuda:
                    used = torch.cuda.max_memory_allocated() - weights
                    peak = "%.1f" % (used / 2**20 / batch)
                print("%-6s %6d %-8s %12.1f %9.2f %8.2f %8.3f %9.3f %10s"
                      % (name, batch, strategy, batch * args.new_tokens / seconds, seconds,
                         seconds * 1e3 / forwards, forwards / args.new_tokens,
                         forwards * args.block / args.new_tokens, peak), flush=True)
        del model
        if cuda:
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
