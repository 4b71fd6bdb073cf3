"""fusor's C++ tokenizer against Hugging Face `tokenizers` (issue #16).

Byte-level BPE tokenizers are trained here with `tokenizers` on a small mixed corpus (English,
code, CJK, emoji, accents, numbers, whitespace runs), in four pre-tokenizer styles (GPT-2's
ByteLevel split, with and without a prefix space, Llama 3's Split regex, and a Sequence using
every Split behavior), then fusor's
encode, decode and streaming decode (`fusor tokenize --file`) must give what HF gives on a few
hundred strings, most of them not in the corpus.
"""
import json
import random

import pytest
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from conftest import MODELS, run_fusor

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's a truth universally acknowledged that we'll see.",
    "Tokenizers split text into pieces; byte-level BPE never needs an unknown token, because every "
    "byte has a symbol of its own. They're fast, and they've been used since GPT-2.",
    "def tokenize(text: str) -> list[int]:\n    return [ord(c) for c in text if c != '\\n']\n\n"
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // 4-space indent\n\tif (x) {\r\n\t\treturn y;\r\n\t}\n",
    "Café, naïve, résumé, Ångström, São Paulo, Zürich, façade, coöperate, Straße, Ελληνικά, русский язык.",
    "日本語のテキストを分割します。東京は大きな都市です。中文分词是一个有趣的问题。한국어 문장도 있습니다.",
    "Emoji: 😀 😃 🎉 🚀 👍🏽 👨‍👩‍👧‍👦 🇯🇵 ❤️ — and symbols ™ © ® € £ ¥ ± × ÷ → ⇒ ∑ ∞.",
    "Numbers: 3.14159, 2718281828, 1,000,000, 42nd, 1e-9, 0x1F600, 2024-12-02 12:34:56, +1 (555) 010-9999.",
    "Whitespace   runs    here\t\ttabs\n\n\nnewlines     and trailing spaces   \n  leading again",
    "<|im_start|>user\nHello there!<|im_end|>\n<|im_start|>assistant\nHi! How can I help?<|im_end|>",
    "An inference server batches requests per traffic class, keeps the latency percentiles under their "
    "targets, and reports throughput per machine. Operators compare configurations side by side, measure "
    "ratios instead of absolute times, and roll back any optimization that changes the numbers.",
    "class Batcher:\n    def __init__(self, window_ms=2.0, max_batch=32):\n        self.window_ms = window_ms\n"
    "        self.queue = collections.deque()\n\n    async def submit(self, request):\n"
    "        future = asyncio.get_running_loop().create_future()\n        self.queue.append((request, future))\n"
    "        return await future\n",
    "#include <vector>\ntemplate <typename T>\nstd::vector<T> prefix_sums(const std::vector<T>& xs) {\n"
    "  std::vector<T> out(xs.size());\n  T running{};\n  for (size_t i = 0; i < xs.size(); ++i) out[i] = running += xs[i];\n"
    "  return out;\n}\n",
    "Le petit prince regardait les étoiles. Él dijo: «¿Dónde está la biblioteca?» Der Müller mahlt das Korn. "
    "Og ærøskøbing ligger på Ærø. Çok güzel bir gün. Dziękuję bardzo, świetnie!",
    "机器学习模型的推理需要大量的计算资源。我们通过融合算子来减少内存访问。この方法は速度を向上させます。"
    "서버는 요청을 묶어서 처리합니다. 每秒处理的请求数量是一个重要的指标。",
    "Prices rose 12.5% in 2023, from $1,299.99 to $1,462.49; the index hit 4,783.35 on 12/29/2023 at 16:00 EST. "
    "Call 1-800-555-0199 or visit room 221B. Pi is 3.14159265358979323846.",
    "JSON: {\"name\": \"fusor\", \"version\": \"0.1.0\", \"ops\": [\"MatMul\", \"Softmax\", \"LayerNormalization\"], "
    "\"enabled\": true, \"threshold\": 1e-5}\nYAML:\n  fusion:\n    attention: on\n    gemm_epilogue: off\n",
] * 3

