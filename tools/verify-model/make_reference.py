#!/usr/bin/env python3
"""Reference logits from Hugging Face transformers for dice's Qwen3 block-diffusion model.

Builds a small random Qwen3 model, saves it with save_pretrained (safetensors) plus SDAR's
block_size and mask_token_id, and writes the logits transformers computes for a batch of real
prompts (tests/model/fixtures/prompts.json) under two masks:
  causal        transformers' default (no attention_mask given);
  block_causal  a custom 4-D mask: token i may attend to token j iff j // block <= i // block.
dice_model_compare (GPU node) and tests/model/hf_fixture_test.cc (CI, CPU) load the same model
directory with dice and compare.

Output (--out DIR):
  DIR/model/                 config.json + model.safetensors, as transformers saved them
  DIR/reference.safetensors  input_ids [B, L] int64, logit_columns [C] int64 (the vocabulary
                             columns kept, all of them unless --logit-columns),
                             causal.<dtype> and block_causal.<dtype> [B, L, C] float32
                             (bfloat16 results are stored exactly, widened to float32)

Presets:
  ci   vocab 256 (prompt ids taken mod 256), 2 layers, hidden 32, 4 heads / 2 KV heads,
       head_dim 16, float32 on the CPU: a few hundred KB, committed under tests/model/fixtures.
  gpu  the real vocabulary (151936) and head layout of SDAR-1.7B (16 heads / 8 KV heads,
       head_dim 128, rope_theta 1e6) over 4 layers of width 512; float32 and bfloat16 on CUDA.

Self-checks (the script exits non-zero if one fails): the causal mask given as a custom 4-D mask
reproduces transformers' default causal logits (so the mask convention is right), block-causal
logits differ from causal ones (the mask is applied), and changing the last block's tokens leaves
the logits of earlier blocks unchanged.

Usage:
  python3 tools/verify-model/make_reference.py --preset ci --out tests/model/fixtures/hf_tiny
  python3 tools/verify-model/make_reference.py --preset gpu --out /tmp/dice-ref
"""
import argparse
import copy
import inspect
import json
import math
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROMPTS = os.path.join(HERE, "..", "..", "tests", "model", "fixtures", "prompts.json")

PRESETS = {
    "ci": dict(
        model=dict(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16),
        mask_token_id=255, prompts=2, length=38, dtypes=["float32"], device="cpu",
        logit_columns=0),
    "gpu": dict(
        model=dict(vocab_size=151936, hidden_size=512, intermediate_size=1536,
                   num_hidden_layers=4, num_attention_heads=16, num_key_value_heads=8,
                   head_dim=128),
        mask_token_id=151669, prompts=4, length=94, dtypes=["float32", "bfloat16"],
        device="cuda", logit_columns=8192),
}
BLOCK_SIZE = 4
ROPE_THETA = 1e6
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def make_config(preset):
    fields = dict(preset["model"], rms_norm_eps=1e-6, max_position_embeddings=4096,
                  tie_word_embeddings=False, attention_bias=False, use_sliding_window=False,
                  hidden_act="silu")
    # transformers 5 keeps the RoPE base in rope_parameters; 4.x in rope_theta.
    if "rope_parameters" in inspect.signature(Qwen3Config.__init__).parameters:
        fields["rope_parameters"] = {"rope_type": "default", "rope_theta": ROPE_THETA}
    else:
        fields["rope_theta"] = ROPE_THETA
    config = Qwen3Config(**fields)
    config.block_size = BLOCK_SIZE
    config.mask_token_id = preset["mask_token_id"]
    return config


def randomize_(model, generator):
    """Unit-scale weights, so that attention, norms and RoPE visibly shape the logits (the default
    N(0, 0.02) init gives near-constant ones): embeddings N(0, 1), linear weights N(0, 1/in),
    norm weights 1 + N(0, 0.1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float32)
            if p.dim() == 1:
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith("embed_tokens.weight"):
                p.copy_(noise)
            else:
                p.copy_(noise / math.sqrt(p.shape[1]))


def check_rope(model):
    rotary = model.model.rotary_emb
    dim = model.config.head_dim
    want = 1.0 / (ROPE_THETA ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    got = rotary.inv_freq.float().cpu()
    if not torch.allclose(got, want, rtol=1e-6):
        sys.exit("make_reference: transformers did not take rope_theta=%g" % ROPE_THETA)


def block_causal_bool(length):
    block = torch.arange(length) // BLOCK_SIZE
    return block[None, :] <= block[:, None]


def additive_mask(allowed, batch, dtype, device):
    """[B, 1, L, L] float mask: 0 where allowed, the dtype's minimum elsewhere."""
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None].expand(batch, 1, *allowed.shape).to(device)


def logits_with_mask(model, ids, allowed):
    batch, length = ids.shape
    positions = torch.arange(length, device=ids.device)[None].expand(batch, length)
    mask = additive_mask(allowed, batch, model.dtype, ids.device)
    return model(input_ids=ids, attention_mask=mask, position_ids=positions).logits


