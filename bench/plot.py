#!/usr/bin/env python3
"""Draws the benchmark plots of docs/benchmarks.md from a results file.

usage: bench/plot.py [RESULTS.json ...] [--out DIR]

RESULTS.json (default bench/results/bench-readme.json) is either the committed transcription of
bench/README.md's tables ({"tables": [...], "accuracy": {...}}) or what `bench/compare --json
FILE` writes ({"title": ..., "table": [...]}), which is drawn as one more CPU table. Writes, into
DIR (default docs/img):

  bench-headline.png       the pets fine-tune's wall time: trainrun (as shipped and at the script's
                           settings) against the PyTorch script, per measured table
  bench-cpu-rows.png       wall time of every CPU row, trainrun against PyTorch, per table (stack)
  bench-models.png         images/s of the ConvNeXt / ViT / EfficientNet rows
  bench-gpu.png            images/s of the CUDA rows
  bench-pets-accuracy.png  wall time against evaluation accuracy of the pets fine-tune

The PNGs are byte-for-byte reproducible for a given matplotlib: fixed size and dpi, the Agg
backend, no Software/date metadata.
"""
import argparse
import json
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINRUN, PYTORCH, TRAINRUN_EQUAL = "#1f6fb4", "#ee4c2c", "#8fb7dc"
DPI = 100


def load(paths):
    """Every table and the accuracy runs of the given files."""
    tables, accuracy = [], []
    for path in paths:
        doc = json.load(open(path))
        if "table" in doc:  # bench/compare --json: "# bench/compare, 2026-11-27 18:29 UTC, trainrun 18d467a, 2 cores (AMD EPYC), ..."
            title = doc["title"]
            date = re.search(r"\d{4}-\d\d-\d\d", title)
            cores = re.search(r"\d+ cores \([^)]*\)", title)
            tables.append({"id": "cpu-compare", "date": date.group(0) if date else "this run", "stack": "bench/compare",
                           "machine": cores.group(0) if cores else "this machine", "rows": doc["table"]})
        tables += doc.get("tables", [])
        accuracy += doc.get("accuracy", {}).get("runs", [])
    return tables, accuracy


def line(table, row, settings, side):
    return next((r for r in table["rows"] if (r["row"], r["settings"], r["side"]) == (row, settings, side)), None)


def value(table, row, settings, side, key):
    r = line(table, row, settings, side)
    return None if r is None else r.get(key)


def label(table):
    return f"{table['date']}\n{table['stack'].split(',')[0]}" + (", " + table["stack"].split(",")[1].strip().split()[1]
                                                                   if "LibTorch" in table["stack"] else "")


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return path


def bars(ax, groups, series, unit, ratio_of=None):
    """Grouped bars: groups = [label], series = [(name, colour, [value or None per group])]."""
    width = 0.8 / len(series)
    for i, (name, colour, values) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v or 0 for v in values]
        drawn = ax.bar(xs, heights, width, color=colour, label=name)
        for b, v in zip(drawn, values):
            if v is None:
                ax.annotate("n/a", (b.get_x() + b.get_width() / 2, 0), ha="center", va="bottom", fontsize=7)
    if ratio_of:
        a, b = ratio_of
        top = max((v or 0) for _, _, vs in series for v in vs) or 1
        for g in range(len(groups)):
            if a[g] and b[g]:
                ax.annotate(f"{a[g] / b[g]:.2f}x", (g, max(a[g], b[g]) + top * 0.02), ha="center", fontsize=7)
        ax.set_ylim(0, top * 1.15)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=7)
    ax.set_ylabel(unit, fontsize=8)
    ax.tick_params(axis="y", labelsize=7)


