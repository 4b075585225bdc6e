// dice-dash's page: reads the JSON API (tools/dice-dash/api.h) and draws it with uPlot.
// Every chart's element carries data-points (x values plotted), data-values (non-null y
// values over its series) and data-series (how many series) once drawn; a chart with phase bands
// also data-bands (the bands' labels, joined by "|"). window.diceDash exposes the uPlot
// instances. The browser test (tests/tools/dice_dash_browser.py) reads them.
"use strict";

const POLL_MS = 2000;
const COLORS = ["#1565c0", "#c62828", "#2e7d32", "#f9a825", "#6a1b9a", "#00838f", "#ef6c00",
  "#4e342e", "#ad1457", "#546e7a"];
const STEP_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000];
const state = { runs: [], log: null, run: null, step: null, task: null, sample: null,
  data: null, metric: null, levels: false };
const charts = {};
window.diceDash = { charts, state };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "onclick") node.onclick = value; else node.setAttribute(key, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, params) {
  const query = new URLSearchParams(params || {}).toString();
  const response = await fetch("/api/" + path + (query ? "?" + query : ""),
    { credentials: "same-origin" });
  const body = await response.json().catch(() => ({ error: "not JSON (HTTP " +
    response.status + ")", kind: "error" }));
  if (!response.ok && !body.groups) throw Object.assign(new Error(body.error), body);
  return body;
}

function fmt(value, digits) {
  if (value === null || value === undefined) return "-";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? String(value) : value.toPrecision(digits || 4);
}

function banner(kind, text) {
  return el("div", { class: "banner " + kind }, text);
}

// --- hash navigation: #log=0&run=R[&step=S[&task=T&sample=N]] ---
function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  state.log = params.has("log") ? Number(params.get("log")) : null;
  state.run = params.get("run");
  state.step = params.has("step") ? Number(params.get("step")) : null;
  state.task = params.get("task");
  state.sample = params.has("sample") ? Number(params.get("sample")) : null;
}

function go(params) {
  location.hash = new URLSearchParams(params).toString();
}

// --- charts ---
function chartBox(name) {
  return document.querySelector('.chart[data-chart="' + name + '"]');
}

// The phases of the steps as bands: runs of consecutive steps of one phase, each
// {from, to, label, evaluation} (first and last step; the label is the phase's name).
function phaseBands(s) {
  const bands = [];
  s.step.forEach((step, i) => {
    const label = s.phase_name[i] || s.phase[i];
    const last = bands[bands.length - 1];
    if (last && last.label === label && last.evaluation === s.evaluation[i]) last.to = step;
    else bands.push({ from: step, to: step, label, evaluation: s.evaluation[i] });
  });
  return bands;
}

// uPlot hook: shades each phase's steps behind the series (evaluations amber, training phases
// grey, neighbours in two shades, a line between phases) and writes the phase's name at its top,
// upright along its left edge where the band is too narrow for it.
function drawBands(u) {
  const bands = u._diceBands || [];
  const ctx = u.ctx;
  const { left, top, width, height } = u.bbox;
  const px = devicePixelRatio || 1;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  ctx.font = Math.round(10 * px) + "px system-ui, sans-serif";
  ctx.textBaseline = "top";
  ctx.textAlign = "left";  // uPlot leaves the axes' alignment set
  bands.forEach((b, i) => {
    const x0 = u.valToPos(b.from - 0.5, "x", true);
    const x1 = u.valToPos(b.to + 0.5, "x", true);
    ctx.fillStyle = b.evaluation ? (i % 2 ? "rgba(255, 167, 38, 0.30)" :
      "rgba(255, 167, 38, 0.18)") : i % 2 ? "rgba(84, 110, 122, 0.12)" : "rgba(84, 110, 122, 0.05)";
    ctx.fillRect(x0, top, x1 - x0, height);
    if (i > 0) {
      ctx.fillStyle = "rgba(69, 90, 100, 0.5)";
      ctx.fillRect(x0, top, px, height);
    }
    ctx.fillStyle = "#37474f";
    if (ctx.measureText(b.label).width <= x1 - x0 - 4 * px) {
      ctx.fillText(b.label, x0 + 2 * px, top + 2 * px);
    } else if (x1 - x0 >= 12 * px) {
      ctx.save();
      ctx.translate(x0 + 2 * px, top + 2 * px);
      ctx.rotate(Math.PI / 2);
      ctx.textBaseline = "bottom";
      ctx.fillText(b.label, 0, 0);
      ctx.restore();
    }
  });
  ctx.restore();
}

