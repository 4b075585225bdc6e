// Generates model/tokenizer/unicode_tables.cc: the Unicode data the tokenizer needs, as compact
// sorted tables, taken from this node's own ICU so that the C++ side agrees with the JavaScript
// tokenizer oracle (tools/tokenizer-oracle) code point for code point.
//
//   node model/tokenizer/gen_unicode_tables.mjs > model/tokenizer/unicode_tables.cc
//
// What is taken, and how:
//   - \p{L}, \p{N} and JavaScript's \s (the classes of the Qwen2 split regex as the oracle runs
//     it) by testing every code point against the same regexes with the `u` flag.
//   - NFC data from String.prototype.normalize: full canonical decompositions ("NFD" of every
//     code point), the order of canonical combining classes, and the primary composites.
//     JavaScript does not expose combining classes, so they are recovered by probing: a mark is a
//     non-starter when NFD reorders it against U+0334 (class 1) or U+0345 (class 240); two
//     non-starters compare by whether NFD swaps them. The table holds ranks that keep the order
//     of the real classes (all NFC needs), not the class numbers themselves.
// Hangul syllables are left out: the C++ side composes and decomposes them arithmetically.
// Every derived fact is checked against normalize() before anything is written.

const kMaxCodePoint = 0x10ffff;
const isSurrogate = (c) => c >= 0xd800 && c <= 0xdfff;
const isHangulSyllable = (c) => c >= 0xac00 && c <= 0xd7a3;
const str = (...cps) => String.fromCodePoint(...cps);
const nfd = (s) => s.normalize("NFD");
const nfc = (s) => s.normalize("NFC");
const hex = (c) => "0x" + c.toString(16).toUpperCase().padStart(4, "0");

function fail(message) {
  process.stderr.write(`gen_unicode_tables: ${message}\n`);
  process.exit(1);
}

// Ranges [first, last] of code points for which pred holds.
function ranges(pred) {
  const out = [];
  let start = -1;
  for (let c = 0; c <= kMaxCodePoint + 1; ++c) {
    const inside = c <= kMaxCodePoint && !isSurrogate(c) && pred(c);
    if (inside && start < 0) start = c;
    if (!inside && start >= 0) {
      out.push([start, c - 1]);
      start = -1;
    }
  }
  return out;
}

const letter = /^\p{L}$/u;
const number = /^\p{N}$/u;
const space = /^\s$/u;
const letterRanges = ranges((c) => letter.test(str(c)));
const numberRanges = ranges((c) => number.test(str(c)));
const spaceRanges = ranges((c) => space.test(str(c)));

// --- Combining classes, as order-preserving ranks.
const kLow = 0x0334;   // combining class 1
const kHigh = 0x0345;  // combining class 240
if (nfd(str(kHigh, kLow)) !== str(kLow, kHigh)) fail("probe marks U+0334/U+0345 do not reorder");

const decomposes = (c) => nfd(str(c)) !== str(c);
const nonStarters = [];
for (let c = 0; c <= kMaxCodePoint; ++c) {
  if (isSurrogate(c) || isHangulSyllable(c) || decomposes(c)) continue;
  const s = str(c);
  if (nfd(s + str(kLow)) === str(kLow) + s || nfd(str(kHigh) + s) === s + str(kHigh)) {
    nonStarters.push(c);
  }
}
nonStarters.push(kLow, kHigh);
const uniqueNonStarters = [...new Set(nonStarters)];
// cmp > 0 when a's class is above b's (NFD moves b before a).
const cmp = (a, b) => {
  if (a === b) return 0;
  if (nfd(str(a, b)) === str(b, a)) return 1;
  if (nfd(str(b, a)) === str(a, b)) return -1;
  return 0;
};
const sorted = uniqueNonStarters.slice().sort((a, b) => cmp(a, b) || a - b);
const rank = new Map();
let r = 1;
for (let i = 0; i < sorted.length; ++i) {
  if (i > 0 && cmp(sorted[i - 1], sorted[i]) !== 0) ++r;
  rank.set(sorted[i], r);
}
if (r > 255) fail(`too many combining class ranks: ${r}`);
// Check every pair: the ranks must order exactly as normalize() does.
for (const a of sorted) {
  for (const b of sorted) {
    const want = cmp(a, b);
    const got = Math.sign(rank.get(a) - rank.get(b));
    if (want !== got) fail(`rank order of ${hex(a)} vs ${hex(b)} disagrees with NFD`);
  }
}
const cccRanges = [];
for (const c of uniqueNonStarters.slice().sort((a, b) => a - b)) {
  const last = cccRanges[cccRanges.length - 1];
  if (last && last[1] === c - 1 && last[2] === rank.get(c)) last[1] = c;
  else cccRanges.push([c, c, rank.get(c)]);
}

