#!/usr/bin/env python3
"""Drives headless Chromium over the DevTools protocol against a running dice-dash.

Run by dice_dash_browser_test.cc (which writes the reward log and starts dice-dash); standard
library plus Debian's python3-websocket. Checks, in a real browser:
  1. the page loads and every per-step chart is drawn (a canvas with coloured pixels) with as
     many points as the API returned steps, and as many non-null values as the API's series hold;
     the first view: the evaluations table has a row per stage of the API with its Exec and
     fast_1; the reward and correct-rate charts have one series each, the phases as bands named
     as the API's steps run; the per-level toggle (off at first) adds one series per level;
  2. clicking a step row lists its candidates, clicking a candidate shows its evaluated source,
     its response shaded by denoising step (each token a span carrying its step, matching the
     API's trace) and the task's PyTorch reference beside it;
  3. with --ready-file: writes that file, then waits for the charts to grow to one more step
     (the test appends it): the page updates live;
  4. the steps whose internal-error share the API flags (internal_error_alert) and only those
     carry the alert badge in the steps table, and the run shows the alert banner when any does
     (--alert-steps: how many the test wrote).
Exit status: 0 all checks passed, 1 a check failed (the message says which), 77 no browser.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

PER_STEP_CHARTS = ["reward", "correct", "failures", "throughput", "policy", "learner",
                   "exploration"]


class CheckFailed(Exception):
    pass


def fail(message):
    raise CheckFailed(message)


class Browser:
    """Headless Chromium with one page, driven over its DevTools websocket."""

    def __init__(self, chromium, profile):
        import websocket  # Debian: python3-websocket

        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", "--user-data-dir=" + profile,
             "--window-size=1400,1800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if time.time() > deadline or self.process.poll() is not None:
                fail("chromium did not start its DevTools endpoint (exit %s)" % self.process.poll())
            time.sleep(0.05)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%s/json/list" % port))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    fail("%s: %s" % (method, message["error"]))
                return message["result"]

    def eval(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            fail("page script failed: %s" % result["exceptionDetails"])
        return result["result"].get("value")

    def wait_for(self, what, expression, seconds=30):
        """Polls `expression` until it is truthy; its last value names the failure."""
        deadline = time.time() + seconds
        value = None
        while time.time() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        fail("timed out after %ds waiting for %s (last: %r)" % (seconds, what, value))

    def close(self):
        try:
            self.ws.close()
        finally:
            # Chromium's helpers share its process group (its own session, started above).
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


CHARTS_JS = """(Array.from(document.querySelectorAll('.chart')).map(c => {
  const canvas = c.querySelector('canvas');
  let inked = 0;
  if (canvas) {
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked++;
  }
  return {name: c.dataset.chart, points: Number(c.dataset.points || -1),
          values: Number(c.dataset.values || -1), inked};
}))"""


def non_null(columns):
    return sum(1 for column in columns for v in column if v is not None)


def expected_values(run):
    """Non-null values per chart, from the API's answer (what the page should plot)."""
    s = run["steps"]
    steps = s["step"]

    def on_steps(name):
        metric = run["metrics"].get(name)
        at = dict(zip(metric["step"], metric["value"])) if metric else {}
        return [at.get(step) for step in steps]

    return {
        "reward": non_null([s["mean_reward"]]),
        "correct": non_null([s["correct_rate"]]),
        "failures": non_null(run["failure_rates"].values()),
        "throughput": non_null([on_steps("rollout/candidates_per_s"),
                                run["reward_seconds_per_candidate"],
                                on_steps("learner/update_seconds"), s["seconds"]]),
        "policy": non_null([s["policy_version"], run["max_staleness"],
                            on_steps("learner/candidates_stale")]),
        "learner": non_null([s["loss"], s["kl"], s["grad_norm"], s["clip_fraction"]]),
        "exploration": non_null([s["mixed_group_share"], s["distinct_text_share"]]),
    }


