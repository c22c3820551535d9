"""WikiText-2 prompts for the case study: the standard files, a word-level vocabulary, and sentence prompts.

The vocabulary is built as the classic PyTorch word-language-model example builds it: every line split on
whitespace plus an ``<eos>`` word, ids in order of first appearance, over the files present (valid, then test).
The text itself is never shipped with roofline; the user points at it with ``--data`` or ``$ROOFLINE_DATA``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from roofline.errors import RooflineError

SPLITS = ("valid.txt", "test.txt")
EOS = "<eos>"
UNK = "<unk>"
HOW_TO_GET = (
    "get WikiText-2 (tokenized v1: wikitext-2-v1.zip from the Salesforce/Smerity release, or the data/wikitext-2 "
    "folder of pytorch/examples word_language_model), then pass --data DIR or set ROOFLINE_DATA=DIR, "
    "DIR holding test.txt and valid.txt"
)


@dataclass
class Vocabulary:
    word_to_id: dict[str, int] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)

    def add(self, word: str) -> int:
        if word not in self.word_to_id:
            self.word_to_id[word] = len(self.words)
            self.words.append(word)
        return self.word_to_id[word]

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, words: list[str]) -> list[int]:
        return [self.word_to_id[w] for w in words]

    def decode(self, ids: list[int]) -> list[str]:
        return [self.words[i] if 0 <= i < len(self.words) else f"<{i}>" for i in ids]


@dataclass
class WikiText:
    directory: Path
    vocab: Vocabulary
    lines: list[list[str]]

    @property
    def eos_id(self) -> int:
        return self.vocab.word_to_id[EOS]


def find_data_dir(data: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the WikiText-2 files: ``data``, else ``$ROOFLINE_DATA`` (it or its wikitext-2/)."""
    candidates: list[Path] = []
    for given in (data, os.environ.get("ROOFLINE_DATA")):
        if given:
            candidates += [Path(given), Path(given) / "wikitext-2"]
            break
    for candidate in candidates:
        if (candidate / "test.txt").is_file():
            return candidate
    where = f" in {candidates[0]}" if candidates else ""
    raise RooflineError(f"no WikiText-2 test.txt found{where}: {HOW_TO_GET}")


def load_wikitext(data: str | os.PathLike[str] | None = None) -> WikiText:
    directory = find_data_dir(data)
    vocab = Vocabulary()
    vocab.add(EOS)
    test_lines: list[list[str]] = []
    for split in SPLITS:
        path = directory / split
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RooflineError(f"cannot read {path}: {exc}") from None
        for line in text.splitlines():
            words = line.split() + [EOS]
            for word in words:
                vocab.add(word)
            if split == "test.txt":
                test_lines.append(words)
    return WikiText(directory, vocab, test_lines)


def sentence_prompts(corpus: WikiText, count: int, *, min_words: int = 4, max_words: int = 24) -> list[list[int]]:
    """The first sentence of each paragraph of test.txt (headings skipped), cut to ``max_words``: real prompts
    of different lengths, so a batch of them needs padding."""
    prompts: list[list[int]] = []
    for words in corpus.lines:
        if len(words) < min_words + 1 or words[0] == "=":
            continue
        body = words[:-1]
        end = body.index(".") + 1 if "." in body else len(body)
        sentence = body[: min(end, max_words)]
        if len(sentence) < min_words:
            continue
        prompts.append(corpus.vocab.encode(sentence))
        if len(prompts) == count:
            return prompts
    if not prompts:
        raise RooflineError(f"no prompts of {min_words}+ words in {corpus.directory / 'test.txt'}: {HOW_TO_GET}")
    return prompts


def passage_prompts(corpus: WikiText, count: int, *, min_words: int, max_words: int) -> list[list[int]]:
    """``count`` passages of running article text from test.txt, of lengths spread evenly over
    [min_words, max_words]: each starts at a paragraph and runs on through the next ones (headings skipped,
    ``<eos>`` between paragraphs as in the corpus) until it is long enough. Hundreds of words of real text make a
    prompt whose recomputation costs what it costs in practice; different lengths make a batch need padding."""
    if count < 1 or not 1 <= min_words <= max_words:
        raise RooflineError(f"passage prompts need count >= 1 and 1 <= min_words <= max_words, got {count}, "
                            f"{min_words}, {max_words}")
    step = (max_words - min_words) / max(count - 1, 1)
    targets = [round(min_words + i * step) for i in range(count)]
    paragraphs = [words for words in corpus.lines if len(words) > 1 and words[0] != "="]
    prompts: list[list[int]] = []
    start = 0
    for target in targets:
        passage: list[str] = []
        while len(passage) < target and start < len(paragraphs):
            passage += paragraphs[start]
            start += 1
        if len(passage) < target:
            break
        prompts.append(corpus.vocab.encode(passage[:target]))
    if len(prompts) < count:
        raise RooflineError(f"{corpus.directory / 'test.txt'} holds too little text for {count} prompts of "
                            f"{min_words}-{max_words} words: {HOW_TO_GET}")
    return prompts
