"""Writes python/bpeforge/data/nmt_nfkc.charsmap: SentencePiece's precompiled
``nmt_nfkc`` normalization table, so that bpeforge can train and encode with
SentencePiece's default normalizer without needing ``sentencepiece`` at run
time.

Where the bytes come from: the table is compiled into the ``sentencepiece``
library (google/sentencepiece, src/normalization_rule.h, Apache License 2.0;
see NOTICE). This script trains a tiny BPE model with
``normalization_rule_name="nmt_nfkc"`` using the real ``sentencepiece`` and
copies ``normalizer_spec.precompiled_charsmap`` out of it, checking that it is
the same blob as the library's stand-alone normalizer gives. Run it once
after upgrading sentencepiece:

    python tools/make_nmt_nfkc_charsmap.py
"""

from __future__ import annotations

import hashlib
import pathlib
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

OUT = pathlib.Path(__file__).resolve().parent.parent / "python" / "bpeforge" / "data" / "nmt_nfkc.charsmap"


def charsmap_from_tiny_model() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        corpus = pathlib.Path(d) / "corpus.txt"
        corpus.write_text("a tiny corpus\nfor the normalizer table\n" * 20, encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=f"{d}/tiny", model_type="bpe", vocab_size=40,
                                       normalization_rule_name="nmt_nfkc", minloglevel=2)
        m = pb.ModelProto()
        m.ParseFromString((pathlib.Path(d) / "tiny.model").read_bytes())
    assert m.normalizer_spec.name == "nmt_nfkc"
    return bytes(m.normalizer_spec.precompiled_charsmap)


def main() -> None:
    blob = charsmap_from_tiny_model()
    spec = pb.NormalizerSpec()
    spec.ParseFromString(spm.SentencePieceNormalizer(rule_name="nmt_nfkc").serialized_normalizer_spec())
    assert bytes(spec.precompiled_charsmap) == blob, "the trained model's table differs from the library's"
    OUT.write_bytes(blob)
    print(f"{OUT}: {len(blob)} bytes, sha256 {hashlib.sha256(blob).hexdigest()} (sentencepiece {spm.__version__})")


if __name__ == "__main__":
    main()
