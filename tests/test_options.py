"""One list of training options (bpeforge.options.TrainOptions): the Python
signatures, the command line (local and --ray) and the engine all follow it,
and no option is dropped on the way."""

from __future__ import annotations

import dataclasses
import inspect
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import _engine, _native, cli
from bpeforge._progress import native_progress
from bpeforge.options import ENGINE_NAMES, FILE_ONLY, NAMES, TrainOptions

# Flags of `bpeforge train` that are not training options: what to read,
# where to write, how to report, where to run.
CLI_ONLY = {"help", "inputs", "output", "progress", "quiet", "ray", "shard_mb", "counts", "vocab_sizes"}


def _defaults() -> dict:
    return {f.name: f.default for f in dataclasses.fields(TrainOptions)}


def _signature_defaults(fn) -> dict:
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_train_signature_is_the_option_list() -> None:
    sig = _signature_defaults(bpeforge.train)
    progress = sig.pop("progress")
    assert progress is True
    assert sig.pop("vocab_sizes") is None  # several sizes from one run: not an engine option
    assert sig == _defaults()


def test_train_from_iterator_signature_is_the_option_list_less_file_options() -> None:
    sig = _signature_defaults(bpeforge.train_from_iterator)
    sig.pop("progress")
    assert sig.pop("vocab_sizes") is None
    assert sig == {k: v for k, v in _defaults().items() if k not in FILE_ONLY}


@pytest.mark.parametrize("fn", [bpeforge.train, bpeforge.train_from_iterator])
def test_the_typed_overload_repeats_the_signature(fn) -> None:
    # The overload a call without vocab_sizes matches repeats the signature
    # (so every keyword stays typed): the same names, kinds and annotations.
    import typing

    if not hasattr(typing, "get_overloads"):
        pytest.skip("typing.get_overloads needs Python 3.11")
    first = inspect.signature(typing.get_overloads(fn)[0])
    real = inspect.signature(fn)
    assert [(p.name, p.kind, p.annotation) for p in first.parameters.values()] == \
        [(p.name, p.kind, p.annotation if p.name != "vocab_sizes" else "None") for p in real.parameters.values()]


def test_engine_takes_the_same_option_names() -> None:
    assert sorted(_native.train_option_names()) == sorted(ENGINE_NAMES)
    assert sorted(TrainOptions().engine_args()) == sorted(ENGINE_NAMES)
    # The columns of Parquet/Arrow input are read in Python (pyarrow).
    assert set(NAMES) - set(ENGINE_NAMES) == {"text_column", "lang_column"}


def test_every_option_is_documented_in_train() -> None:
    doc = bpeforge.train.__doc__ or ""
    for name in NAMES:
        assert f"        {name}: " in doc, name


