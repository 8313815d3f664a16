"""The figures about the vocabulary itself: pair frequency by merge, the
compression curve, token lengths, scripts, and training progress."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Union

from .data import Figure, Panel, Series
from .draw import COLORS
from .inputs import read_progress_csv
from .models import Model, represented_len
from .scripts import BYTES, SPECIAL, token_script
from .stats import r4 as _r
from .stats import superbpe_transition

PathLike = Union[str, "os.PathLike[str]"]


def fig_pair_frequency(models: list[Model]) -> Figure:
    series = []
    notes = []
    vlines = []
    for i, m in enumerate(models):
        counts = m.doc.get("merge_counts") or []
        if counts:
            series.append(Series(m.label, [int(c) for c in counts], list(range(1, len(counts) + 1)), COLORS[i]))
            tr, _ = superbpe_transition(m)
            if tr:
                vlines.append((tr + 0.5, f"{m.label}: SuperBPE stage 2"))
        else:
            notes.append(f"{m.label}: the model records no pair counts (models imported from other libraries do not), so it has no curve here.")
    panel = Panel("line", "Pair frequency by merge index", "merge index (rank of the merge)",
                  "pair count when merged (log scale)", series, yscale="log", vlines=vlines,
                  empty_text="no pair counts recorded in the model(s)")
    return Figure(
        "pair_frequency", "Pair frequency by merge index",
        "How often the chosen pair occurred in the training corpus at the moment each merge was learned, "
        "by merge index (the first merge is 1). The curve falls as merges go on; where it flattens near "
        "min_frequency, later merges add rare tokens.",
        [panel], notes,
    )


def fig_compression(models: list[Model], curves: list[dict[str, Any]]) -> Figure:
    series = [Series(m.label, c["tokens"], c["vocab_size"], COLORS[i]) for i, (m, c) in enumerate(zip(models, curves))]
    vlines = [(c["superbpe_transition"] + c["vocab_size"][0], f"{m.label}: SuperBPE stage 2")
              for m, c in zip(models, curves) if c["superbpe_transition"]]
    c0 = curves[0]
    panel = Panel("line", "Corpus token count as merges grow", "vocabulary size (base symbols and specials + the first k merges)",
                  f"tokens in the sample ({c0['lines']:,} lines, {c0['bytes'] / 1e6:.2f} MB)", series, vlines=vlines)
    notes = [
        f"{m.label}: {c['tokens'][0]:,} tokens with no merge, {c['tokens'][-1]:,} with all {c['merges'][-1]:,} "
        f"merges ({c['bytes_per_token'][-1]:.2f} bytes per token)."
        for m, c in zip(models, curves)
    ]
    return Figure(
        "compression", "Corpus token count as merges grow",
        f"The same {c0['lines']:,} sampled lines encoded with models cut to their first k merges "
        f"({len(c0['merges'])} values of k, denser at the start where each merge matters most), plotted against "
        "the vocabulary size they give, so models with different base alphabets line up. "
        "Lower is better compression; the flattening tail shows how little the last merges add on this text.",
        [panel], notes, data={"curves": [dict(c, label=m.label) for m, c in zip(models, curves)]},
    )


def fig_token_length(models: list[Model]) -> Figure:
    longest_b = max((represented_len(r, t) for m in models for i, (r, t) in enumerate(zip(m.raw, m.texts))
                     if i not in m.specials), default=1)
    longest_c = max((len(t) for m in models for i, t in enumerate(m.texts) if t is not None and i not in m.specials),
                    default=1)
    cap_b, cap_c = max(4, min(24, longest_b)), max(4, min(16, longest_c))
    panels = []
    data: dict[str, Any] = {}
    for unit, cap in (("bytes", cap_b), ("characters", cap_c)):
        series = []
        for i, m in enumerate(models):
            hist = [0] * (cap + 1)
            for tid, (raw, text) in enumerate(zip(m.raw, m.texts)):
                if tid in m.specials:
                    continue
                if unit == "bytes":
                    n = represented_len(raw, text)
                elif text is None:
                    continue
                else:
                    n = len(text)
                hist[min(n, cap)] += 1
            series.append(Series(m.label, hist[1:], None, COLORS[i]))
            data.setdefault(m.label, {})[unit] = {str(k): v for k, v in enumerate(hist) if k and v}
        longest = longest_b if unit == "bytes" else longest_c
        cats = [str(k) for k in range(1, cap)] + [f"≥{cap}" if longest > cap else str(cap)]
        title = "in UTF-8 bytes" if unit == "bytes" else "in characters (valid UTF-8 tokens)"
        panels.append(Panel("bar", f"Token length {title}", f"length ({unit})", "tokens in the vocabulary",
                            series, categories=cats))
    return Figure(
        "token_length", "Token length histogram",
        "Number of vocabulary entries by length: in bytes of the text they stand for (left), and in "
        "characters for the entries that are whole UTF-8 text (right). Special tokens are left out; in the "
        "chars scheme the word-boundary marker counts as one space.",
        panels, [], data=data, layout="column",
    )


def fig_scripts(models: list[Model]) -> Figure:
    import numpy as np

    per_model: list[tuple[dict[str, float], dict[str, float]]] = []
    data: dict[str, Any] = {}
    for m in models:
        buckets = [SPECIAL if i in m.specials else (BYTES if t is None else token_script(t)) for i, t in enumerate(m.texts)]
        vocab = Counter(buckets)
        V = len(buckets)
        used: Counter[str] = Counter()
        nz = np.nonzero(m.counts)[0]
        for tid in nz.tolist():
            used[buckets[tid]] += int(m.counts[tid])
        total_used = sum(used.values()) or 1
        vs = {k: v / V for k, v in vocab.items()}
        us = {k: v / total_used for k, v in used.items()}
        per_model.append((vs, us))
        data[m.label] = {"vocabulary_entries": dict(vocab.most_common()), "vocabulary_share": {k: _r(v, 6) for k, v in sorted(vs.items(), key=lambda kv: -kv[1])},
                         "sample_token_share": {k: _r(v, 6) for k, v in sorted(us.items(), key=lambda kv: -kv[1])}}
    keys: dict[str, float] = {}
    for vs, _us in per_model:
        for k, v in vs.items():
            keys[k] = max(keys.get(k, 0.0), v)
    top = sorted(keys, key=lambda k: -keys[k])[:16]
    rest = [k for k in keys if k not in top]
    cats = top + (["other scripts"] if rest else [])
    panels = []
    for j, (title, xlabel) in enumerate((("Share of the vocabulary", "share of vocabulary ids"),
                                          ("Share of the tokens in the sample", "share of sample tokens"))):
        series = []
        for i, (m, pair) in enumerate(zip(models, per_model)):
            d = pair[j]
            ys = [d.get(k, 0.0) for k in top] + ([sum(d.get(k, 0.0) for k in rest)] if rest else [])
            series.append(Series(m.label, [_r(y, 6) for y in ys], None, COLORS[i]))
        panels.append(Panel("barh", title, xlabel, "", series, categories=cats, percent=True))
    return Figure(
        "scripts", "Vocabulary share by Unicode script",
        "Each token is put in the script of its letters, by the Unicode Script property (Latin, Cyrillic, Han, ...; Hiragana and Katakana "
        "together as Kana); \"Common\" holds tokens with no letter (digits, punctuation, spaces), \"Mixed "
        "scripts\" tokens with letters of two or more scripts, and \"bytes (partial UTF-8)\" byte-level tokens "
        "that are not whole characters. Left: share of the vocabulary's ids; right: share of the tokens "
        "produced on the sample, i.e. weighted by use.",
        panels, [], data=data,
    )


def fig_progress(models: list[Model], csvs: list[PathLike | None]) -> Figure:
    s_count, s_time, notes = [], [], []
    data: dict[str, Any] = {}
    for i, path in enumerate(csvs):
        if path is None:
            continue
        d = read_progress_csv(path)
        label = models[i].label if i < len(models) else f"run {i + 1}"
        s_count.append(Series(label, d["pair_count"], d["merge"], COLORS[i]))
        s_time.append(Series(label, d["elapsed_s"], d["merge"], COLORS[i]))
        data[label] = dict(d, path=os.fspath(path))
        el = d["elapsed_s"][-1] if d["elapsed_s"] else 0.0
        notes.append(f"{label}: {len(d['merge']):,} merges in {el:.2f} s"
                     + (f" ({len(d['merge']) / el:,.0f} merges/s)" if el > 0 else "") + f" ({os.path.basename(os.fspath(path))}).")
    return Figure(
        "training_progress", "Training progress (merge phase)",
        "From the progress CSV the merge loop writes as it goes (merge index, pair count, elapsed seconds since "
        "the merge phase started): the pair count of each merge (left, log scale) and the time taken to reach it "
        "(right). A live file is drawn as far as it has been written.",
        [Panel("line", "Pair count by merge", "merge index", "pair count (log scale)", s_count, yscale="log"),
         Panel("line", "Elapsed time by merge", "merge index", "seconds since the merge phase began", s_time)],
        notes, data=data,
    )
