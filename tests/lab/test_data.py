import pytest

from roofline.errors import RooflineError
from roofline.lab.data import EOS, find_data_dir, load_wikitext, sentence_prompts


def test_vocabulary_is_built_like_the_word_language_model_example(wikitext_dir):
    corpus = load_wikitext(wikitext_dir)
    assert corpus.vocab.words[corpus.eos_id] == EOS
    assert len(corpus.vocab) > 2_000
    first_words = corpus.vocab.words[:4]
    assert first_words[0] == EOS and "=" in first_words
    assert all(line[-1] == EOS for line in corpus.lines)


def test_prompts_are_real_sentences_of_different_lengths(wikitext_dir):
    corpus = load_wikitext(wikitext_dir)
    prompts = sentence_prompts(corpus, 8, max_words=20)
    assert len(prompts) == 8
    assert len({len(p) for p in prompts}) > 1
    assert all(4 <= len(p) <= 20 for p in prompts)
    words = corpus.vocab.decode(prompts[0])
    assert words[0] != "=" and EOS not in words


def test_environment_variable_points_at_the_data(wikitext_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_DATA", str(wikitext_dir))
    assert find_data_dir(None) == wikitext_dir
    (tmp_path / "wikitext-2").symlink_to(wikitext_dir)
    monkeypatch.setenv("ROOFLINE_DATA", str(tmp_path))
    assert find_data_dir(None) == tmp_path / "wikitext-2"


def test_missing_data_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv("ROOFLINE_DATA", raising=False)
    with pytest.raises(RooflineError, match="ROOFLINE_DATA"):
        load_wikitext(None)
    with pytest.raises(RooflineError, match="--data"):
        load_wikitext(tmp_path)


def test_passages_are_hundreds_of_words_of_running_text_of_spread_lengths(wikitext_dir):
    from roofline.lab.data import passage_prompts

    corpus = load_wikitext(wikitext_dir)
    prompts = passage_prompts(corpus, 4, min_words=200, max_words=320)
    assert [len(p) for p in prompts] == [200, 240, 280, 320]
    words = corpus.vocab.decode(prompts[0])
    assert words[0] != "=" and "=" not in words[:3]
    assert corpus.vocab.decode(prompts[1])[:5] != words[:5]
    with pytest.raises(RooflineError, match="too little text"):
        passage_prompts(corpus, 10_000, min_words=500, max_words=600)