# Each bad value with the rule its error states. Types and forms are Python's
# (what the engine's typed record needs); every rule about a value is the
# engine's, checked once, when the options are made.
@pytest.mark.parametrize("bad, rule", [
    ({"vocab_size": 0}, "must be a positive integer"), ({"vocab_size": -5}, "must not be negative"),
    ({"vocab_size": True}, "must be an integer"), ({"vocab_size": "32x"}, "must be an integer or a count"),
    ({"vocab_size": 255}, "below the base vocabulary.*at least 256"),
    ({"min_frequency": -1}, "must not be negative"), ({"max_token_length": 0}, "at least 1"),
    ({"threads": 0}, "at least 1"), ({"min_word_count": 0}, "must be a positive integer"),
    ({"checkpoint_every": 0}, "must be a positive integer"),
    ({"superbpe_transition": 0}, "must be a positive integer"), ({"superbpe_max_words": -1}, "must not be negative"),
    ({"temperature": 0.0}, "must be a positive number"), ({"temperature": float("nan")}, "must be a positive number"),
    ({"max_premium": 1.0}, "must be a number above 1"), ({"max_premium": float("inf")}, "must be a number above 1"),
    ({"balance_rounds": 21}, "from 0 to 20"), ({"premium_reference": " "}, "must be a language tag"),
    ({"balance_min_lines": -1}, "must not be negative"), ({"balance_max_lift": 0.5}, "from 1 to 1024"),
    ({"balance_held_apart": 0.6}, "from 0 to 0.5"), ({"balance_held_apart": -0.1}, "from 0 to 0.5"),
    ({"columns": [0]}, "counted from 1"), ({"columns": []}, "counted from 1"), ({"columns": [-1]}, "not be negative"),
    ({"on_bad_record": "ignore"}, '"error" or "skip"'), ({"text_field": " "}, "non-empty keys"),
    ({"lang_field": " "}, "must name a field or column"),
    ({"special_tokens": "<s>"}, "not one string"), ({"special_tokens": [1]}, "must be strings"),
    ({"file_languages": "en"}, "not one string"), ({"langs": []}, "is empty"),
    ({"resume_from": 3}, "a Tokenizer, a model path or None"), ({"character_coverage": "all"}, "must be a number"),
    ({"max_memory": "0"}, "positive number of bytes"), ({"max_memory": "-1G"}, "memory size"),
    ({"max_memory": "lots"}, "memory size"), ({"max_memory": 0}, "positive number of bytes"),
    ({"max_memory": -5}, "must not be negative"), ({"max_memory": 1.5}, "memory size"),
    ({"max_memory": "8X"}, "memory size"), ({"max_memory": True}, "memory size"),
])
def test_bad_values_are_parameter_errors_naming_the_option_and_the_rule(bad, rule) -> None:
    name = next(iter(bad))
    with pytest.raises(bpeforge.ParameterError, match=f"{name}.*{rule}"):
        TrainOptions(**bad)


def test_options_pickle_without_their_settings_and_make_them_again() -> None:
    import pickle

    opts = TrainOptions(vocab_size=300, special_tokens=["<s>"])
    copy = pickle.loads(pickle.dumps(opts))
    assert copy == opts and "_settings" not in pickle.loads(pickle.dumps(opts)).__dict__
    assert copy.settings().memory_budget == opts.settings().memory_budget


def test_a_resumed_model_file_is_read_once_when_the_options_are_made(tmp_path) -> None:
    model = tmp_path / "m.json"
    bpeforge.train_from_iterator(["hello world"] * 20, vocab_size=260, progress=False).save(model)
    opts = TrainOptions(resume_from=model, vocab_size=270)
    model.unlink()  # what follows must not read it again
    assert opts.settings() is opts.settings()
    # An Arrow run's settings (their own columns) take the model already read.
    opts.settings(text_field=None, on_bad_record="error", lang_field=None)


@pytest.mark.parametrize("text, expected", [("8G", 8 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29),
                                            ("2gb", 2 * 10**9), (4096, 4096), ("100", 100), (None, None)])
def test_memory_sizes_are_read_as_bytes(text, expected) -> None:
    assert TrainOptions(max_memory=text).engine_args()["max_memory"] == expected


def test_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="vocab_sise"):
        TrainOptions(vocab_sise=10)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        bpeforge.train(bpeforge.sample_corpus(), vocab_sise=10)  # type: ignore[call-arg]


# ---- the command line: every option reaches the engine ------------------------


class _Reached(Exception):
    """Raised by the stand-in engine entry point once it has the options."""