def headline(tables, out):
    cpu = [t for t in tables if t["id"].startswith("cpu-") and line(t, "pets-2x1", "equal", "PyTorch")]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    groups = [label(t) for t in cpu]
    shipped = [value(t, "pets-2x1", "defaults", "trainrun", "wall") for t in cpu]
    equal = [value(t, "pets-2x1", "equal", "trainrun", "wall") for t in cpu]
    script = [value(t, "pets-2x1", "equal", "PyTorch", "wall") for t in cpu]
    bars(ax, groups, [("trainrun, recipe as shipped", TRAINRUN, shipped),
                      ("trainrun, the script's settings (fp32)", TRAINRUN_EQUAL, equal),
                      ("PyTorch script (fp32)", PYTORCH, script)], "wall time, s (lower is better)")
    for g, (s, p) in enumerate(zip(shipped, script)):
        if s and p:
            ax.annotate(f"{s / p:.2f}x", (g - 0.27, s + max(script) * 0.02), ha="center", fontsize=7)
    ax.set_title("pets fine-tune (resnet50d, 2 processes x 1 thread, 10 steps of 64): wall time", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return save(fig, out, "bench-headline.png")


def cpu_rows(tables, out):
    cpu = [t for t in tables if t["id"].startswith("cpu-")]
    rows = list(dict.fromkeys(r["row"] for t in cpu for r in t["rows"]))
    cols = 4
    fig, axes = plt.subplots(math.ceil((len(rows) + 1) / cols), cols, figsize=(12, 6.4))
    axes = axes.flatten()
    for ax, row in zip(axes, rows):
        tr = [value(t, row, "equal", "trainrun", "wall") for t in cpu]
        py = [value(t, row, "equal", "PyTorch", "wall") for t in cpu]
        bars(ax, [t["date"][5:] + "\n" + ("D13" if "Debian 13" in t["stack"] else "D12") for t in cpu],
             [("trainrun", TRAINRUN, tr), ("PyTorch", PYTORCH, py)], "wall s", ratio_of=(tr, py))
        ax.set_title(row, fontsize=9)
    for ax in axes[len(rows):]:
        ax.axis("off")
    handles, names = axes[0].get_legend_handles_labels()
    axes[-1].legend(handles, names, loc="center", fontsize=8, frameon=False,
                    title="equal settings, wall time\n(lower is better;\nlabel: trainrun / PyTorch)\n\n"
                          + "\n".join(f"{t['date'][5:]} {'D13' if 'Debian 13' in t['stack'] else 'D12'}: "
                                      f"{t['machine'].split(' (')[0][:40]}" for t in cpu),
                    title_fontsize=7)
    fig.tight_layout()
    return save(fig, out, "bench-cpu-rows.png")


def models(tables, out):
    table = next(t for t in tables if t["id"].startswith("models-") and t["id"].endswith("fp32"))
    rows = list(dict.fromkeys(r["row"] for r in table["rows"]))
    tr = [value(table, r, "equal", "trainrun", "img_s") for r in rows]
    py = [value(table, r, "equal", "PyTorch", "img_s") for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars(ax, rows, [("trainrun", TRAINRUN, tr), ("PyTorch (timm's model in plain torch)", PYTORCH, py)],
         "training images/s (higher is better)", ratio_of=(tr, py))
    ax.set_title(f"frozen backbone, 2 processes x 1 thread, fp32, {table['date']} (label: trainrun / PyTorch)", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    fig.tight_layout()
    return save(fig, out, "bench-models.png")


def gpu(tables, out):
    table = next(t for t in tables if t["id"].startswith("gpu-"))
    rows = list(dict.fromkeys(r["row"] for r in table["rows"]))
    fig, axes = plt.subplots(1, len(rows), figsize=(8, 3.4))
    for ax, row in zip(axes, rows):
        tr = [value(table, row, "equal", "trainrun", "img_s")]
        py = [value(table, row, "equal", "PyTorch", "img_s")]
        bars(ax, [row], [("trainrun", TRAINRUN, tr), ("PyTorch", PYTORCH, py)], "training images/s", ratio_of=(tr, py))
        ax.set_title(row, fontsize=9)
    axes[0].legend(fontsize=7, frameon=False, loc="lower left")
    fig.suptitle(f"{table['machine'].split(',')[0]}, fp16 + channels_last, {table['date']} (higher is better)", fontsize=9)
    fig.tight_layout()
    return save(fig, out, "bench-gpu.png")


def pets_accuracy(runs, out):
    fig, ax = plt.subplots(figsize=(7, 4))
    machines = list(dict.fromkeys(r["machine"] for r in runs))
    for run in runs:
        colour = PYTORCH if run["label"].startswith("PyTorch") else TRAINRUN
        marker = "os"[machines.index(run["machine"]) % 2]
        se = math.sqrt(run["accuracy"] * (1 - run["accuracy"]) / run["examples"])  # binomial standard error
        ax.errorbar(run["wall"], run["accuracy"], yerr=se, fmt=marker, color=colour, capsize=3)
        ax.annotate(f"{run['label']}\n({run['settings']})", (run["wall"], run["accuracy"]), xytext=(6, -4),
                    textcoords="offset points", fontsize=7)
    for i, m in enumerate(machines):
        ax.plot([], [], "os"[i % 2], color="grey", label=f"{m} ({next(r['date'] for r in runs if r['machine'] == m)})")
    ax.set_xlabel("wall time, s (lower is better)", fontsize=8)
    ax.set_ylabel("evaluation accuracy (1,600 images; bars: 1 s.e.)", fontsize=8)
    ax.set_xlim(0, max(r["wall"] for r in runs) * 1.45)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    ax.set_title("pets fine-tune to convergence (200 steps): speed against accuracy", fontsize=9)
    fig.tight_layout()
    return save(fig, out, "bench-pets-accuracy.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="*", default=[os.path.join(ROOT, "bench", "results", "bench-readme.json")])
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "img"))
    args = ap.parse_args()
    plt.rcParams.update({"font.family": "DejaVu Sans", "svg.hashsalt": "trainrun"})
    os.makedirs(args.out, exist_ok=True)
    tables, runs = load(args.results)
    written = [headline(tables, args.out), cpu_rows(tables, args.out), models(tables, args.out), gpu(tables, args.out)]
    if runs:
        written.append(pets_accuracy(runs, args.out))
    for path in written:
        print(path)


if __name__ == "__main__":
    sys.exit(main())
