"""Fuzz the importers in ``bpeforge.interop``: Hugging Face ``tokenizer.json``,
``.tiktoken`` rank files (and their ``.json`` sidecar) and SentencePiece
``.model`` files, mutated from valid files that the exporters write.

Contract checked: an importer returns a Tokenizer or raises a
``BpeforgeError`` (``ModelFormatError``, ``ParameterError``, ``InputError``)
within seconds; an imported Tokenizer encodes and decodes any text. Skips
cleanly (exit 0) when ``bpeforge.interop`` or one of the importers is absent.

The first input byte picks the importer (0: HF, 1: tiktoken ranks,
2: SentencePiece, 3: tiktoken sidecar); the rest is the file's content.

    python fuzz/fuzz_interop.py --seeds DIR
    python fuzz/fuzz_interop.py DIR -max_total_time=60
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

from _common import collect, error_label, feature, run, timed  # noqa: E402

with atheris.instrument_imports():
    import bpeforge
    from bpeforge import BpeforgeError

    try:
        from bpeforge import interop
    except ImportError:  # being written elsewhere: nothing to fuzz yet
        interop = None

IMPORTERS = ["from_huggingface", "from_tiktoken", "from_sentencepiece"]
NAMES = ["tokenizer.json", "v.tiktoken", "m.model", "v.tiktoken.json"]
SAMPLE = "Hello wörld, it's 12345 <s> ünïcödé\t\n  end 😀 中文 ｈｅ\ufb01 \u2460\u3000e\u0301"
# scratch files: FUZZ_TMP (fuzz/run.py points it into its workdir), else /dev/shm
WORK = tempfile.mkdtemp(prefix="bpeforge-fuzz-",
                        dir=os.environ.get("FUZZ_TMP") or ("/dev/shm" if os.path.isdir("/dev/shm") else None))


def available() -> bool:
    return interop is not None and all(hasattr(interop, f) for f in IMPORTERS)


def write_seeds(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    texts = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:300]
    kw = dict(min_frequency=1, progress=False)
    b = bpeforge.train_from_iterator(texts, vocab_size=320, special_tokens=["<s>"], **kw)
    c = bpeforge.train_from_iterator(texts, vocab_size=2450, scheme="chars", pretokenizer="whitespace",
                                     character_coverage=0.99, fuse_unk=True, **kw)
    # Byte fallback and fused unknowns (the Llama-style importer paths).
    f = bpeforge.train_from_iterator(texts, vocab_size=2800, scheme="chars", pretokenizer="whitespace",
                                     character_coverage=0.99, byte_fallback=True, fuse_unk=True, **kw)
    tmp = tempfile.mkdtemp()
    llama = _llama_style_seed(f, os.path.join(tmp, "llama.model"))
    normalized = _charsmap_seed(f, os.path.join(tmp, "nfkc.model"))
    sp_built = [p for p in (llama, normalized) if p]
    seeds = {
        0: [b.to_huggingface(os.path.join(tmp, "b.json")), c.to_huggingface(os.path.join(tmp, "c.json")),
            f.to_huggingface(os.path.join(tmp, "f.json"))]
           + [llama_hf(p, os.path.join(tmp, f"{k}.json")) for k, p in enumerate(sp_built)],
        1: [b.to_tiktoken(os.path.join(tmp, "b.tiktoken"))[0]],
        2: [c.to_sentencepiece(os.path.join(tmp, "c.model")), f.to_sentencepiece(os.path.join(tmp, "f.model"))]
           + sp_built,
        3: [os.path.join(tmp, "b.tiktoken.json")],
    }
    for sel, paths in seeds.items():
        for k, p in enumerate(paths):
            with open(p, "rb") as src, open(os.path.join(d, f"seed-{sel}-{k}"), "wb") as dst:
                dst.write(bytes([sel]) + src.read())


def _llama_style_seed(tok: bpeforge.Tokenizer, path: str) -> str | None:
    """A spaces-kept byte-fallback .model (Llama's normalizer settings), made by
    re-exporting ``tok``'s model with those settings, when sentencepiece is here."""
    try:
        from bpeforge.interop.sentencepiece_proto import sp_pb  # noqa: F401
        from bpeforge.interop.sentencepiece_export import sentencepiece_model_proto
    except ImportError:
        return None
    m = sentencepiece_model_proto(tok)
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.precompiled_charsmap = b""
    m.normalizer_spec.remove_extra_whitespaces = False
    with open(path, "wb") as out:
        out.write(m.SerializeToString())
    return path


def _charsmap_seed(tok: bpeforge.Tokenizer, path: str) -> str | None:
    """A byte-fallback .model with a small precompiled charsmap (a few NFKC
    rules: full-width letters, a ligature, a circled digit, U+3000), so that
    the charsmap reader sees valid tables within -max_len (nmt_nfkc's own is
    240 KB), and its HF twin a Precompiled normalizer."""
    try:
        import sentencepiece as spm
        from bpeforge.interop.sentencepiece_export import sentencepiece_model_proto
        from bpeforge.interop.sentencepiece_proto import sp_pb
    except ImportError:
        return None
    rules = [("ｈ", "h"), ("ｅ", "e"), ("\ufb01", "fi"), ("\u2460", "1"), ("\u3000", " "), ("e\u0301", "\u00e9")]
    spec = sp_pb().NormalizerSpec()
    spec.ParseFromString(spm.SentencePieceNormalizer(norm_map=rules).serialized_normalizer_spec())
    m = sentencepiece_model_proto(tok)
    m.normalizer_spec.name = "user_defined"
    m.normalizer_spec.precompiled_charsmap = spec.precompiled_charsmap
    with open(path, "wb") as out:
        out.write(m.SerializeToString())
    return path


def llama_hf(model_path: str, path: str) -> str:
    """The seed .model imported and written as a Llama-type tokenizer.json."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return interop.from_sentencepiece(model_path).to_huggingface(path)


RANKS = None  # a valid rank file for sidecar fuzzing


def test_one_input(data: bytes) -> None:
    try:
        one_input(data)
    except Exception as e:
        if not collect(e, data):
            raise


def one_input(data: bytes) -> None:
    if not data:
        return
    sel = data[0] % 4
    path = os.path.join(WORK, NAMES[sel])
    with open(path, "wb") as f:
        f.write(data[1:])
    if sel == 3:
        with open(os.path.join(WORK, "v.tiktoken"), "wb") as f:
            f.write(RANKS or b"")
        path = os.path.join(WORK, "v.tiktoken")
    func = getattr(interop, IMPORTERS[min(sel, 1) if sel != 2 else 2])
    kwargs = {"pattern": "gpt2"} if sel == 1 else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = timed(func.__name__, lambda: func(path, **kwargs), 10)
    except BpeforgeError as e:
        feature(f"{sel}:" + error_label(e)[:60])
        return
    finally:
        if sel == 3:
            os.unlink(os.path.join(WORK, "v.tiktoken.json"))
    feature(f"{sel}:ok:{tok.scheme}:{tok.pretokenizer[:12]}")
    ids = tok.encode(SAMPLE, allowed_special="all")
    tok.decode(ids)


def load_ranks() -> None:
    """A real tiktoken rank file, the base the importer inputs mutate."""
    global RANKS
    tok = bpeforge.train_from_iterator(["hello world"] * 5, vocab_size=260, progress=False)
    tok.to_tiktoken(os.path.join(WORK, "ranks.tiktoken"))
    with open(os.path.join(WORK, "ranks.tiktoken"), "rb") as f:
        RANKS = f.read()


def main() -> None:
    if not available():
        print("bpeforge.interop importers are not available: nothing to fuzz", file=sys.stderr)
        return
    run(test_one_input, write_seeds, load_ranks)


if __name__ == "__main__":
    main()