// Draws (or redraws) chart `name`: x values and named y series. opts: none (the text when
// there is nothing to draw), xLabel, bars (a histogram), bands (phaseBands: shaded behind the
// series, the x scale padded by half a step, the y scale leaving room for the names).
function plot(name, x, series, opts) {
  const box = chartBox(name);
  box.querySelectorAll(".none").forEach((old) => old.remove());
  const names = Object.keys(series);
  const data = [x, ...names.map((n) => series[n])];
  const key = names.join("\u0000") + (opts && opts.bars ? "|bars" : "");
  let chart = charts[name];
  if (chart && chart._diceKey !== key) {
    chart.destroy();
    chart = null;
  }
  if (x.length === 0 || names.length === 0) {
    if (chart) chart.destroy();
    delete charts[name];
    box.append(el("p", { class: "none" }, (opts && opts.none) || "nothing logged yet"));
  } else if (chart) {
    chart.setData(data);
  } else {
    const width = Math.max(box.clientWidth - 10, 300);
    const banded = !!(opts && opts.bands);
    chart = new uPlot({
      width, height: banded ? 240 : 200,
      scales: banded ? {
        x: { time: false, range: (u, min, max) => [min - 0.5, max + 0.5] },
        y: { range: (u, min, max) => {
          // From 0 (or below), with a fifth more on top for the phases' names.
          const low = Math.min(0, min);
          const high = max > low ? max : low + 1;
          return [low, high + 0.2 * (high - low)];
        } },
      } : { x: { time: false } },
      // Steps are whole numbers: ticks at whole steps only (a histogram's x is not steps).
      axes: [{ label: (opts && opts.xLabel) || "step",
        incrs: opts && opts.xLabel ? undefined : STEP_INCRS }, {}],
      hooks: banded ? { drawClear: [drawBands] } : {},
      series: [{ label: (opts && opts.xLabel) || "step" }, ...names.map((n, i) => ({
        label: n, stroke: COLORS[i % COLORS.length], width: banded ? (i === 0 ? 2 : 1.25) : 1.5,
        dash: banded && i > 0 ? [5, 3] : undefined,
        fill: opts && opts.bars ? COLORS[i % COLORS.length] + "88" : undefined,
        paths: opts && opts.bars ? uPlot.paths.bars({ size: [0.9] }) : undefined,
        points: { show: x.length < 60 },
      }))],
    }, data, box);
    chart._diceKey = key;
    charts[name] = chart;
  }
  if (chart && opts && opts.bands) {
    chart._diceBands = opts.bands;
    chart.redraw(false, false);
    box.dataset.bands = opts.bands.map((b) => b.label).join("|");
  }
  const values = names.reduce((sum, n) =>
    sum + series[n].filter((v) => v !== null && v !== undefined).length, 0);
  if (x.length > 0 && names.length > 0 && values === 0) {
    box.append(el("p", { class: "none" }, "every value is empty (null) so far"));
  }
  if (opts && opts.note) box.append(el("p", { class: "none" }, opts.note));
  box.dataset.series = String(chart ? names.length : 0);
  box.dataset.points = String(x.length);
  box.dataset.values = String(values);
}

// One series per curriculum level over every phase ("level L"), from the API's
// "<phase> / level <L>" series: a step is of one phase, so at most one of them has its value.
function levelSeries(byLevel, field, steps) {
  const out = {};
  for (const name of Object.keys(byLevel).sort()) {
    const level = "level " + name.slice(name.lastIndexOf(" / level ") + 9);
    if (!(level in out)) out[level] = steps.map(() => null);
    byLevel[name][field].forEach((v, i) => { if (v !== null) out[level][i] = v; });
  }
  return out;
}