// --- Full canonical decompositions.
const decompositions = [];  // [code point, [decomposed code points]]
for (let c = 0; c <= kMaxCodePoint; ++c) {
  if (isSurrogate(c) || isHangulSyllable(c) || !decomposes(c)) continue;
  decompositions.push([c, [...nfd(str(c))].map((ch) => ch.codePointAt(0))]);
}

// --- Primary composites: pairs (first, second) -> composite.
const compositions = [];
for (const [c, parts] of decompositions) {
  if (nfc(str(c)) !== str(c)) continue;  // excluded or singleton: never produced by NFC
  let found = false;
  for (let k = parts.length - 1; k >= 1 && !found; --k) {
    const second = parts[k];
    const rest = parts.slice(0, k).concat(parts.slice(k + 1));
    const firstText = nfc(str(...rest));
    const firstCps = [...firstText].map((ch) => ch.codePointAt(0));
    if (firstCps.length !== 1) continue;
    if (nfc(str(firstCps[0], second)) !== str(c)) continue;
    compositions.push([firstCps[0], second, c]);
    found = true;
  }
  if (!found) fail(`no composition pair found for ${hex(c)}`);
}
compositions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);

// --- Emit.
const lines = [];
const emit = (s) => lines.push(s);
const emitRanges = (name, rs) => {
  emit(`const CodePointRange ${name}[] = {`);
  for (let i = 0; i < rs.length; i += 4) {
    emit("    " + rs.slice(i, i + 4).map(([a, b]) => `{${hex(a)}, ${hex(b)}}`).join(", ") + ",");
  }
  emit("};");
  emit(`const std::size_t ${name}Size = sizeof(${name}) / sizeof(${name}[0]);`);
  emit("");
};

emit("// clang-format off");
emit("// GENERATED by model/tokenizer/gen_unicode_tables.mjs; do not edit by hand.");
emit(`// Source: node ${process.version}, ICU ${process.versions.icu}, Unicode ${process.versions.unicode}.`);
emit("// Regenerate: node model/tokenizer/gen_unicode_tables.mjs > model/tokenizer/unicode_tables.cc");
emit('#include "model/tokenizer/unicode_tables.h"');
emit("");
emit("namespace dice::tokenizer::tables {");
emit("");
emit(`const char kUnicodeVersion[] = "${process.versions.unicode}";`);
emit("");
emitRanges("kLetterRanges", letterRanges);
emitRanges("kNumberRanges", numberRanges);
emitRanges("kSpaceRanges", spaceRanges);

emit("const CombiningRankRange kCombiningRankRanges[] = {");
for (let i = 0; i < cccRanges.length; i += 3) {
  emit("    " + cccRanges.slice(i, i + 3).map(([a, b, k]) => `{${hex(a)}, ${hex(b)}, ${k}}`).join(", ") + ",");
}
emit("};");
emit("const std::size_t kCombiningRankRangesSize = sizeof(kCombiningRankRanges) / sizeof(kCombiningRankRanges[0]);");
emit("");

const pool = [];
const entries = [];
for (const [c, parts] of decompositions) {
  entries.push([c, pool.length, parts.length]);
  pool.push(...parts);
}
emit("const char32_t kDecompositionPool[] = {");
for (let i = 0; i < pool.length; i += 8) {
  emit("    " + pool.slice(i, i + 8).map(hex).join(", ") + ",");
}
emit("};");
emit("const Decomposition kDecompositions[] = {");
for (let i = 0; i < entries.length; i += 4) {
  emit("    " + entries.slice(i, i + 4).map(([c, o, n]) => `{${hex(c)}, ${o}, ${n}}`).join(", ") + ",");
}
emit("};");
emit("const std::size_t kDecompositionsSize = sizeof(kDecompositions) / sizeof(kDecompositions[0]);");
emit("");
emit("const Composition kCompositions[] = {");
for (let i = 0; i < compositions.length; i += 3) {
  emit("    " + compositions.slice(i, i + 3).map(([a, b, c]) => `{${hex(a)}, ${hex(b)}, ${hex(c)}}`).join(", ") + ",");
}
emit("};");
emit("const std::size_t kCompositionsSize = sizeof(kCompositions) / sizeof(kCompositions[0]);");
emit("");
emit("}  // namespace dice::tokenizer::tables");
process.stdout.write(lines.join("\n") + "\n");
process.stderr.write(
  `gen_unicode_tables: Unicode ${process.versions.unicode}: ${letterRanges.length} letter, ` +
    `${numberRanges.length} number, ${spaceRanges.length} space ranges; ${uniqueNonStarters.length} ` +
    `non-starters in ${r} ranks; ${decompositions.length} decompositions; ` +
    `${compositions.length} compositions\n`,
);