def check_charts(browser, api_base, run_id, want_steps):
    run = json.load(urllib.request.urlopen(api_base + "/api/run?run=" + run_id))
    steps = len(run["steps"]["step"])
    if steps != want_steps:
        fail("the API lists %d steps, the test wrote %d" % (steps, want_steps))
    browser.wait_for("every per-step chart with %d points" % steps,
                     "(() => { const c = %s; return %s.every(n => c.find(x => x.name === n && "
                     "x.points === %d)) ? c : null; })()" % (CHARTS_JS, json.dumps(PER_STEP_CHARTS),
                                                             steps))
    charts = {c["name"]: c for c in browser.eval(CHARTS_JS)}
    want = expected_values(run)
    for name in PER_STEP_CHARTS:
        chart = charts[name]
        if chart["values"] != want[name]:
            fail("chart %s plots %d values, the API has %d" % (name, chart["values"], want[name]))
        if chart["inked"] < 200:
            fail("chart %s has a canvas with %d drawn pixels: not drawn" % (name, chart["inked"]))
    speedups = run["speedups"]
    if speedups and charts["speedup"]["values"] <= 0:
        fail("speedup histogram empty though the API has %d speedups" % len(speedups))
    print("charts: %d steps, values %s" % (steps, {n: charts[n]["values"] for n in PER_STEP_CHARTS}))
    return steps


def phase_bands(run):
    """The phases as the page should band them, by name: runs of consecutive steps of one
    phase (its name and whether it evaluates)."""
    s = run["steps"]
    runs = []
    for i in range(len(s["step"])):
        phase = (s["phase_name"][i] or s["phase"][i], s["evaluation"][i])
        if not runs or runs[-1] != phase:
            runs.append(phase)
    return [name for name, _ in runs]


def level_values(run, field):
    """{"level L": non-null values} over every phase, as the toggle should add them."""
    out = {}
    for name, series in run["by_level"].items():
        level = "level " + name.rsplit(" / level ", 1)[1]
        out[level] = out.get(level, 0) + sum(1 for v in series[field] if v is not None)
    return out


STAGES_JS = """([...document.querySelectorAll('#stages-table tbody tr')].map(r => ({
  phase: r.dataset.phase, exec: r.querySelector('[data-measure=exec]').textContent,
  fast_1: r.querySelector('[data-measure=fast_1]').textContent})))"""

SERIES_JS = """(Object.fromEntries(['reward', 'correct'].map(n => {
  const box = document.querySelector('.chart[data-chart=' + n + ']');
  const chart = window.diceDash.charts[n];
  return [n, {series: Number(box.dataset.series), values: Number(box.dataset.values),
              bands: box.dataset.bands,
              labels: chart ? chart.series.slice(1).map(s => s.label) : []}];
})))"""


def shown_number(text):
    return None if text == "-" else float(text)


def check_first_view(browser, api_base, run_id):
    """The evaluations table, one series per chart with the phases as bands, and the toggle."""
    run = json.load(urllib.request.urlopen(api_base + "/api/run?run=" + run_id))
    stages = run["stages"]
    if not stages:
        fail("the API lists no stage: the test's log has an evaluation phase")
    rows = browser.wait_for("the evaluations table with %d rows" % len(stages),
                            "(() => { const r = %s; return r.length === %d ? r : null; })()"
                            % (STAGES_JS, len(stages)))
    for row, stage in zip(rows, stages):
        if row["phase"] != stage["phase"]:
            fail("evaluations row shows phase %r, the API %r" % (row["phase"], stage["phase"]))
        for measure in ("exec", "fast_1"):
            shown, want = shown_number(row[measure]), stage[measure]
            if (shown is None) != (want is None) or (want is not None
                                                     and abs(shown - want) > 1e-3):
                fail("evaluations row %s shows %s %r, the API has %r"
                     % (stage["phase"], measure, row[measure], want))
    charts = browser.eval(SERIES_JS)
    bands = "|".join(phase_bands(run))
    for name, label in (("reward", "mean reward"), ("correct", "correct rate")):
        c = charts[name]
        if c["series"] != 1 or c["labels"] != [label]:
            fail("chart %s has series %s by default, want only %r" % (name, c["labels"], label))
        if c["bands"] != bands:
            fail("chart %s bands the phases %r, the API's steps run %r" % (name, c["bands"], bands))
    print("first view: %d evaluation rows, one series per chart, bands %r"
          % (len(rows), bands))

    browser.eval("document.getElementById('level-toggle').click()")
    for name, field, main in (("reward", "mean_reward", "mean reward"),
                              ("correct", "correct_rate", "correct rate")):
        levels = level_values(run, field)
        if not levels:
            fail("the API has no per-level series: the test's log has task records")
        want_labels = [main] + sorted(levels)
        want_values = non_null([run["steps"][field]]) + sum(levels.values())
        got = browser.wait_for(
            "chart %s with the level series %s" % (name, sorted(levels)),
            "(() => { const c = %s[%s]; return c.series === %d ? c : null; })()"
            % (SERIES_JS, json.dumps(name), len(want_labels)))
        if got["labels"] != want_labels or got["values"] != want_values:
            fail("with levels, chart %s has %s (%d values), want %s (%d)"
                 % (name, got["labels"], got["values"], want_labels, want_values))
    browser.eval("document.getElementById('level-toggle').click()")
    browser.wait_for("the level series gone again",
                     "(() => { const c = %s; return c.reward.series === 1 && "
                     "c.correct.series === 1; })()" % SERIES_JS)
    print("levels toggle: adds %s to both charts, off again" % sorted(level_values(
        run, "mean_reward")))