// A metric series put on the steps' x values (null where it has no value).
function onSteps(steps, metric) {
  const at = new Map();
  if (metric) metric.step.forEach((s, i) => at.set(s, metric.value[i]));
  return steps.map((s) => (at.has(s) ? at.get(s) : null));
}

function histogram(values) {
  if (values.length === 0) return { x: [], counts: [] };
  const max = values[values.length - 1];
  const width = max <= 2 ? 0.1 : max <= 5 ? 0.25 : Math.ceil(max / 20);
  const bins = Math.floor(max / width) + 1;
  const counts = new Array(bins).fill(0);
  for (const v of values) counts[Math.floor(v / width)] += 1;
  return { x: counts.map((_, i) => +(i * width).toFixed(3)), counts };
}

function drawRun(d) {
  const s = d.steps;
  // One series each over every step, the phases as bands behind it; the per-level series only
  // when asked for (the toggle), one per level.
  const bands = phaseBands(s);
  const withLevels = (main, field) => Object.assign({ [main]: s[field] },
    state.levels ? levelSeries(d.by_level, field, s.step) : {});
  const note = state.levels && Object.keys(d.by_level).length === 0 ?
    "no task levels in this log (it has no task records)" : undefined;
  plot("reward", s.step, withLevels("mean reward", "mean_reward"), { bands, note });
  plot("correct", s.step, withLevels("correct rate", "correct_rate"), { bands, note });
  plot("failures", s.step, d.failure_rates, { none: "no failures logged" });
  plot("findings", s.step, d.finding_rates, { none: "no anti-cheat findings logged" });
  const h = histogram(d.speedups);
  plot("speedup", h.x, h.x.length ? { "correct kernels": h.counts } : {},
    { bars: true, xLabel: "speedup (reference ms / kernel ms)",
      none: "no correct kernel with a timed speedup yet (reward.mode full only)" });
  plot("throughput", s.step, {
    "rollout candidates/s": onSteps(s.step, d.metrics["rollout/candidates_per_s"]),
    "reward s per candidate": d.reward_seconds_per_candidate,
    "learner update s": onSteps(s.step, d.metrics["learner/update_seconds"]),
    "step seconds": s.seconds,
  });
  plot("policy", s.step, {
    "policy version": s.policy_version,
    "max staleness": d.max_staleness,
    "stale candidates dropped": onSteps(s.step, d.metrics["learner/candidates_stale"]),
  });
  plot("learner", s.step, { loss: s.loss, KL: s.kl, "grad norm": s.grad_norm,
    "clip fraction": s.clip_fraction });
  // One series each over every phase: whether the groups carry signal, and whether the sampler
  // wrote different answers at all (1/group size when every group is one text repeated).
  plot("exploration", s.step, {
    "mixed-group share": s.mixed_group_share,
    "distinct-text share": s.distinct_text_share,
  }, { none: "no judged group logged (a log from before these counts)" });
  drawMetric(d);
}

function drawMetric(d) {
  const select = $("metric-select");
  const names = Object.keys(d.metrics).sort();
  if (select.options.length !== names.length) {
    select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    if (state.metric && names.includes(state.metric)) select.value = state.metric;
  }
  state.metric = select.value;
  const m = d.metrics[state.metric];
  plot("metric", m ? m.step : [], m ? { [state.metric]: m.value } : {},
    { none: "no metrics logged" });
}

// A step's verdicts the reward service could not reach: count and share, with an alert badge
// above the threshold (faults of ours: the reward service, not the policy, failed).
function internalErrorCell(s, i, above) {
  const share = s.internal_error_share[i];
  if (share === null) return el("td", { title: "not counted (a log from before the count)" }, "-");
  const text = s.internal_errors[i] + " (" + (100 * share).toFixed(1) + "%)";
  if (!s.internal_error_alert[i]) return el("td", {}, text);
  return el("td", { class: "alert", "data-alert": "internal-errors",
    title: "more than " + (100 * above).toFixed(0) + "% of the step's verdicts are internal " +
      "errors: see the reward workers' logs" }, el("span", { class: "badge" }, "!"), " ", text);
}

