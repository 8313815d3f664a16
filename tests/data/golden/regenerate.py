"""Writes the golden cases' expected files with the installed bpeforge.

Run only when the training contract changes on purpose (and say so in the
commit): the expected files are the reference both `cargo test` (crates/core/
tests/golden.rs) and pytest (tests/test_golden.py) compare against.

  python tests/data/golden/regenerate.py            # all cases
  python tests/data/golden/regenerate.py chars      # one case

A case is a folder holding `corpus.txt` (plus any side file its settings name,
e.g. `langs.txt`), `settings.json` (training options by their Python/Rust
names; paths relative to the folder) and `samples.json` (texts to encode).
This script writes `expected.json`: the merges (pairs of ids), their counts,
the vocabulary size and the ids of every sample (`encode_ordinary`).
"""
import json
import os
import sys

import bpeforge

HERE = os.path.dirname(os.path.abspath(__file__))


def resolve(case_dir, settings):
    """Settings with the side-file paths made absolute (relative to the case)."""
    out = dict(settings)
    if out.get("langs") is not None:
        out["langs"] = [os.path.join(case_dir, p) for p in out["langs"]]
    return out


def expected(case_dir):
    with open(os.path.join(case_dir, "settings.json"), encoding="utf-8") as f:
        settings = json.load(f)
    with open(os.path.join(case_dir, "samples.json"), encoding="utf-8") as f:
        samples = json.load(f)
    tok = bpeforge.train([os.path.join(case_dir, "corpus.txt")], progress=False, **resolve(case_dir, settings))
    model = json.loads(tok.to_json())
    return {
        "vocab_size": tok.vocab_size,
        "merges": model["merges"],
        "merge_counts": model["merge_counts"],
        "ids": [tok.encode_ordinary(t) for t in samples],
    }


def main():
    names = sys.argv[1:] or sorted(d for d in os.listdir(HERE) if os.path.isdir(os.path.join(HERE, d)))
    for name in names:
        case_dir = os.path.join(HERE, name)
        result = expected(case_dir)
        with open(os.path.join(case_dir, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, separators=(",", ":"))
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
