"""The byte-level BPE tokenizer that the decoders of scripts/decoder_zoo.py share, trained locally
with Hugging Face `tokenizers` (issue #16).

Pipeline (GPT-2's): no normalizer; the ByteLevel pre-tokenizer with GPT-2's split regex and no
prefix space; BPE over the 256 byte symbols; the ByteLevel decoder. Encoding adds no special
tokens (no BOS): a prompt is exactly the encoding of its text.

Special tokens take the first ids: PAD 0, BOS 1, EOS 2; then the 256 byte symbols, then merges up
to VOCAB_SIZE.

Corpus, the same on every machine after scripts/setup: the Python sources of the pinned
transformers package outside transformers/models (about 5 MB of English docstrings and code, in
path order), then scripts/tokenizer_sample.txt (CJK, Cyrillic, Arabic, emoji, accents, combining
marks) repeated SAMPLE_REPEAT times so that multi-byte characters get merges of their own.
The trainer is deterministic (ties between pair counts break on the pair's ids); get-models
trains once per run (a few seconds).
"""
import functools
from pathlib import Path

VOCAB_SIZE = 8192
PAD, BOS, EOS = "<|pad|>", "<|bos|>", "<|eos|>"
SPECIAL_TOKENS = [PAD, BOS, EOS]  # ids 0, 1, 2
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
SAMPLE = Path(__file__).resolve().parent / "tokenizer_sample.txt"
SAMPLE_REPEAT = 10


def corpus_files():
    import transformers
    pkg = Path(transformers.__file__).resolve().parent
    return [f for f in sorted(pkg.rglob("*.py")) if f.relative_to(pkg).parts[0] != "models"]


def _corpus():
    for f in corpus_files():
        yield f.read_text(encoding="utf-8", errors="replace")
    sample = SAMPLE.read_text(encoding="utf-8")
    for _ in range(SAMPLE_REPEAT):
        yield sample


@functools.lru_cache(maxsize=None)
def train():
    """The trained tokenizers.Tokenizer (cached for the process)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)  # offsets only; adds no ids
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2,
                                  special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(), trainer=trainer)
    ids = [tok.token_to_id(t) for t in SPECIAL_TOKENS]
    if ids != [PAD_ID, BOS_ID, EOS_ID] or tok.get_vocab_size() != VOCAB_SIZE:
        raise SystemExit(f"get-models: tokenizer trained to special ids {ids}, "
                         f"vocabulary {tok.get_vocab_size()}; expected 0, 1, 2 and {VOCAB_SIZE}")
    return tok


def save(out_dir: Path, context_length: int):
    """tokenizer.json, tokenizer_config.json and special_tokens_map.json, as transformers'
    PreTrainedTokenizerFast writes them (AutoTokenizer loads the folder)."""
    from transformers import PreTrainedTokenizerFast
    fast = PreTrainedTokenizerFast(tokenizer_object=train(), bos_token=BOS, eos_token=EOS,
                                   pad_token=PAD, model_max_length=context_length,
                                   clean_up_tokenization_spaces=False)
    fast.save_pretrained(str(out_dir))
