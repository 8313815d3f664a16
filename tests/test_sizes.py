"""Several vocabulary sizes from one run: ``Tokenizer.truncated(N)`` and
``train(..., vocab_sizes=[...])`` give the model a run at N gives (merges,
their counts, ids on real text, the exports read by the real libraries),
and what no run at N would give is refused with the reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import bpeforge
from bpeforge.errors import ParameterError
from conftest import SLICE_LANGS_FILE, _read_slice, same_training, shared_corpus

# The option sets checked: bytes with special tokens, and the chars scheme
# (alphabet from the corpus) with byte fallback, fused unknowns, a coverage
# below 1 and the subword-nmt suffix.
CASES = {
    "bytes": dict(scheme="bytes", pretokenizer="gpt2", special_tokens=["<|endoftext|>", "<pad>"]),
    "bytes-o200k": dict(scheme="bytes", special_tokens=["<s>"], min_frequency=3),
    "chars-byte-fallback": dict(scheme="chars", pretokenizer="whitespace", byte_fallback=True,
                                special_tokens=["<s>", "</s>"]),
    "chars-fuse-unk": dict(scheme="chars", pretokenizer="whitespace", fuse_unk=True, character_coverage=0.999,
                           special_tokens=["<mask>"]),
    "chars-suffix": dict(scheme="chars", pretokenizer="whitespace", end_of_word_suffix="</w>"),
}
GROWTH = (0, 1, 60, 400)  # merges of each smaller size
LARGEST = 900


def _train(corpus_file: str, vocab_size: int, **kw):
    return bpeforge.train(corpus_file, vocab_size=vocab_size, progress=False, threads=2, **kw)


def _base(tok: bpeforge.Tokenizer) -> int:
    return len(tok.special_tokens) + (256 if tok.scheme == "bytes" else len(tok.alphabet or []))


@pytest.fixture(scope="module")
def largest(corpus_file):
    """case -> (the model of the largest size, its base vocabulary size)."""
    out = {}
    for name, kw in CASES.items():
        probe = _train(corpus_file, 20_000, **kw)  # the base is known once trained (chars: the alphabet)
        base = _base(probe)
        out[name] = (_train(corpus_file, base + LARGEST, **kw), base)
    return out


def _same_model(cut: bpeforge.Tokenizer, direct: bpeforge.Tokenizer, texts: list[str]) -> None:
    same_training(cut, direct)
    assert cut == direct
    assert cut.get_vocab_bytes() == direct.get_vocab_bytes()
    assert cut.special_tokens == direct.special_tokens and cut.alphabet == direct.alphabet
    assert cut._scheme_settings() == direct._scheme_settings() and cut.pretokenizer == direct.pretokenizer
    ids = cut.encode_batch(texts, allowed_special="all", disallowed_special=())
    assert ids == direct.encode_batch(texts, allowed_special="all", disallowed_special=())
    assert cut.decode_batch(ids) == direct.decode_batch(ids)


@pytest.mark.parametrize("case", CASES)
def test_truncated_equals_a_run_at_that_size(corpus_file, held_out, largest, case) -> None:
    big, base = largest[case]
    texts = held_out[:1500] + ["<s>x</s> <mask> <pad><|endoftext|>", "\u0f00\U0001f600 unseen ⸻ 𝔘"]
    for grow in GROWTH:
        size = base + grow
        cut = big.truncated(size)
        direct = _train(corpus_file, size, **CASES[case])
        _same_model(cut, direct, texts)
        assert cut.metadata["settings"]["vocab_size"] == size
        assert cut.metadata["truncated_from"] == {"vocab_size": big.vocab_size, "merges": len(big.merges)}
        assert cut.metadata["stopped_early"] is False


@pytest.mark.parametrize("case", CASES)
def test_vocab_sizes_trains_once_and_gives_each_run(corpus_file, corpus_slice, held_out, largest, case) -> None:
    _, base = largest[case]
    sizes = [base + LARGEST, base + 60, base]  # any order: the result is smallest first
    models = bpeforge.train(corpus_file, vocab_sizes=sizes, progress=False, threads=2, **CASES[case])
    assert list(models) == sorted(sizes)
    from_texts = bpeforge.train_from_iterator(corpus_slice, vocab_sizes=sizes, progress=False, **CASES[case])
    for size in sizes:
        direct = _train(corpus_file, size, **CASES[case])
        _same_model(models[size], direct, held_out[:500])
        same_training(from_texts[size], direct)
        assert models[size].vocab_size == size


def test_vocab_sizes_from_a_counts_file(corpus_file, tmp_path) -> None:
    counts = tmp_path / "c.counts"
    bpeforge.count(corpus_file, counts, progress=False)
    models = bpeforge.train_from_counts(counts, vocab_sizes=["1k", 400], progress=False)
    for size in (400, 1000):
        same_training(models[size], _train(corpus_file, size))


def test_a_size_past_where_the_run_stopped_is_that_run(corpus_slice) -> None:
    # min_frequency stops the run early: a run at a larger size stops at the same place.
    kw = dict(min_frequency=40, progress=False)
    models = bpeforge.train_from_iterator(corpus_slice, vocab_sizes=[300, 5000, 6000], **kw)
    for size in (300, 5000, 6000):
        direct = bpeforge.train_from_iterator(corpus_slice, vocab_size=size, **kw)
        same_training(models[size], direct)
        assert models[size].metadata["stopped_early"] == direct.metadata["stopped_early"]
        assert models[size].metadata["settings"]["vocab_size"] == size
    assert models[5000].metadata["stopped_early"] is True
    with pytest.raises(ParameterError, match="larger than this model"):
        models[6000].truncated(models[6000].vocab_size + 1)


# ---- the exports, read by the real libraries -----------------------------------------


def test_huggingface_exports_of_a_cut_and_a_run_give_the_same_ids(corpus_file, held_out, largest, tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    texts = held_out[:1500]
    for case in ("bytes", "chars-byte-fallback", "chars-suffix"):
        big, base = largest[case]
        size = base + 60
        cut, direct = big.truncated(size), _train(corpus_file, size, **CASES[case])
        files = []
        for name, tok in (("cut", cut), ("direct", direct)):
            tok.to_huggingface(tmp_path / f"{case}-{name}" / "")
            files.append(tokenizers.Tokenizer.from_file(str(tmp_path / f"{case}-{name}" / "tokenizer.json")))
        hf_cut, hf_direct = files
        assert hf_cut.get_vocab() == hf_direct.get_vocab()
        ours = cut.encode_batch(texts)
        got = [e.ids for e in hf_cut.encode_batch(texts, add_special_tokens=False)]
        assert got == [e.ids for e in hf_direct.encode_batch(texts, add_special_tokens=False)]
        assert got == ours, case
        assert hf_cut.decode_batch(got[:300]) == hf_direct.decode_batch(got[:300])


def test_tiktoken_exports_of_a_cut_and_a_run_give_the_same_ids(corpus_file, held_out, largest) -> None:
    pytest.importorskip("tiktoken")
    from bpeforge.interop import tiktoken_encoding

    big, base = largest["bytes"]
    size = base + 400
    cut, direct = big.truncated(size), _train(corpus_file, size, **CASES["bytes"])
    enc_cut, enc_direct = tiktoken_encoding(cut), tiktoken_encoding(direct)
    texts = held_out[:1500] + ["a<|endoftext|>b"]
    got = enc_cut.encode_batch(texts, allowed_special="all")
    assert got == enc_direct.encode_batch(texts, allowed_special="all")
    assert got == cut.encode_batch(texts, allowed_special="all")
    assert [enc_cut.decode(i) for i in got] == [enc_direct.decode(i) for i in got] == cut.decode_batch(got)
    assert enc_cut.n_vocab == enc_direct.n_vocab == size


@pytest.mark.parametrize("case", ["chars-byte-fallback", "chars-fuse-unk"])
def test_sentencepiece_exports_of_a_cut_and_a_run_give_the_same_ids(corpus_file, held_out, largest, tmp_path,
                                                                    case) -> None:
    spm = pytest.importorskip("sentencepiece")
    big, base = largest[case]
    size = base + 400
    cut, direct = big.truncated(size), _train(corpus_file, size, **CASES[case])
    sp_cut = spm.SentencePieceProcessor(model_file=cut.to_sentencepiece(tmp_path / "cut.model"))
    sp_direct = spm.SentencePieceProcessor(model_file=direct.to_sentencepiece(tmp_path / "direct.model"))
    texts = held_out[:1500]
    got = sp_cut.encode(texts)
    assert got == sp_direct.encode(texts)
    assert got == cut.encode_batch(texts)
    assert sp_cut.decode(got[:300]) == sp_direct.decode(got[:300])
    assert sp_cut.piece_size() == sp_direct.piece_size() == size


# ---- special tokens added later, SuperBPE, extension, checkpoints -----------------------


def test_special_tokens_added_after_training_follow_the_kept_merges(corpus_file, held_out) -> None:
    big = _train(corpus_file, 1200, special_tokens=["<s>"]).with_special_tokens(["<|im_start|>"])
    big = big.with_special_tokens(["<|im_end|>"])
    cut = big.truncated(702)
    direct = _train(corpus_file, 700, special_tokens=["<s>"]).with_special_tokens(["<|im_start|>", "<|im_end|>"])
    assert cut == direct and cut.vocab_size == 702
    assert (cut.token_to_id("<|im_start|>"), cut.token_to_id("<|im_end|>")) == (700, 701)
    assert cut.metadata["added_special_tokens"] == {"<|im_end|>": 701}
    texts = [t + "<|im_end|>" for t in held_out[:300]]
    assert cut.encode_batch(texts, allowed_special="all") == direct.encode_batch(texts, allowed_special="all")


def test_an_extension_cut_equals_the_extension_run_at_that_size(corpus_slice) -> None:
    old = bpeforge.train_from_iterator(corpus_slice[:1000], vocab_size=600, progress=False)
    new = corpus_slice[1000:]
    extended = bpeforge.train_from_iterator(new, resume_from=old, vocab_size=1100, progress=False)
    same_training(extended.truncated(800), bpeforge.train_from_iterator(new, resume_from=old, vocab_size=800,
                                                                       progress=False))
    assert extended.truncated(800).metadata["resumed_merges"] == len(old.merges)
    same_training(extended.truncated(500), old.truncated(500))
    assert extended.truncated(500).metadata["resumed_merges"] == 500 - 256
    # vocab_sizes when extending: each size is one a run from the old model can take.
    with pytest.raises(ParameterError, match=r"vocab_sizes: a run at 500 is refused: .*below the resumed model"):
        bpeforge.train_from_iterator(new, resume_from=old, vocab_sizes=[500, 1100], progress=False)


def test_superbpe_is_cut_above_its_transition_only(corpus_file, held_out) -> None:
    kw = dict(superbpe_transition=700)
    big = _train(corpus_file, 1300, **kw)
    for size in (701, 1000):
        _same_model(big.truncated(size), _train(corpus_file, size, **kw), held_out[:500])
    for size in (700, 500):
        with pytest.raises(ParameterError, match=r"vocab_size \d+ is not above this SuperBPE model's transition 700"):
            big.truncated(size)
    with pytest.raises(ParameterError, match="vocab_sizes: a run at 700 is refused: superbpe_transition 700"):
        bpeforge.train(corpus_file, vocab_sizes=[700, 1000], progress=False, **kw)


def test_parity_balance_is_refused_for_it_measures_at_the_runs_own_size(corpus_file, tmp_path) -> None:
    langs = tmp_path / "langs.txt"
    langs.write_text("\n".join(_read_slice(2000, SLICE_LANGS_FILE)) + "\n", encoding="utf-8")
    kw = dict(langs=str(langs), max_premium=1.2, balance_min_lines=100, progress=False)
    with pytest.raises(ParameterError, match="vocab_sizes: not with max_premium"):
        bpeforge.train(corpus_file, vocab_sizes=[600, 900], **kw)
    tok = bpeforge.train(corpus_file, vocab_size=900, **kw)
    with pytest.raises(ParameterError, match="parity language balance"):
        tok.truncated(600)
    # Temperature weights depend on line shares only: cut exactly.
    kw = dict(langs=str(langs), temperature=3.0, progress=False)
    same_training(bpeforge.train(corpus_file, vocab_size=900, **kw).truncated(600),
                  bpeforge.train(corpus_file, vocab_size=600, **kw))


def test_a_checkpoint_is_refused_and_resuming_it_gives_every_size(corpus_file, tmp_path) -> None:
    ckpt = tmp_path / "ckpt.json"
    sizes = [300, 700, 1500]
    straight = bpeforge.train(corpus_file, vocab_sizes=sizes, checkpoint_path=ckpt, checkpoint_every=100,
                              progress=False)
    part = bpeforge.load(ckpt)
    assert 700 < part.vocab_size < 1500  # past the smaller sizes
    with pytest.raises(ParameterError, match="unfinished run's checkpoint"):
        part.truncated(600)
    resumed = bpeforge.train(corpus_file, resume_from=ckpt, vocab_sizes=sizes, progress=False)
    for size in sizes:
        same_training(resumed[size], straight[size])
    with pytest.raises(ParameterError, match="trains to vocab_size 1500 .* not to the largest size given, 32000"):
        bpeforge.train(corpus_file, resume_from=ckpt, vocab_sizes=[700, 32000], progress=False)


def test_an_imported_model_with_its_own_ids_is_refused(tmp_path, corpus_slice) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.train_from_iterator(corpus_slice, trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>"],
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf.save(str(tmp_path / "tokenizer.json"))
    imported = bpeforge.from_huggingface(tmp_path / "tokenizer.json")
    with pytest.raises(ParameterError, match="imported with ids of its own"):
        imported.truncated(500)


# ---- what is refused, naming the parameter ----------------------------------------------


def test_sizes_out_of_range_are_refused_naming_the_parameter(largest, corpus_file) -> None:
    big, base = largest["chars-byte-fallback"]
    with pytest.raises(ParameterError, match=rf"vocab_size {big.vocab_size + 1} is larger than this model's "
                                             rf"{big.vocab_size} ids"):
        big.truncated(big.vocab_size + 1)
    with pytest.raises(ParameterError, match=rf"vocab_size {base - 1} is below this model's base vocabulary: "
                                             rf"259 special token\(s\) \+ {base - 259} base symbols"):
        big.truncated(base - 1)
    for bad in (True, 3.0, None):
        with pytest.raises(ParameterError, match="vocab_size must be an integer"):
            big.truncated(bad)  # type: ignore[arg-type]
    assert largest["bytes"][0].truncated("1k").vocab_size == 1000  # a count, as vocab_size= takes
    # The chars alphabet is known once the run has counted: a size below it fails then.
    with pytest.raises(ParameterError, match="vocab_sizes: vocab_size 300 is below this model's base vocabulary"):
        bpeforge.train(corpus_file, vocab_sizes=[300, base + 10], progress=False, **CASES["chars-byte-fallback"])


@pytest.mark.parametrize("kw, message", [
    (dict(vocab_sizes=[]), "vocab_sizes is empty"),
    (dict(vocab_sizes=[400, 400]), "vocab_sizes names 400 more than once"),
    (dict(vocab_sizes="400"), "vocab_sizes must be a list of sizes"),
    (dict(vocab_sizes=[400, "4x"]), "vocab_sizes: '4x' is not a count"),
    (dict(vocab_sizes=[400, 600], vocab_size=600), "give vocab_sizes or vocab_size, not both"),
    (dict(vocab_sizes=[200, 600]), "vocab_sizes: a run at 200 is refused: vocab_size 200 is below the base"),
])
def test_bad_vocab_sizes_are_refused_before_the_run(corpus_file, kw, message) -> None:
    with pytest.raises(ParameterError, match=message):
        bpeforge.train(corpus_file, progress=False, **kw)


# ---- the command line -----------------------------------------------------------------


def _cli(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpeforge", *argv], capture_output=True, text=True, cwd=cwd)


def test_cli_writes_one_model_per_size(corpus_file, tmp_path, held_out) -> None:
    kw = CASES["bytes"]
    specials = [w for t in kw["special_tokens"] for w in ("--special-token", t)]
    r = _cli("train", corpus_file, "--vocab-sizes", "400,1k,700", "--pretokenizer", "gpt2", *specials,
             "-o", str(tmp_path / "m-{size}.json"), "--progress", "off")
    assert r.returncode == 0, r.stderr
    assert f"saved to {tmp_path / 'm-400.json'}, {tmp_path / 'm-700.json'}, {tmp_path / 'm-1000.json'}" in r.stdout
    for size in (400, 700, 1000):
        _same_model(bpeforge.load(tmp_path / f"m-{size}.json"), _train(corpus_file, size, **kw), held_out[:300])
    # A folder gets the default names; without --output, the current folder does.
    folder = tmp_path / "out"
    folder.mkdir()
    assert _cli("train", corpus_file, "--vocab-sizes", "300,500", "-o", str(folder), "-q").returncode == 0
    assert sorted(p.name for p in folder.iterdir()) == ["corpus-300.bpeforge.json", "corpus-500.bpeforge.json"]
    same_training(bpeforge.load(folder / "corpus-300.bpeforge.json"), _train(corpus_file, 300))
    r = _cli("train", corpus_file, "--vocab-sizes", "300,500", "-q", cwd=folder)
    assert r.returncode == 1 and "default output corpus-300.bpeforge.json already exists" in r.stderr


@pytest.mark.parametrize("argv, message", [
    (["--vocab-sizes", "300,500", "-o", "one.json"], "give --output a pattern with {size}"),
    (["--vocab-sizes", "300,500", "--vocab-size", "500", "-o", "m{size}.json"],
     "give --vocab-sizes or --vocab-size, not both"),
    (["--vocab-sizes", "300,300", "-o", "m{size}.json"], "argument --vocab-sizes: --vocab-sizes names 300 more"),
    (["--vocab-sizes", "100,300", "-o", "m{size}.json"],
     "--vocab-sizes: a run at 100 is refused: --vocab-size 100 is below the base vocabulary"),
    (["--vocab-sizes", "300,x", "-o", "m{size}.json"], "argument --vocab-sizes: 'x' is not a count"),
])
def test_cli_refuses_bad_vocab_sizes_before_training(corpus_file, tmp_path, argv, message) -> None:
    r = _cli("train", corpus_file, *argv, cwd=tmp_path)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not list(tmp_path.glob("m*.json"))


def test_cli_checkpoint_goes_to_the_largest_model_and_resumes(corpus_file, tmp_path) -> None:
    pattern = str(tmp_path / "m-{size}.json")
    args = ["--vocab-sizes", "400,1500", "-o", pattern, "--checkpoint-every", "100", "-q"]
    assert _cli("train", corpus_file, *args).returncode == 0
    largest = bpeforge.load(tmp_path / "m-1500.json")
    assert "checkpoint" not in largest.metadata  # the finished run replaced its checkpoint
    # Resuming a checkpoint past the smaller size still gives that size.
    ckpt = tmp_path / "ckpt.json"
    bpeforge.train(corpus_file, vocab_size=1500, checkpoint_path=ckpt, checkpoint_every=100, progress=False)
    assert bpeforge.load(ckpt).vocab_size > 400
    r = _cli("train", corpus_file, "--resume", str(ckpt), "--vocab-sizes", "400,1500", "-o",
             str(tmp_path / "r-{size}.json"), "-q")
    assert r.returncode == 0, r.stderr
    for size in (400, 1500):
        same_training(bpeforge.load(tmp_path / f"r-{size}.json"), bpeforge.load(tmp_path / f"m-{size}.json"))


def test_cli_resume_command_repeats_the_sizes(corpus_file, tmp_path) -> None:
    from bpeforge import cli
    from bpeforge.cli.train import _plan_outputs, _train_options, resume_command

    pattern = str(tmp_path / "m-{size}.json")
    args = cli.build_parser().parse_args(["train", corpus_file, "--vocab-sizes", "400,1500", "-o", pattern,
                                          "--checkpoint-every", "100", "--min-frequency", "3"])
    args.default_output = False
    _plan_outputs(args, args.inputs)
    args.train_options = _train_options(args, False)
    assert args.train_options.checkpoint_path == str(tmp_path / "m-1500.json")
    words = resume_command(args).split()
    assert words[words.index("--resume") + 1] == str(tmp_path / "m-1500.json")
    assert words[words.index("--vocab-sizes") + 1] == "400,1500" and "--vocab-size" not in words
    assert words[words.index("-o") + 1] == f"'{pattern}'"


def test_cli_truncate(corpus_file, tmp_path) -> None:
    big = _train(corpus_file, 1200, special_tokens=["<s>"])
    big.save(tmp_path / "big.json.gz")
    r = _cli("truncate", str(tmp_path / "big.json.gz"), "--vocab-size", "0.5k", "-o", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr
    same_training(bpeforge.load(tmp_path / "s.json"), _train(corpus_file, 500, special_tokens=["<s>"]))
    shown = _cli("inspect", str(tmp_path / "s.json"), "--merges", "0", "--vocab", "0")
    assert 'truncated_from: {"merges": 943, "vocab_size": 1200}' in shown.stdout, shown.stdout
    r = _cli("truncate", str(tmp_path / "big.json.gz"), "--vocab-size", "2000", "-o", str(tmp_path / "t.json"))
    assert r.returncode == 1 and "--vocab-size 2000 is larger than this model's 1200 ids" in r.stderr
    assert not (tmp_path / "t.json").exists()
    r = _cli("truncate", str(tmp_path / "big.json.gz"), "--vocab-size", "500", "-o", str(tmp_path / "big.json.gz"))
    assert r.returncode == 1 and "it is the input" in r.stderr


@pytest.mark.slow
def test_cuts_of_a_large_run_on_the_whole_corpus_equal_runs_at_their_sizes(tmp_path) -> None:
    corpus = shared_corpus("multi-200k.txt.xz")
    kw = dict(special_tokens=["<|endoftext|>"], progress=False)
    models = bpeforge.train(corpus, vocab_sizes=[8000, 16000, 32000], **kw)
    texts = _read_slice(20_000, corpus)[-5000:]
    for size in (8000, 16000):
        direct = bpeforge.train(corpus, vocab_size=size, **kw)
        _same_model(models[size], direct, texts)
    assert json.loads(models[8000].to_json())["merges"] == json.loads(models[32000].to_json())["merges"][:8000 - 257]