// The banner over the run when any step's internal-error share is above the threshold.
function internalErrorBanner(d) {
  const s = d.steps;
  const steps = s.step.filter((_, i) => s.internal_error_alert[i]);
  if (steps.length === 0) return [];
  const shown = steps.slice(-10).join(", ") + (steps.length > 10 ? " (last 10 of " +
    steps.length + ")" : "");
  return [banner("error", "internal errors above " +
    (100 * d.internal_error_alert_above).toFixed(0) + "% of the verdicts at step " + shown +
    ": the reward service could not judge those candidates (scored as failures unless " +
    "learner.internal_errors is unscored); see the reward workers' logs")];
}

// The evaluation phases: the learner's table for all their tasks (null until it is logged).
function drawStagesTable(d) {
  const rows = d.stages.map((g) => el("tr", { "data-phase": g.phase, "data-step": g.first_step,
    class: g.exec === null ? "eval-pending" : "",
    onclick: () => go({ log: d.log, run: d.run_id, step: g.first_step }) },
  el("td", {}, g.phase), el("td", {}, g.policy_version), el("td", {}, g.split || "-"),
  el("td", {}, g.kind || "-"),
  el("td", {}, g.first_step === g.last_step ? g.first_step : g.first_step + "\u2013" + g.last_step),
  el("td", {}, fmt(g.tasks)), el("td", { "data-measure": "exec" }, fmt(g.exec, 3)),
  el("td", { "data-measure": "fast_1" }, fmt(g.fast_1, 3)), el("td", {}, fmt(g.fast_2, 3))));
  $("stages-table").tBodies[0].replaceChildren(...rows);
  $("stages-note").textContent = d.stages.length === 0 ? "no evaluation phase has run yet" :
    "The learner's table over all of each phase's tasks (\"-\" until the phase ends). " +
    "Intervals and changes against the noise floor: tools/learning-report.";
}

function drawStepsTable(d) {
  const s = d.steps;
  const body = $("steps-table").tBodies[0];
  const rows = [];
  for (let i = s.step.length - 1; i >= 0 && rows.length < 200; --i) {
    const step = s.step[i];
    rows.push(el("tr", { "data-step": step, onclick: () => go({ log: d.log, run: d.run_id, step }) },
      el("td", {}, step), el("td", {}, s.phase_name[i] || s.phase[i]),
      el("td", {}, s.policy_version[i]), el("td", {}, s.num_candidates[i]),
      el("td", {}, s.num_compiled[i]), el("td", {}, s.num_correct[i]),
      el("td", {}, fmt(s.mean_reward[i])),
      el("td", {}, s.groups_judged[i] ? s.groups_mixed[i] + "/" + s.groups_judged[i] : "-"),
      el("td", {}, s.groups_judged[i] ? fmt(s.distinct_texts_mean[i], 3) + " of " +
        s.group_size[i] : "-"),
      internalErrorCell(s, i, d.internal_error_alert_above),
      el("td", {}, fmt(s.loss[i])), el("td", {}, fmt(s.seconds[i], 3))));
  }
  body.replaceChildren(...rows);
}

async function refreshRun() {
  if (state.run === null) return;
  let d;
  try {
    d = await api("run", { log: state.log, run: state.run });
  } catch (e) {
    $("run-warnings").replaceChildren(banner(e.kind === "corrupt" ? "error" : "warn",
      "cannot read run " + state.run + ": " + e.message));
    return;
  }
  state.data = d;
  $("run-view").hidden = false;
  const r = d.run;
  $("run-info").textContent = "run " + d.run_id + " \u00b7 host " + (r.host || "-") +
    " \u00b7 git " + (r.gitRevision || "-") + " \u00b7 started " +
    (r.startedUnixMillis ? new Date(Number(r.startedUnixMillis)).toISOString() : "-") +
    " \u00b7 " + d.steps.step.length + " steps" + (r.note ? " \u00b7 " + r.note : "");
  const warnings = d.unreadable.map((u) => banner("error",
    "step " + u.step + ": candidates unreadable past a damaged record: " + u.error));
  warnings.push(...internalErrorBanner(d));
  if (d.steps.step.length === 0) warnings.push(banner("info", "no finished step yet"));
  $("run-warnings").replaceChildren(...warnings);
  $("not-in-log").textContent = d.not_in_log.length ? "Not in the reward log, so not shown: " +
    d.not_in_log.map((f) => f.field + " (" + f.why + ")").join("; ") + "." : "";
  drawStagesTable(d);
  drawRun(d);
  drawStepsTable(d);
}