@pytest.fixture()
def samples(tmp_path) -> dict[str, tuple[list[str], object]]:
    """For every option: `bpeforge train` flags setting it to a value other
    than its default, and the value the engine must then receive (the
    balancing settings come with the language file they need, so that a run
    on Ray really counts with them before it reaches the stand-in)."""
    model = tmp_path / "resume.json"
    bpeforge.train(bpeforge.sample_corpus(), vocab_size=270, progress=False).save(model)
    langs = tmp_path / "langs.txt"
    langs.write_text("en\n" * 1514, encoding="utf-8")
    out = str(tmp_path / "out.json")
    csv = str(tmp_path / "progress.csv")
    # Language tags are refused without a balancing: they come with one.
    balanced = ["--langs", str(langs), "--temperature", "2"]
    return {
        "vocab_size": (["--vocab-size", "300"], 300),
        "scheme": (["--scheme", "chars"], "chars"),
        "pretokenizer": (["--pretokenizer", "cl100k"], "cl100k"),
        "special_tokens": (["--special-token", "<s>", "--special-token", "</s>"], ["<s>", "</s>"]),
        "min_frequency": (["--min-frequency", "5"], 5),
        "max_token_length": (["--max-token-length", "9"], 9),
        "threads": (["--threads", "1"], 1),
        "character_coverage": (["--character-coverage", "0.99"], 0.99),
        "end_of_word_suffix": (["--end-of-word-suffix", "</w>"], "</w>"),
        "unk_token": (["--unk-token", "<UNK>"], "<UNK>"),
        "byte_fallback": (["--scheme", "chars", "--byte-fallback"], True),
        "fuse_unk": (["--scheme", "chars", "--fuse-unk"], True),
        "normalizer": (["--scheme", "chars", "--normalizer", "nmt_nfkc"],
                       bpeforge._normalizers.check_normalizer("nmt_nfkc")),
        "documents": (["--documents"], True),
        "separator": (["--separator", "|||"], "|||"),
        "text_field": (["--text-field", "text"], "text"),
        "columns": (["--columns", "1"], [1]),
        "on_bad_record": (["--columns", "1", "--on-bad-record", "skip"], "skip"),
        "min_word_count": (["--min-word-count", "3"], 3),
        "resume_from": (["--resume", str(model)], str(model)),  # a path: the engine reads it, once
        "checkpoint_path": (["--checkpoint-every", "7", "--output", out], out),
        "checkpoint_every": (["--checkpoint-every", "7", "--output", out], 7),
        "superbpe_transition": (["--superbpe-transition", "280"], 280),
        "superbpe_max_words": (["--superbpe-max-words", "2"], 2),
        "superbpe_colon_rule": (["--no-superbpe-colon-rule"], False),
        "langs": (balanced, [str(langs)]),
        "file_languages": (["--file-language", "en", "--temperature", "2"], ["en"]),
        "lang_field": (["--text-field", "text", "--lang-field", "lang", "--temperature", "2"], "lang"),
        "temperature": (["--temperature", "2", "--langs", str(langs)], 2.0),
        "max_premium": (["--max-premium", "1.3", "--langs", str(langs), "--temperature", "2"], 1.3),
        "balance_rounds": (["--balance-rounds", "2", *balanced], 2),
        "premium_reference": (["--premium-reference", "en", *balanced], "en"),
        "balance_min_lines": (["--balance-min-lines", "10", *balanced], 10),
        "balance_max_lift": (["--balance-max-lift", "4", *balanced], 4.0),
        "balance_held_apart": (["--balance-held-apart", "0.25", *balanced], 0.25),
        "progress_csv": (["--progress-csv", csv], csv),
        "max_memory": (["--max-memory", "1.5GiB"], 3 << 29),
    }


def test_samples_cover_every_option(samples) -> None:
    assert set(samples) == set(ENGINE_NAMES)


def test_every_train_flag_is_an_option_or_a_known_cli_flag() -> None:
    parser = cli.build_parser()
    (train_parser,) = [p for a in parser._subparsers._group_actions  # type: ignore[union-attr]
                       for name, p in a.choices.items() if name == "train"]
    dests = {a.dest for a in train_parser._actions}
    assert dests - CLI_ONLY <= set(NAMES)
    # Every option has a flag, except the checkpoint path (--output with --checkpoint-every).
    assert set(NAMES) - dests == {"checkpoint_path"}


@pytest.fixture
def json_sample(tmp_path) -> str:
    """The sample corpus as JSON lines (``{"text": ..., "lang": ...}``), for
    --text-field and --lang-field."""
    import json

    path = tmp_path / "sample.jsonl"
    lines = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()
    path.write_text("".join(json.dumps({"text": t, "lang": "en"}) + "\n" for t in lines), encoding="utf-8")
    return str(path)


def _input_for(name: str, json_sample: str) -> str:
    return json_sample if name in ("text_field", "lang_field") else str(bpeforge.sample_corpus())


