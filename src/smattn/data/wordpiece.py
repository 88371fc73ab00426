"""The bert-base-uncased WordPiece tokenizer, built from ``vocab.txt`` alone with the ``tokenizers`` library.

BERT basic tokenisation (clean text, lower-casing, accent stripping, CJK and punctuation splitting), greedy
longest-match WordPiece with ``##`` continuations ([UNK] for unmatchable words or words over 100
characters), then ``[CLS] ... [SEP]``. (``transformers`` 5's ``BertTokenizerFast(vocab_file=...)`` silently
builds a 5-token vocabulary; this builder does not depend on it.)
"""

from __future__ import annotations

from pathlib import Path

PAD_ID, UNK_ID, CLS_ID, SEP_ID = 0, 100, 101, 102


def read_vocab(path: str | Path) -> dict[str, int]:
    with open(path, encoding="utf-8") as fh:
        tokens = [line.rstrip("\n") for line in fh]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise ValueError(f"{path}: duplicate tokens in the vocabulary")
    for tok, idx in (("[PAD]", PAD_ID), ("[UNK]", UNK_ID), ("[CLS]", CLS_ID), ("[SEP]", SEP_ID)):
        if vocab.get(tok) != idx:
            raise ValueError(f"{path}: {tok} is not at index {idx}; not a bert-base-uncased vocabulary")
    return vocab


def make_tokenizer(vocab_path: str | Path, max_length: int | None = 32):
    """A ``tokenizers.Tokenizer`` equivalent to the hub's bert-base-uncased fast tokenizer.

    ``max_length``: truncate encodings (special tokens included) to this many ids; None disables truncation.
    Padding is left to the caller (the TREC pipeline pads per batch with id 0).
    """
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = read_vocab(vocab_path)
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", SEP_ID), ("[CLS]", CLS_ID))
    tok.decoder = decoders.WordPiece(prefix="##")
    if max_length is not None:
        tok.enable_truncation(max_length=max_length)
    return tok