ALERTS_JS = """(() => {
  const rows = [...document.querySelectorAll('#steps-table tbody tr')];
  const banner = [...document.querySelectorAll('#run-warnings .banner')].some(
      b => b.textContent.startsWith('internal errors above'));
  return {rows: rows.length, banner,
          flagged: rows.filter(r => r.querySelector('[data-alert=internal-errors]'))
                       .map(r => Number(r.dataset.step)).sort((a, b) => a - b)};
})()"""


def check_internal_error_alerts(browser, api_base, run_id, want_flagged):
    run = json.load(urllib.request.urlopen(api_base + "/api/run?run=" + run_id))
    s = run["steps"]
    flagged = sorted(step for step, alert in zip(s["step"], s["internal_error_alert"]) if alert)
    if len(flagged) != want_flagged:
        fail("the API flags steps %s, the test wrote %d above the share" % (flagged, want_flagged))
    shown = browser.wait_for("the steps table with %d rows" % len(s["step"]),
                             "(() => { const a = %s; return a.rows === %d ? a : null; })()"
                             % (ALERTS_JS, len(s["step"])))
    if shown["flagged"] != flagged:
        fail("the steps table flags steps %s, the API %s" % (shown["flagged"], flagged))
    if shown["banner"] != bool(flagged):
        fail("the internal-error banner is %s with steps %s flagged"
             % ("shown" if shown["banner"] else "missing", flagged))
    print("internal errors: steps %s flagged in the table and the banner" % flagged)


def check_candidate(browser, step, task, sample, source_text):
    browser.wait_for("the row of step %d" % step,
                     "!!document.querySelector('#steps-table tr[data-step=\"%d\"]')" % step)
    browser.eval("document.querySelector('#steps-table tr[data-step=\"%d\"]').click()" % step)
    chip = ".cand[data-task=%s][data-sample=\"%d\"]" % (json.dumps(task), sample)
    browser.wait_for("candidate %s/%d in the step's groups" % (task, sample),
                     "!!document.querySelector(%s)" % json.dumps(chip))
    browser.eval("document.querySelector(%s).click()" % json.dumps(chip))
    shown = browser.wait_for(
        "the candidate's source", "(() => { const t = document.getElementById("
        "'candidate-source').textContent; return t.includes(%s) ? t : null; })()"
        % json.dumps(source_text))
    print("candidate %s/%d: source shown (%d chars)" % (task, sample, len(shown)))