def _run_cli(argv: list[str], monkeypatch, entry: str, corpus: str | None = None) -> dict:
    """The engine's options (by name) in the settings that reach ``entry``."""
    import dataclasses

    seen: dict = {}
    records: dict = {}
    real = _engine.train_settings

    def settings(record, *more):
        made = real(record, *more)
        records[id(made)] = (made, dataclasses.asdict(record))
        return made

    def stand_in(*args, **kwargs):
        seen.update(next(records[id(a)][1] for a in args if id(a) in records))
        raise _Reached

    monkeypatch.setattr(_engine, "train_settings", settings)
    monkeypatch.setattr(_engine, entry, stand_in)
    with pytest.raises(_Reached):
        cli.main(["train", corpus or str(bpeforge.sample_corpus()), "--quiet", *argv])
    return seen


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_cli_option_reaches_the_engine(name, samples, monkeypatch) -> None:
    flags, expected = samples[name]
    engine = _run_cli(flags, monkeypatch, "train_files")
    assert engine[name] == expected
    # and nothing changed that the flags did not ask for
    defaults = TrainOptions().engine_args()
    assert {k for k in ENGINE_NAMES if engine[k] != defaults[k]} == \
        {k for k, (f, _) in samples.items() if set(f) <= set(flags)} | COMPANIONS.get(name, set())


#: Options a sample sets besides its own that no other sample's flags name alone.
COMPANIONS = {"file_languages": {"temperature"}, "lang_field": {"temperature"}}


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_cli_option_reaches_the_engine_with_ray(name, samples, json_sample, monkeypatch,
                                                ray_instance) -> None:
    flags, expected = samples[name]
    argv = [*flags, "--ray", "--shard-mb", "0.1"]
    engine = _run_cli(argv, monkeypatch, "train_count_sum", _input_for(name, json_sample))
    assert engine[name] == expected


def test_ray_takes_every_option_and_checks_them_first(ray_instance) -> None:
    from bpeforge import distributed

    # Cross-option rules are the engine's, checked on the driver before any task.
    with pytest.raises(bpeforge.ParameterError, match="max_premium needs langs"):
        distributed.train([bpeforge.sample_corpus()], progress=False, max_premium=1.3)
    with pytest.raises(bpeforge.ParameterError, match="lang_field.*needs text_field"):
        distributed.train([bpeforge.sample_corpus()], progress=False, lang_field="lang", temperature=2.0)


# ---- pre-tokenizers: exact preset names, explicit regexes, nothing lost ----------


@pytest.mark.parametrize("name, guess", [("GPT2", "gpt2"), ("O200K_BASE", "o200k"), ("cl100k-base", "cl100k"),
                                         ("ws", "whitespace"), ("Whitespace", "whitespace"), ("o200", "o200k")])
def test_near_miss_preset_names_are_refused_with_a_suggestion(name, guess) -> None:
    with pytest.raises(bpeforge.ParameterError, match=f"did you mean pretokenizer='{guess}'"):
        TrainOptions(pretokenizer=name)
    with pytest.raises(bpeforge.ParameterError, match="bpeforge.Regex"):
        bpeforge.pretokenize("text", name)


@pytest.mark.parametrize("alias, name", [(a, p["name"]) for p in _engine.PRESETS for a in p["aliases"]])
def test_a_preset_alias_is_taken_as_the_engine_takes_it(alias, name) -> None:
    """Python takes each alias of the engine's table where the engine does,
    as the same preset (never refused by one and taken by the other)."""
    assert TrainOptions(pretokenizer=alias).engine_args()["pretokenizer"] == name
    texts = ["It's 2024: naïve café, ЖЖ 12345!\n", "  a  \t b\r\n"] * 50
    assert _native.pretokenize(texts[0], alias) == _native.pretokenize(texts[0], name)  # the engine takes it too
    by_alias = bpeforge.train_from_iterator(texts, pretokenizer=alias, vocab_size=300, progress=False)
    by_name = bpeforge.train_from_iterator(texts, pretokenizer=name, vocab_size=300, progress=False)
    assert by_alias.pretokenizer == name and by_alias.merges == by_name.merges
    assert by_alias.encode(texts[0]) == by_name.encode(texts[0]) and by_alias.decode(by_alias.encode(texts[0])) == texts[0]
    assert bpeforge.pretokenize(texts[0], alias) == bpeforge.pretokenize(texts[0], name)
    with pytest.raises(bpeforge.ParameterError, match=f"is a preset's name: pass pretokenizer='{name}'"):
        bpeforge.Regex(alias)