def load_prompts(path, count, length, vocab):
    with open(path) as f:
        prompts = json.load(f)["prompts"]
    if len(prompts) < count:
        sys.exit("make_reference: %s has %d prompts, need %d" % (path, len(prompts), count))
    rows = []
    for p in prompts[:count]:
        ids = p["token_ids"]
        if len(ids) < length:
            sys.exit("make_reference: prompt %s has %d tokens, need %d" % (p["task_id"], len(ids), length))
        rows.append([t % vocab for t in ids[:length]])
    return torch.tensor(rows, dtype=torch.int64)


def main():
    # One pass in the order the reference is made (model, masks, per-dtype checks, file), kept
    # whole: it runs only where transformers is installed, so a split could not be tried here.
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), required=True)
    parser.add_argument("--out", required=True, help="output directory (created)")
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS, help="prompts.json with token_ids")
    parser.add_argument("--device", help="cpu or cuda (default: the preset's)")
    parser.add_argument("--dtypes", help="comma list of float32,bfloat16,float16 (default: preset's)")
    parser.add_argument("--logit-columns", type=int,
                        help="keep this many vocabulary columns (random, seeded); 0 = all")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    preset = PRESETS[args.preset]
    device = torch.device(args.device or preset["device"])
    dtypes = (args.dtypes or ",".join(preset["dtypes"])).split(",")
    columns_kept = preset["logit_columns"] if args.logit_columns is None else args.logit_columns

    generator = torch.Generator().manual_seed(args.seed)
    config = make_config(preset)
    model = Qwen3ForCausalLM(config).to(torch.float32).eval()
    randomize_(model, generator)
    check_rope(model)

    model_dir = os.path.join(args.out, "model")
    os.makedirs(model_dir, exist_ok=True)
    model.save_pretrained(model_dir, safe_serialization=True)
    # Make sure SDAR's keys are in config.json whatever the transformers version did with them.
    config_path = os.path.join(model_dir, "config.json")
    with open(config_path) as f:
        saved = json.load(f)
    saved["block_size"] = BLOCK_SIZE
    saved["mask_token_id"] = preset["mask_token_id"]
    with open(config_path, "w") as f:
        json.dump(saved, f, indent=2, sort_keys=True)

    vocab = config.vocab_size
    ids = load_prompts(args.prompts, preset["prompts"], preset["length"], vocab)
    if columns_kept and columns_kept < vocab:
        columns = torch.randperm(vocab, generator=generator)[:columns_kept].sort().values
    else:
        columns = torch.arange(vocab)
    length = ids.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    block = block_causal_bool(length)

    tensors = {"input_ids": ids, "logit_columns": columns}
    report = []
    for name in dtypes:
        m = copy.deepcopy(model).to(device=device, dtype=DTYPES[name])  # fp32 master kept
        x = ids.to(device)
        with torch.no_grad():
            default = m(input_ids=x).logits.float()
            custom_causal = logits_with_mask(m, x, causal).float()
            block_causal = logits_with_mask(m, x, block).float()
            changed = x.clone()
            last = (length - 1) // BLOCK_SIZE * BLOCK_SIZE
            changed[:, last:] = (changed[:, last:] + 1) % vocab
            block_changed = logits_with_mask(m, changed, block).float()
        scale = default.abs().max().item()
        tol = 1e-4 if name == "float32" else 2e-2
        d_custom = (default - custom_causal).abs().max().item()
        d_block = (default - block_causal).abs().max().item()
        d_earlier = (block_causal[:, :last] - block_changed[:, :last]).abs().max().item()
        report.append("%s: max|logit| %.3f; custom causal vs default %.2e; block vs causal %.2e; "
                      "earlier blocks after changing the last %.2e"
                      % (name, scale, d_custom, d_block, d_earlier))
        if d_custom > tol * max(1.0, scale):
            sys.exit("make_reference: %s: a custom 4-D causal mask does not reproduce the default "
                     "causal logits (diff %.3g): the mask convention is wrong" % (name, d_custom))
        if d_block < 1e-3 * scale:
            sys.exit("make_reference: %s: block-causal logits equal causal ones: mask ignored" % name)
        if d_earlier > tol * max(1.0, scale):
            sys.exit("make_reference: %s: the last block changed earlier blocks' logits (%.3g)"
                     % (name, d_earlier))
        cols = columns.to(device)
        tensors["causal." + name] = default.index_select(-1, cols).cpu().contiguous()
        tensors["block_causal." + name] = block_causal.index_select(-1, cols).cpu().contiguous()

    metadata = {"preset": args.preset, "block_size": str(BLOCK_SIZE), "device": str(device),
                "torch": torch.__version__, "transformers": transformers.__version__,
                "attn_implementation": str(getattr(model.config, "_attn_implementation", "?"))}
    save_file(tensors, os.path.join(args.out, "reference.safetensors"), metadata=metadata)
    for line in report:
        print("make_reference:", line)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(args.out) for f in fs)
    print("make_reference: wrote %s (%d bytes; torch %s, transformers %s)"
          % (args.out, total, torch.__version__, transformers.__version__))


if __name__ == "__main__":
    main()