async function showStep() {
  $("step-view").hidden = state.step === null;
  if (state.step === null) return;
  $("step-title").textContent = "step " + state.step;
  let d;
  try {
    d = await api("step", { log: state.log, run: state.run, step: state.step });
  } catch (e) {
    $("step-error").replaceChildren(banner("warn", e.message));
    $("groups").replaceChildren();
    return;
  }
  $("step-error").replaceChildren(...(d.error ? [banner("error", d.error)] : []));
  $("groups").replaceChildren(...d.groups.map((g) => el("div", { class: "group" },
    el("span", { class: "task" }, g.task_id + " (group " + g.group + ")"),
    ...g.candidates.map((c) => el("span", {
      class: "cand " + (c.correct ? "correct" : c.compiled ? "compiled" : "failed"),
      "data-task": g.task_id, "data-sample": c.sample,
      title: c.failure + (c.speedup ? " speedup " + fmt(c.speedup) : "") +
        (c.findings.length ? " findings: " + c.findings.join(", ") : ""),
      onclick: () => go({ log: state.log, run: state.run, step: state.step, task: g.task_id,
        sample: c.sample }),
    }, c.sample)))));
}

async function showCandidate() {
  const view = $("candidate-view");
  view.hidden = state.task === null || state.sample === null;
  if (view.hidden) return;
  $("candidate-title").textContent = "candidate: step " + state.step + ", task " + state.task +
    ", sample " + state.sample;
  let d;
  try {
    d = await api("candidate", { log: state.log, run: state.run, step: state.step,
      task: state.task, sample: state.sample });
  } catch (e) {
    $("candidate-summary").replaceChildren(banner("warn", e.message));
    return;
  }
  const rec = d.record;
  const v = rec.verdict || {};
  const t = v.timings || {};
  const rows = [["failure", v.failure || "none"], ["compiled", !!v.compiled],
    ["correct", !!v.correct], ["reward", fmt(v.reward || 0)], ["advantage", fmt(rec.advantage || 0)],
    ["speedup", fmt(v.speedup || 0)], ["kernel ms", fmt(t.kernelMsMean || 0)],
    ["reference ms", fmt(t.referenceMsMean || 0)], ["max abs error", fmt(v.maxAbsError || 0)],
    ["policy version", v.policyVersion || "0"], ["rollout worker", rec.rolloutWorker || "-"],
    ["reward worker", v.rewardWorker || "-"], ["reused from work id", v.reusedFrom || "0"]];
  $("candidate-summary").replaceChildren(el("dl", {}, ...rows.flatMap(([k, x]) =>
    [el("dt", {}, k), el("dd", {}, x)])));
  $("candidate-source").textContent = rec.evaluatedSource || "(no evaluated file: extraction failed)";
  $("candidate-response").textContent = rec.responseText || "";
  drawTrace(d.trace, rec.responseText || "");
  drawReference(d.task, d.task_note);
  $("candidate-findings").replaceChildren(...(v.findings || []).map((f) =>
    el("li", {}, (f.fatal ? "[fatal] " : "") + f.check + ": " + (f.detail || ""))));
  if (!(v.findings || []).length) $("candidate-findings").append(el("li", {}, "none"));
  $("candidate-kernels").replaceChildren(...d.kernels.map((k) => el("div", {},
    el("p", { class: "muted" }, k.source_hash + (k.record ? (k.record.compiled ? " compiled" :
      " did not compile") + ", " + fmt(k.record.compileSeconds || 0) + " s" : " " + k.error)),
    el("pre", {}, (k.record && k.record.compileLog) || "(empty compiler log)"))));
  if (!d.kernels.length) {
    $("candidate-kernels").append(el("p", { class: "muted" }, "no build (failed before compiling)"));
  }
  $("candidate-excerpt").textContent = v.logExcerpt || "(none)";
  view.scrollIntoView();
}