def test_o200k_base_is_taken_on_the_command_line_too(tmp_path) -> None:
    assert cli.main(["train", str(bpeforge.sample_corpus()), "--pretokenizer", "o200k_base", "--vocab-size", "300",
                     "-q", "-o", str(tmp_path / "m.json")]) == 0
    assert bpeforge.load(tmp_path / "m.json").pretokenizer == "o200k"


def test_cli_refuses_a_near_miss_and_takes_a_pattern(tmp_path, capsys) -> None:
    assert cli.main(["train", str(bpeforge.sample_corpus()), "--pretokenizer", "GPT2", "-q", "-o",
                     str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err
    # The command line's syntax, not Python's.
    assert "did you mean --pretokenizer 'gpt2'? a custom regex is given as --pattern 'GPT2'" in err, err
    assert "Regex(" not in err and "pretokenizer=" not in err
    assert not (tmp_path / "m.json").exists()
    assert cli.main(["train", str(bpeforge.sample_corpus()), "--pattern", r"\p{L}+", "--vocab-size", "300", "-q",
                     "-o", str(tmp_path / "m.json")]) == 0
    tok = bpeforge.load(tmp_path / "m.json")
    assert tok.pretokenizer == r"\p{L}+"
    assert tok.decode(tok.encode("hello world news, 2026!")) == "hello world news, 2026!"


@pytest.fixture(scope="module")
def sparse_regex_tok() -> bpeforge.Tokenizer:
    # A regex that matches almost nothing: every byte must still come back.
    return bpeforge.train(bpeforge.sample_corpus(), pretokenizer=bpeforge.Regex(r"qz+"), vocab_size=400,
                          progress=False)


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_a_custom_regex_that_covers_nothing_still_round_trips(sparse_regex_tok, text) -> None:
    assert sparse_regex_tok.decode(sparse_regex_tok.encode_ordinary(text)) == text


def test_regex_equal_to_a_preset_name_is_refused() -> None:
    with pytest.raises(bpeforge.ParameterError, match="preset"):
        bpeforge.Regex("gpt2")


def test_the_engines_table_has_tiktokens_names() -> None:
    aliases = {(alias, p["name"]) for p in _engine.PRESETS for alias in p["aliases"]}
    assert aliases >= {("r50k_base", "gpt2"), ("p50k_base", "gpt2"), ("cl100k_base", "cl100k"), ("o200k_base", "o200k")}
    assert all(_engine.preset_name(alias) == name for alias, name in aliases)


def test_a_regex_crosses_to_the_engine_as_a_regex() -> None:
    """The engine takes a tagged value: a preset's name, or {"regex": ...};
    a regex spelled like a preset's name stays a regex, and a bare string
    that names no preset is refused, never taken for a regex."""
    text = "x cl100k_base y"
    assert _engine.pretokenize(text, {"regex": "cl100k_base"}) == ["x ", "cl100k_base", " y"]
    assert _engine.pretokenize(text, "cl100k_base") == _engine.pretokenize(text, "cl100k")
    with pytest.raises(bpeforge.ParameterError, match=r"is not a preset .*\{\"regex\""):
        _engine.pretokenize(text, r"\w+")
    engine = TrainOptions(vocab_size=270).engine_options(pretokenizer={"regex": "cl100k_base"})
    tok = bpeforge.Tokenizer(_engine.train_iterator(iter([text] * 20), _engine.train_settings(engine), native_progress(False)))
    assert tok.pretokenizer == "cl100k_base"
    assert json.loads(tok.to_json())["pretokenizer"] == {"type": "regex", "pattern": "cl100k_base", "isolated": True}
    with pytest.raises(bpeforge.ParameterError, match="pretokenizer.*is not a preset"):
        _engine.train_settings(TrainOptions().engine_options(pretokenizer=r"\w+"))
    assert TrainOptions(pretokenizer=bpeforge.Regex(r"\w+")).engine_args()["pretokenizer"] == {"regex": r"\w+"}