# Not in the corpus, one or more of each awkward kind.
FIXED = [
    "", " ", "  ", "\n", "\r\n", "\t", " \t \n ", "a", " a", "  leading spaces", "trailing spaces   ",
    "Hello, world!", "HELLO WORLD", "don't", "DON'T", "I'M", "they'll've", "x'S'T", "'s's",
    "12345678901234567890", "3.14 is pi; 6.022e23 is Avogadro", "٣٤٥ ١٢ (Arabic-Indic digits)", "Ⅻ ½ ²",
    "Ünïcödé àçcéñts", "e\u0301 vs \u00e9 (combining acute vs precomposed)", "a\u0308\u0301\u0323 stacked marks",
    "Z\u0351\u0363\u0364a\u0336\u0316l\u0334\u035cg\u0338o", "한글 자모: \u1100\u1161\u11a8", "ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ",
    "中文，标点。「引号」", "ひらがな カタカナ 漢字", "Ελληνικά και Кириллица", "עברית וערבית: مرحبا بالعالم",
    "हिन्दी देवनागरी", "ไทย ภาษา", "😀", "🇯🇵🇺🇸", "👨‍👩‍👧‍👦 family", "👍🏽👍🏿", "❤️‍🔥", "🧑🏻‍💻 coding",
    "emoji😀glued🎉to😃words", "tab\tseparated\tvalues\n1\t2\t3", "line1\r\nline2\r\n\r\nline4",
    "v\x0bt\x0cf\x1cs\x85n\u1680o\u2000e\u202fm\u205fi\ufeffb (whitespace kinds)", "\u2160\u3007\U0001d7ce numerals",
    "nbsp\u00a0here", "ideographic\u3000space", "line\u2028separator", "zero\u200bwidth", "soft\u00adhyphen",
    "x" * 300, "ab" * 100, " " * 50 + "x", "\n" * 10, "😀" * 20,
    "<|endoftext|>", "hi<|endoftext|>there", "<|im_start|>system\nbe brief<|im_end|>",
    "<|endoftext|><|endoftext|>", "x  <sep>  y", "<sep>", " <sep>\n", "a--b----c", "--", "text <mask> more", "text<mask>more", "a fusor b", "afusorb", "fusor",
    "def f(x):\n    return x ** 2  # square\n", "if (a && b || !c) { return; }", "SELECT * FROM t WHERE id=42;",
    "https://example.com/path?q=1&r=two#frag", "user@example.org", "C:\\Windows\\System32", "~/.bashrc && ls -la",
    "$$\\sum_{i=1}^{n} i^2$$", "<html><body class=\"x\">ok</body></html>", "{\"key\": [1, 2, {\"n\": null}]}",
]

FRAGMENTS = [
    "the", " The", "quick", " brown", "fox", "'s", "'ll", "n't", "DON'T", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n",
    "0", "7", "42", "1234567", "3.14", "1,000", "2024-12-02", "Café", "naïve", "e\u0301", "Straße", "日本", "語",
    "中文", "分词", "한국어", "テキスト", "😀", "🎉", "👍🏽", "🇯🇵", "👨‍👩‍👧", "→", "€", "∞", "©", ".", ",", "!", "?",
    "...", "--", "()", "[]", "{}", "::", "->", "==", "#", "@", "_", "__init__", "self.x", "return", "<|endoftext|>",
    "<|im_start|>", "<|im_end|>", "<mask>", "<sep>", "--", "fusor", "xyzzy", "Quux", "ünïcödé", "ЖЖЖ", "ααα", "\u00a0", "\u3000",
]


def generated(n, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12))) for _ in range(n)]


LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def train(style):
    tok = Tokenizer(models.BPE())
    if style == "split_behaviors":  # every Split behavior, a literal pattern, and invert
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split("--", behavior="removed"),
            pre_tokenizers.Split(Regex(r"\s+"), behavior="merged_with_next"),
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="contiguous"),
            pre_tokenizers.Split(Regex(r"[.,;:!?]"), behavior="merged_with_previous"),
            pre_tokenizers.Split(Regex(r"[\p{L}\p{M}\s]+"), behavior="merged_with_previous", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)])
    elif style == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=style == "gpt2_prefix_space")
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    if style == "gpt2":
        tok.post_processor = processors.ByteLevel(trim_offsets=True)
    else:  # a BOS before every sequence, as Llama's template adds it
        tok.post_processor = processors.TemplateProcessing(
            single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", tok.token_to_id("<|endoftext|>"))])
    # Added tokens past the trained vocabulary: one matched as a whole word only, one that eats
    # the whitespace before it.
    tok.add_tokens([AddedToken("fusor", single_word=True), AddedToken("<mask>", lstrip=True, special=False),
                    AddedToken("<sep>", lstrip=True, rstrip=True, normalized=False)])
    return tok


@pytest.fixture(scope="module", params=["gpt2", "gpt2_prefix_space", "llama3", "split_behaviors"])
def trained(request, tmp_path_factory):
    tok = train(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    tok.save(str(folder / "tokenizer.json"))
    assert 1000 <= tok.get_vocab_size() <= 4000
    return tok, folder


def fusor_lines(folder, requests, *flags):
    path = folder / "requests.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests), encoding="utf-8")
    r = run_fusor("tokenize", folder, "--file", path, *flags)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")[:-1]  # not splitlines(): U+2028 and U+0085 stay inside a JSON line
    assert len(lines) == len(requests)
    return [json.loads(line) for line in lines]


TEXTS = FIXED + generated(200, seed=16)


@pytest.mark.parametrize("add_special", [True, False])
def test_encode_matches_hugging_face(trained, add_special):
    tok, folder = trained
    assert len(TEXTS) >= 200
    got = fusor_lines(folder, TEXTS, *([] if add_special else ["--no-special"]))
    mismatches = [(t, g["ids"], tok.encode(t, add_special_tokens=add_special).ids) for t, g in zip(TEXTS, got)
                  if g["ids"] != tok.encode(t, add_special_tokens=add_special).ids]
    assert not mismatches, f"{len(mismatches)} of {len(TEXTS)} differ; first: {mismatches[0]!r}"


@pytest.mark.parametrize("skip_special", [False, True])
def test_decode_and_streaming_match_hugging_face(trained, skip_special):
    tok, folder = trained
    id_lists = [tok.encode(t).ids for t in TEXTS]
    # Random ids too: byte soup that cuts characters apart, which both must read the same lossy way.
    rng = random.Random(7)
    id_lists += [[rng.randrange(tok.get_vocab_size()) for _ in range(rng.randint(1, 30))] for _ in range(100)]
    got = fusor_lines(folder, id_lists, *(["--skip-special"] if skip_special else []))
    for ids, g in zip(id_lists, got):
        expected = tok.decode(ids, skip_special_tokens=skip_special)
        assert g["text"] == expected, (ids, g["text"], expected)
        # The streamed pieces add up to the whole; none breaks a character that decodes whole.
        assert "".join(g["pieces"]) == expected
        if "\ufffd" not in expected:
            assert all("\ufffd" not in p for p in g["pieces"]), g["pieces"]


def test_stream_holds_an_emoji_split_over_ids(trained):
    tok, folder = trained
    ids = tok.encode("🦀", add_special_tokens=False).ids  # not in the corpus: split over byte tokens
    assert len(ids) > 1
    (g,) = fusor_lines(folder, [ids])
    pieces = g["pieces"]
    assert "".join(pieces) == tok.decode(ids, skip_special_tokens=False)
    # The crab comes out whole with the last id; before it only a prefix space, if any.
    assert "🦀" in pieces[len(ids) - 1] and all("\ufffd" not in p and p.strip() == "" for p in pieces[:len(ids) - 1])


def test_plain_text_and_decode_flags(trained):
    tok, folder = trained
    r = run_fusor("tokenize", folder, "--text", "Hello 😀 world", "--no-special")
    assert r.returncode == 0, r.stderr
    ids = [int(x) for x in r.stdout.split()]
    assert ids == tok.encode("Hello 😀 world", add_special_tokens=False).ids
    r = run_fusor("tokenize", folder, "--decode", ",".join(map(str, ids)))
    assert r.returncode == 0 and r.stdout == tok.decode(ids) + "\n", r.stdout
    assert r.stdout.strip() == "Hello 😀 world"


def test_refusals_are_one_line(tmp_path):
    # A real WordPiece tokenizer.json (MiniLM's): refused by name.
    r = run_fusor("tokenize", MODELS / "minilm-l6", "--text", "hi")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert 'type "WordPiece" is not supported' in r.stderr
    tok = train("gpt2")
    tok.save(str(tmp_path / "tokenizer.json"))
    r = run_fusor("tokenize", tmp_path, "--decode", str(tok.get_vocab_size() + 5))
    assert r.returncode == 1 and "is not in the vocabulary" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    broken = json.loads((tmp_path / "tokenizer.json").read_text())
    broken["model"]["merges"][3] = "lonely"
    (tmp_path / "tokenizer.json").write_text(json.dumps(broken))
    r = run_fusor("tokenize", tmp_path, "--text", "hi")
    assert r.returncode == 1 and "model.merges[3]" in r.stderr and r.stderr.count("\n") == 1, r.stderr
