"""Extend a Llama-style (SentencePiece BPE, byte fallback) vocabulary with a
low-resource language and show tokens per word before and after.

The base model is trained by `sentencepiece` itself with Llama 2's flags on
multi-200k without the new language; bpeforge imports it, learns
--extra-merges merges on the language's multi-200k lines, and exports the
result back to a .model that `sentencepiece` encodes identically (checked).
Tokens per whitespace word on held-apart lines of multi-1m (after line 200,000).

    python bench/llama_extend.py --corpus ../shared/corpora/multi-200k.txt.xz \
        --heldout ../shared/corpora/multi-1m.txt.xz --lang sw --vocab-size 16000 --extra-merges 1000
"""

from __future__ import annotations

import argparse
import lzma
import os
import tempfile
import warnings

import sentencepiece as spm

import bpeforge
from bpeforge import interop


def read(path: str) -> list[str]:
    with lzma.open(path, "rt", encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")


def per_word(encode, lines: list[str]) -> float:
    words = sum(len(l.split()) for l in lines)
    return sum(len(encode(l)) for l in lines) / max(words, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--heldout", required=True)
    ap.add_argument("--lang", default="sw")
    ap.add_argument("--vocab-size", type=int, default=16000)
    ap.add_argument("--extra-merges", type=int, default=1000)
    ap.add_argument("--heldout-lines", type=int, default=2000)
    a = ap.parse_args()
    lines, langs = read(a.corpus), read(a.corpus.replace(".txt.xz", ".langs.txt.xz"))
    held, held_langs = read(a.heldout)[200000:], read(a.heldout.replace(".txt.xz", ".langs.txt.xz"))[200000:]
    base_text = [l for l, g in zip(lines, langs) if g != a.lang]
    new_text = [l for l, g in zip(lines, langs) if g == a.lang]
    held_new = [l for l, g in zip(held, held_langs) if g == a.lang][: a.heldout_lines]
    held_en = [l for l, g in zip(held, held_langs) if g == "en"][: a.heldout_lines]
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "base.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(base_text) + "\n")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=os.path.join(d, "base"), model_type="bpe", vocab_size=a.vocab_size,
            byte_fallback=True, split_digits=True, allow_whitespace_only_pieces=True,
            normalization_rule_name="identity", remove_extra_whitespaces=False, character_coverage=0.99995,
            input_sentence_size=200000, shuffle_input_sentence=True, minloglevel=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = interop.from_sentencepiece(os.path.join(d, "base.model"))
        ext = bpeforge.train_from_iterator(new_text, resume_from=base, vocab_size=base.vocab_size + a.extra_merges,
                                           progress=False)
        assert all(ext.id_to_token(i) == base.id_to_token(i) for i in range(base.vocab_size))
        ext.to_sentencepiece(os.path.join(d, "extended.model"))
        sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "extended.model"))
        same = sum(sp.encode(t) == ext.encode(t, disallowed_special=()) for t in held_new + held_en)
    print(f"{len(new_text)} {a.lang} training lines; old ids kept: {base.vocab_size}/{base.vocab_size}; "
          f"sentencepiece on the exported extension: {same}/{len(held_new) + len(held_en)} lines identical")
    print("| held-out text | lines | base tok/word | extended tok/word |")
    print("| --- | ---: | ---: | ---: |")
    for name, texts in ((a.lang, held_new), ("en", held_en)):
        before = per_word(lambda t: base.encode(t, disallowed_special=()), texts)
        after = per_word(lambda t: ext.encode(t, disallowed_special=()), texts)
        print(f"| {name} | {len(texts)} | {before:.3f} | {after:.3f} |")


if __name__ == "__main__":
    main()