def check_trace_and_reference(browser, api_base, run_id, step, task, sample, reference_text):
    query = urllib.parse.urlencode({"run": run_id, "step": step, "task": task, "sample": sample})
    want = json.load(urllib.request.urlopen(api_base + "/api/candidate?" + query))
    tokens = [t for t in want["trace"]["tokens"] if t["step"] is not None]
    shown = browser.wait_for(
        "the trace's %d tokens" % len(tokens),
        "(() => { const s = [...document.querySelectorAll('#candidate-trace .tok')]; "
        "return s.length === %d ? s.map(x => [x.textContent, Number(x.dataset.step), x.title, "
        "getComputedStyle(x).backgroundColor]) : null; })()" % len(tokens))
    for i, (token, (text, step, title, colour)) in enumerate(zip(tokens, shown)):
        if text != token["text"] or step != token["step"]:
            fail("trace token %d shows %r at step %d, the API has %r at step %d"
                 % (i, text, step, token["text"], token["step"]))
        if title != "unmask step %d" % step:
            fail("trace token %d hovers %r, want its step" % (i, title))
    colours = {step: colour for _, step, _, colour in shown}
    if len(set(colours.values())) != len(colours):
        fail("steps share a colour: %s" % colours)
    legend = browser.eval("document.querySelectorAll('#candidate-trace-legend .legend-step').length")
    if legend != want["trace"]["num_steps"]:
        fail("the legend lists %d steps, the trace has %d" % (legend, want["trace"]["num_steps"]))
    reference = browser.wait_for(
        "the task's reference", "(() => { const t = document.getElementById("
        "'candidate-reference').textContent; return t.includes(%s) ? t : null; })()"
        % json.dumps(reference_text))
    print("candidate %s/%d: trace of %d tokens over %d steps, reference shown (%d chars)"
          % (task, sample, len(tokens), len(colours), len(reference)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="dice-dash's address, http://HOST:PORT")
    parser.add_argument("--run", required=True)
    parser.add_argument("--steps", type=int, required=True, help="steps the test wrote")
    parser.add_argument("--step", type=int, required=True, help="step of the candidate to open")
    parser.add_argument("--task", required=True)
    parser.add_argument("--sample", type=int, required=True)
    parser.add_argument("--source-text", required=True, help="text its source must show")
    parser.add_argument("--reference-text", required=True, help="text its reference must show")
    parser.add_argument("--ready-file", help="write it, then expect one more step to appear")
    parser.add_argument("--alert-steps", type=int, default=0,
                        help="steps written with an internal-error share above the alert's")
    parser.add_argument("--screenshot", help="save a PNG of the first view here (docs/dice-dash.png)")
    args = parser.parse_args()

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIP: no chromium on PATH (tools/setup installs Debian's chromium)")
        return 77
    try:
        import websocket  # noqa: F401
    except ImportError:
        print("SKIP: no python3-websocket (tools/setup installs it)")
        return 77

    with tempfile.TemporaryDirectory(prefix="dice-dash-chromium-",
                                     ignore_cleanup_errors=True) as profile:
        browser = Browser(chromium, profile)
        try:
            browser.call("Page.enable")
            browser.call("Page.navigate", url=args.url + "/")
            steps = check_charts(browser, args.url, args.run, args.steps)
            if args.ready_file:
                open(args.ready_file, "w").close()
                browser.wait_for("the page to show step %d live" % steps,
                                 "document.querySelector('.chart[data-chart=reward]')"
                                 ".dataset.points === '%d'" % (steps + 1))
                check_charts(browser, args.url, args.run, steps + 1)
                print("live: the charts grew to %d steps without a reload" % (steps + 1))
            check_first_view(browser, args.url, args.run)
            check_internal_error_alerts(browser, args.url, args.run, args.alert_steps)
            if args.screenshot:
                # The first view, as a user sees it on opening the page.
                import base64
                browser.eval("window.scrollTo(0, 0)")
                time.sleep(0.5)
                shot = browser.call("Page.captureScreenshot", format="png")
                open(args.screenshot, "wb").write(base64.b64decode(shot["data"]))
            check_candidate(browser, args.step, args.task, args.sample, args.source_text)
            check_trace_and_reference(browser, args.url, args.run, args.step, args.task,
                                      args.sample, args.reference_text)
        except CheckFailed as e:
            print("FAIL: %s" % e)
            return 1
        finally:
            browser.close()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
