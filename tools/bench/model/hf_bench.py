#!/usr/bin/env python3
"""Peer figure for model_bench: transformers' Qwen3 forward on the same shapes and workload.

  python3 tools/bench/model/hf_bench.py [--models 1.7b,4b] [--batches 1,16,64,128]
                                        [--context 256] [--iters 20] [--warmup 3]

Random bf16 weights on CUDA, SDPA attention. For each model and batch size B:
  prefill  B prompts of --context tokens with a block-causal 4-D mask into a fresh DynamicCache,
           keeping only the last position's logits (logits_to_keep=1; dice skips lm_head);
  decode   one block of 4 tokens per sequence against that cache with logits, after which the
           cache is cropped back (dice's store=false).
Prints the same table as model_bench.
"""
import argparse
import sys
import time

import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM

SHAPES = {
    "1.7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, tie_word_embeddings=True),
    "4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
               num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False),
}
BLOCK = 4


def block_causal_mask(batch, queries, keys, dtype, device):
    """Additive [B, 1, queries, keys] mask for queries at the last `queries` positions."""
    q_pos = torch.arange(keys - queries, keys, device=device)
    k_pos = torch.arange(keys, device=device)
    allowed = (k_pos[None, :] // BLOCK) <= (q_pos[:, None] // BLOCK)
    mask = torch.zeros(queries, keys, dtype=dtype, device=device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None].expand(batch, 1, queries, keys)


def timed(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="1.7b,4b")
    parser.add_argument("--batches", default="1,16,64,128")
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("hf_bench: skipped: needs a CUDA GPU")
        return 0
    if args.context <= 0 or args.context % BLOCK:
        sys.exit("hf_bench: --context must be a positive multiple of 4")

    device = torch.device("cuda")
    dtype = torch.bfloat16
    print("hf_bench: torch %s, bf16 random weights, context %d, block %d, %d iters"
          % (torch.__version__, args.context, BLOCK, args.iters))
    print("%-6s %6s %16s %12s %16s %12s" % ("model", "batch", "prefill tok/s", "prefill ms",
                                             "decode4 tok/s", "decode4 ms"))
    for name in args.models.split(","):
        config = Qwen3Config(vocab_size=151936, head_dim=128, max_position_embeddings=40960,
                             rms_norm_eps=1e-6, attn_implementation="sdpa", **SHAPES[name])
        with torch.device(device):
            model = Qwen3ForCausalLM(config).to(dtype).eval()
        for batch in map(int, args.batches.split(",")):
            prompt = torch.randint(0, 151643, (batch, args.context), device=device)
            positions = torch.arange(args.context, device=device)[None].expand(batch, -1)
            prefill_mask = block_causal_mask(batch, args.context, args.context, dtype, device)
            state = {}

            def prefill():
                cache = DynamicCache()
                model(input_ids=prompt, attention_mask=prefill_mask, position_ids=positions,
                      past_key_values=cache, use_cache=True, logits_to_keep=1)
                state["cache"] = cache

            with torch.no_grad():
                prefill_s = timed(prefill, args.warmup, args.iters)
                tokens = torch.randint(0, 151643, (batch, BLOCK), device=device)
                block_pos = torch.arange(args.context, args.context + BLOCK, device=device)
                block_pos = block_pos[None].expand(batch, -1)
                decode_mask = block_causal_mask(batch, BLOCK, args.context + BLOCK, dtype, device)
                cache = state["cache"]

                def decode():
                    model(input_ids=tokens, attention_mask=decode_mask, position_ids=block_pos,
                          past_key_values=cache, use_cache=True)
                    cache.crop(-BLOCK)  # drop the block again: not stored, as a denoising step

                decode_s = timed(decode, args.warmup, args.iters)
            print("%-6s %6d %16.0f %12.2f %16.0f %12.2f"
                  % (name, batch, batch * args.context / prefill_s, prefill_s * 1e3,
                     batch * BLOCK / decode_s, decode_s * 1e3), flush=True)
            del state
        del model
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
