"""The `bpeforge` command line, run as a real subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import bpeforge


def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "bpeforge", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def test_train_without_input_uses_the_sample() -> None:
    proc = run("train", "--quiet")
    assert "bundled sample corpus" in proc.stderr
    assert "trained Tokenizer(scheme='bytes'" in proc.stdout
    assert "word types" in proc.stdout and "tokens:" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_sample_is_shipped_and_real_text() -> None:
    path = bpeforge.sample_corpus()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 1000
    assert len({line for line in lines}) == len(lines)
    assert (path.parent / "SAMPLE_SOURCES.md").exists()


def test_train_encode_decode_inspect(tmp_path) -> None:
    corpus = tmp_path / "c.txt"
    lines = ["the cat sat on the mat", "the dog sat on the log", "Привет мир", "emoji 😀 here", ""]
    corpus.write_text("\n".join(lines * 30) + "\n", encoding="utf-8")
    model = tmp_path / "m.json"
    proc = run("train", str(corpus), "--vocab-size", "300", "--output", str(model), "--special-token", "<s>", "--progress", "json")
    assert model.exists()
    events = [json.loads(l) for l in proc.stderr.splitlines() if l.startswith("{")]
    assert any(e.get("phase") == "counting" and e.get("finished") for e in events)
    assert any(e.get("phase") == "merging" and e.get("finished") for e in events)
    assert "saved to" in proc.stdout

    text = "\n".join(lines) + "\n"
    enc = run("encode", "--model", str(model), stdin=text)
    id_lines = enc.stdout.splitlines()
    assert len(id_lines) == len(lines)
    tok = bpeforge.load(model)
    for line, ids in zip(lines, id_lines):
        assert [int(x) for x in ids.split()] == tok.encode(line)

    dec = run("decode", "--model", str(model), stdin=enc.stdout)
    assert dec.stdout == text

    ids_file = tmp_path / "ids.txt"
    out_file = tmp_path / "out.txt"
    src = tmp_path / "src.txt"
    src.write_text(text, encoding="utf-8")
    run("encode", "--model", str(model), str(src), "--output", str(ids_file))
    run("decode", "--model", str(model), str(ids_file), "--output", str(out_file))
    assert out_file.read_text(encoding="utf-8") == text

    insp = run("inspect", str(model), "--merges", "5")
    assert "merges (rank, new id" in insp.stdout
    assert re.search(r"^ +0  <s>$", insp.stdout, re.M)  # the vocabulary lists the special token as id 0
    assert "pair count" in insp.stdout and "vocabulary (id, token)" in insp.stdout


def test_python_dash_m_and_console_script_agree() -> None:
    proc = run("--version")
    assert proc.stdout.startswith("bpeforge ")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["train", "/definitely/missing.txt", "--vocab-size", "300"], "missing.txt"),
        (["train", "--vocab-size", "10"], "--vocab-size"),
        (["encode", "--model", "/definitely/missing.json"], "missing.json"),
        (["inspect", "/definitely/missing.json"], "missing.json"),
    ],
)
def test_errors_are_one_line_without_traceback(args, needle) -> None:
    proc = run(*args, check=False)
    assert proc.returncode != 0
    err_lines = [l for l in proc.stderr.splitlines() if l.startswith("bpeforge: error:")]
    assert len(err_lines) == 1, proc.stderr
    assert needle in err_lines[0]
    assert "Traceback" not in proc.stderr


def test_corrupt_model_via_cli(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    proc = run("inspect", str(bad), check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("bpeforge: error:") and "bad.json" in proc.stderr


def test_decode_rejects_garbage_ids(tmp_path) -> None:
    model = tmp_path / "m.json"
    bpeforge.train_from_iterator(["hello world"] * 5, vocab_size=260, progress=False).save(model)
    proc = run("decode", "--model", str(model), stdin="1 2 x\n", check=False)
    assert proc.returncode == 1 and "line 1" in proc.stderr
    proc = run("decode", "--model", str(model), stdin="99999\n", check=False)
    assert proc.returncode == 1 and "outside the vocabulary" in proc.stderr


def test_encode_formats_via_cli(tmp_path) -> None:
    np = pytest.importorskip("numpy")
    model = tmp_path / "m.json"
    lines = ["hello world", "", "Привет мир 😀", "hello again world"] * 50
    tok = bpeforge.train_from_iterator(lines, vocab_size=300, progress=False)
    tok.save(model)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for fmt in ("npy", "bin", "ids"):
        out = tmp_path / f"out.{fmt}"
        proc = run("encode", "--model", str(model), str(src), "--output", str(out), "--format", fmt, "--quiet")
        assert proc.returncode == 0 and out.exists()
        if fmt == "ids":
            got = [[int(x) for x in line.split()] for line in out.read_text().splitlines()]
        else:
            ids = np.load(out) if fmt == "npy" else np.fromfile(out, dtype="<u2")
            off = np.load(str(out) + ".offsets.npy")
            got = [ids[off[i] : off[i + 1]].tolist() for i in range(len(off) - 1)]
        assert got == tok.encode_batch(lines)
    proc = run("encode", "--model", str(model), "--format", "npy", stdin="x\n", check=False)
    assert proc.returncode == 1 and "needs an --output file" in proc.stderr


def test_one_special_token_policy_on_every_path(tmp_path) -> None:
    """As Tokenizer.encode and tiktoken: special-token text is an error unless
    allowed, to stdout and to a file alike, naming the line."""
    model = tmp_path / "m.json"
    tok = bpeforge.train_from_iterator(["hello world"] * 5, vocab_size=260, special_tokens=["<s>"], progress=False)
    tok.save(model)
    src = tmp_path / "in.txt"
    src.write_text("hello\nworld\nhello <s> world\n", encoding="utf-8")
    out = tmp_path / "out.ids"
    for args, stdin in (([str(src), "--output", str(out)], None), ([str(src)], None), ([], src.read_text())):
        proc = run("encode", "--model", str(model), *args, "--quiet", stdin=stdin, check=False)
        assert proc.returncode == 1 and "<s>" in proc.stderr and "line 3" in proc.stderr, proc.stderr
        assert not out.exists()
    allowed = run("encode", "--model", str(model), str(src), "--allowed-special", "all").stdout.split("\n")[2]
    assert [int(x) for x in allowed.split()] == tok.encode("hello <s> world", allowed_special="all")
    plain = run("encode", "--model", str(model), str(src), "--disallowed-special", "none").stdout.split("\n")[2]
    assert [int(x) for x in plain.split()] == tok.encode_ordinary("hello <s> world")


@pytest.mark.parametrize("fmt", ["ids", "npy", "bin"])
def test_decode_reads_what_encode_writes(tmp_path, fmt) -> None:
    model = tmp_path / "m.json"
    bpeforge.train(bpeforge.sample_corpus(), vocab_size=400, progress=False).save(model)
    lines = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:50] + ["", "emoji 😀"]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ids = tmp_path / f"ids.{fmt}"
    run("encode", "--model", str(model), str(src), "--format", fmt, "--output", str(ids), "--quiet")
    assert run("decode", "--model", str(model), str(ids)).stdout == src.read_text(encoding="utf-8")


def test_invalid_utf8_names_its_line_on_every_path(tmp_path) -> None:
    model = tmp_path / "m.json"
    bpeforge.train(bpeforge.sample_corpus(), vocab_size=3000, scheme="chars", pretokenizer="whitespace",
                   character_coverage=0.995, progress=False).save(model)
    src = tmp_path / "bad.txt"
    src.write_bytes(b"ok\n" * 5 + b"bad \xff here\n" + b"ok\n")
    # A chars-scheme model has no ids for bytes that are not UTF-8: refused
    # (as training refuses them), never encoded as U+FFFD.
    for args, stdin, name in (([str(src)], None, "bad.txt"), ([str(src), "-o", str(tmp_path / "o.ids")], None, "bad.txt"),
                              ([], src.read_bytes().decode("latin-1"), "<stdin>")):
        proc = subprocess.run([sys.executable, "-m", "bpeforge", "encode", "--model", str(model), *args, "--quiet"],
                              input=stdin.encode("latin-1") if stdin else None, capture_output=True, timeout=300)
        message = proc.stderr.decode()
        assert proc.returncode == 1 and proc.stdout == b"" and not (tmp_path / "o.ids").exists(), message
        assert f"{name}, line 6: invalid UTF-8 (byte 0xff at byte 5 of the line)" in message, message
        assert "Traceback" not in message
    with pytest.raises(bpeforge.InputError, match=r"bad\.txt, line 6: invalid UTF-8"):
        bpeforge.load(model).encode_file(src, tmp_path / "o.ids")


def test_export_chat_template_and_role_flags(tmp_path) -> None:
    """`bpeforge export --to huggingface` takes what to_huggingface takes: the
    role flags, --no-* to leave a role out, and --chat-template (a built-in or
    a file); transformers' apply_chat_template then gives bpeforge's ids."""
    transformers = pytest.importorskip("transformers")
    lines = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()
    tok = bpeforge.train_from_iterator(lines, vocab_size=800, special_tokens=["<|endoftext|>", "<|im_start|>",
                                                                              "<|im_end|>"], progress=False)
    model = tmp_path / "chat.json"
    tok.save(model)
    out = tmp_path / "hf"
    run("export", "-m", str(model), "--to", "huggingface", "-o", str(out), "--chat-template", "chatml",
        "--eos-token", "<|im_end|>", "--no-pad-token", "--quiet")
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["eos_token"] == "<|im_end|>" and config["bos_token"] == "<|endoftext|>" and "pad_token" not in config
    auto = transformers.AutoTokenizer.from_pretrained(out)
    conversation = [{"role": "system", "content": lines[0]}, {"role": "user", "content": lines[1]}]
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in conversation)
    ids = auto.apply_chat_template(conversation, tokenize=True)["input_ids"]
    assert ids == tok.encode(text, allowed_special="all") and ids.count(tok.token_to_id("<|im_start|>")) == 2
    assert auto.decode(ids) == tok.decode(ids) == text
    template = tmp_path / "plain.jinja"
    template.write_text("{% for m in messages %}{{ m['content'] }}<|endoftext|>{% endfor %}", encoding="utf-8")
    run("export", "-m", str(model), "--to", "huggingface", "-o", str(out), "--chat-template", str(template), "-q")
    auto = transformers.AutoTokenizer.from_pretrained(out)
    assert auto.apply_chat_template(conversation, tokenize=True)["input_ids"] == \
        tok.encode(f"{lines[0]}<|endoftext|>{lines[1]}<|endoftext|>", allowed_special="all")


@pytest.mark.parametrize("args, needle", [
    (["--bos-token", "<s>"], "--bos-token '<s>' is not a special token"),
    (["--eos-token", "<|im_end|>"], "--special-token '<|im_end|>'"),
    (["--chat-template", "chatml"], "--special-token '<|im_start|>' --special-token '<|im_end|>'"),
    (["--chat-template", "missing.jinja"], "--chat-template missing.jinja: cannot read it"),
    (["--to", "tiktoken", "--pad-token", "<|endoftext|>", "--no-eos-token"],
     "--no-eos-token, --pad-token: only for --to huggingface"),
    (["-o", "OUT/mine.json", "--unk-token", "<|endoftext|>"], "--unk-token '<|endoftext|>': "),
])
def test_export_refuses_roles_and_templates_naming_the_flag(tmp_path, args, needle) -> None:
    model = tmp_path / "m.json"
    bpeforge.train(bpeforge.sample_corpus(), vocab_size=300, special_tokens=["<|endoftext|>"],
                   progress=False).save(model)
    args = [a.replace("OUT", str(tmp_path)) for a in args]
    to = [] if "--to" in args else ["--to", "huggingface"]
    out = [] if "-o" in args else ["-o", str(tmp_path / "out")]
    proc = run("export", "-m", str(model), *to, *out, *args, check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # nothing written