// The colour of unmask step `step` of `count`: early steps blue, late ones red.
function stepColor(step, count) {
  const hue = count > 1 ? 220 - (220 * step) / (count - 1) : 220;
  return "hsl(" + hue.toFixed(0) + ", 80%, 82%)";
}

// The response with each token shaded by the denoising step that unmasked it (hover: the step),
// and a legend of the steps.
function drawTrace(trace, text) {
  const note = $("candidate-trace-note");
  note.textContent = trace.note || (trace.num_steps + " denoising steps per block; " +
    trace.unmask_steps.length + " tokens. Hover a token for its step.");
  $("candidate-trace-legend").replaceChildren(...Array.from({ length: trace.num_steps },
    (_, k) => el("span", { class: "legend-step", style: "background:" +
      stepColor(k, trace.num_steps) }, "step " + k)));
  const box = $("candidate-trace");
  if (!trace.tokens) {
    box.textContent = text;
    return;
  }
  box.replaceChildren(...trace.tokens.map((t) => t.step === null ? el("span", {}, t.text) :
    el("span", { class: "tok", "data-step": t.step, title: "unmask step " + t.step,
      style: "background:" + stepColor(t.step, trace.num_steps) }, t.text)));
}

// The task's PyTorch reference (and an infill task's fixed prefix and suffix).
function drawReference(task, why) {
  if (!task) {
    $("candidate-task").textContent = why || "no task record";
    $("candidate-reference").textContent = "";
    return;
  }
  $("candidate-task").textContent = "task " + task.taskId + " \u00b7 " + (task.phase || "infill") +
    " \u00b7 level " + (task.level || "none") + " \u00b7 first met at step " +
    (task.firstStep || "0");
  let text = task.referenceSource || "(empty reference)";
  if (task.infillPrefix || task.infillSuffix) {
    text += "\n# --- infill prefix ---\n" + (task.infillPrefix || "") +
      "\n# --- infill suffix ---\n" + (task.infillSuffix || "");
  }
  $("candidate-reference").textContent = text;
}

// --- the run list ---
async function refreshRuns() {
  let d;
  try {
    d = await api("runs");
  } catch (e) {
    $("log-states").replaceChildren(banner("error", "dice-dash does not answer: " + e.message));
    return;
  }
  state.runs = d.runs;
  const describe = { missing: "no reward log here yet (waiting for the run to create it)",
    empty: "the log has no runs yet", corrupt: "the log is damaged", unreadable:
      "not a dice reward log" };
  $("log-states").replaceChildren(...d.logs.filter((l) => l.state !== "ok").map((l) =>
    banner(l.state === "empty" || l.state === "missing" ? "info" : "error",
      "log " + l.index + " " + l.path + ": " + describe[l.state] +
      (l.error ? " (" + l.error + ")" : ""))));
  const select = $("run-select");
  const options = d.runs.map((r) => el("option", { value: r.log + "/" + r.run_id },
    r.run_id + " (" + (r.steps || 0) + " steps)"));
  select.replaceChildren(...options);
  if (state.run === null && d.runs.length) {
    const last = d.runs[d.runs.length - 1];
    go({ log: last.log, run: last.run_id });
    return;
  }
  if (state.run !== null) select.value = state.log + "/" + state.run;
  $("empty-view").hidden = d.runs.length > 0;
  $("empty-text").textContent = d.runs.length ? "" : "No runs to show yet; this page updates " +
    "by itself when a run starts writing.";
}

async function route() {
  readHash();
  await refreshRuns();
  await refreshRun();
  await showStep();
  await showCandidate();
}

$("run-select").onchange = (e) => {
  const [log, ...run] = e.target.value.split("/");
  go({ log, run: run.join("/") });
};
$("metric-select").onchange = () => { if (state.data) drawMetric(state.data); };
$("level-toggle").onchange = (e) => {
  state.levels = e.target.checked;
  if (state.data) drawRun(state.data);
};
window.addEventListener("hashchange", route);

async function poll() {
  await refreshRuns();
  await refreshRun();
  $("live").textContent = "live \u00b7 updated " + new Date().toLocaleTimeString();
  setTimeout(poll, POLL_MS);
}
route().then(() => setTimeout(poll, POLL_MS));
