"""Attention fusion on small transformer blocks exported by torch (opset 17): a BERT-like post-LN
layer with a padding mask, a GPT-2-style pre-LN causal block (masked_fill with -inf), and a pre-LN
block with HF GPT-2's causal Where(finfo.min) plus a padding mask. fusor's outputs are compared
with ONNX Runtime's within ort_compare's tolerance, on right and left padding, and
`fusor profile --json` shows that the attention was fused.
"""
import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from conftest import FUSOR, run_fusor
from ort_compare import compare, run_fusor as run_fusor_outputs, run_ort, save_npy_dir

HIDDEN, HEADS, MAX_LEN = 64, 4, 64


class SelfAttention(nn.Module):
    """Multi-head self-attention in the Hugging Face layout: view/permute to heads and back."""

    def __init__(self, causal=None, fused_qkv=False):
        super().__init__()
        self.causal, self.fused_qkv = causal, fused_qkv
        self.d = HIDDEN // HEADS
        if fused_qkv:
            self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        else:
            self.q, self.k, self.v = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.register_buffer("bias", torch.tril(torch.ones(MAX_LEN, MAX_LEN, dtype=torch.bool)).view(1, 1, MAX_LEN, MAX_LEN))
        self.register_buffer("masked_bias", torch.tensor(torch.finfo(torch.float32).min))

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, HEADS, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask=None):
        b, s, _ = x.shape
        if self.fused_qkv:
            q, k, v = self.qkv(x).split(HIDDEN, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        if self.causal == "masked_fill":  # nanoGPT
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))
            att = att.masked_fill(self.bias[:, :, :s, :s] == 0, float("-inf"))
        else:
            att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
            if self.causal == "where":  # Hugging Face GPT-2
                att = torch.where(self.bias[:, :, :s, :s], att, self.masked_bias)
        if mask is not None:
            att = att + mask
        y = torch.softmax(att, dim=-1) @ v
        return self.out(y.permute(0, 2, 1, 3).contiguous().view(b, s, HIDDEN))


class Block(nn.Module):
    def __init__(self, pre_ln, causal=None, fused_qkv=False, padding=True, mask_value=-10000.0):
        super().__init__()
        self.pre_ln, self.padding, self.mask_value = pre_ln, padding, mask_value
        self.attn = SelfAttention(causal, fused_qkv)
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.ffn = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

    def forward(self, x, attention_mask=None):
        mask = None
        if self.padding:  # BERT's extended mask: (1 - m) * large negative, [B,1,1,S]
            mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * self.mask_value
        if self.pre_ln:
            x = x + self.attn(self.ln1(x), mask)
            return x + self.ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.ffn(x))


MODELS = {
    "bert_post_ln": dict(pre_ln=False),
    "gpt2_causal_pre_ln": dict(pre_ln=True, causal="masked_fill", fused_qkv=True, padding=False),
    "hf_gpt2_causal_padding": dict(pre_ln=True, causal="where", fused_qkv=True, mask_value=torch.finfo(torch.float32).min),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("attention-models")
    paths = {}
    for name, kw in MODELS.items():
        torch.manual_seed(0)
        block = Block(**kw).eval()
        x = torch.randn(2, 8, HIDDEN)
        names, args = ["x"], (x,)
        if block.padding:
            names, args = ["x", "attention_mask"], (x, torch.ones(2, 8, dtype=torch.int64))
        path = d / f"{name}.onnx"
        torch.onnx.export(block, args, str(path), input_names=names, output_names=["y"], opset_version=17,
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["y"]})
        paths[name] = path
    return paths


def inputs_for(batch, seq, padding, seed=0):
    rng = np.random.default_rng(seed)
    inputs = {"x": rng.standard_normal((batch, seq, HIDDEN)).astype(np.float32)}
    if padding:
        mask = np.ones((batch, seq), dtype=np.int64)
        for b in range(batch):
            keep = max(1, seq - 3 * b)
            if b % 2:
                mask[b, :seq - keep] = 0  # left padding
            else:
                mask[b, keep:] = 0  # right padding
        inputs["attention_mask"] = mask
    return inputs


CASES = [(name, batch, seq) for name in MODELS for batch, seq in ((2, 9), (1, 1), (3, 40))]


@pytest.mark.parametrize("name,batch,seq", CASES)
def test_matches_onnx_runtime(exported, tmp_path, name, batch, seq):
    model = exported[name]
    inputs = inputs_for(batch, seq, MODELS[name].get("padding", True))
    expected = run_ort(model, inputs)
    save_npy_dir(tmp_path / "inputs", inputs)
    run_fusor_outputs(FUSOR, model, tmp_path / "inputs", tmp_path / "out")
    assert compare(tmp_path / "out", expected)


@pytest.mark.parametrize("name", list(MODELS))
def test_attention_is_fused(exported, tmp_path, monkeypatch, name):
    monkeypatch.setenv("FUSOR_CACHE_DIR", str(tmp_path))
    report = tmp_path / "profile.json"
    r = run_fusor("profile", exported[name], "--batch", 2, "--seq", 16, "--runs", 1, "--warmup", 0, "--quick",
                  "--json", report, timeout=120)
    assert r.returncode == 0, r.stderr
    p = json.loads(report.read_text())
    attention = [i for i in p["fusion_items"] if i["kind"] == "Attention"]
    assert len(attention) == 1, (p["fusion_items"], [n for n in p["not_fused"] if n["pass"] == "fuse_attention"])
    assert any(k["name"].startswith("attention_f32_d16") for k in p["kernels"]), [k["name"] for k in p["kernels"]]
    assert not any(k["op"] in ("Softmax", "Transpose") for k in p["kernels"]), [k["op"] for k in p["kernels"]]
