"""Makers of the small random-weight models that cover operator families the real models miss
(issue #14): a YOLO-style detector, a U-Net, a wav2vec2 encoder and resnet18 at opset 21, plus
the decoders of scripts/decoder_zoo.py (issue #16). docs/models.md says why each is in the set.

Each maker takes `force`, returns at once when its outputs are cached, and otherwise exports into
a temporary file, checks it (onnx.checker, then ONNX Runtime against torch on inputs of another
shape than the trace's) and renames it into place, like the makers in scripts/get-models.
"""
import decoder_zoo
from model_tools import MODELS, ROOT, cached, check_close, export, finish, log, op_histogram, ort_run

OPSET = 17


def _gen(seed):
    import torch
    return torch.Generator().manual_seed(seed)


def _calibrate_batchnorm(model, x):
    """BatchNorm statistics from one batch (cumulative average): with the default mean 0 / var 1
    the activations of a randomly initialised network drift in scale from block to block."""
    import torch
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    with torch.no_grad():
        model.train()(x)
    return model.eval()


def _check_torch(tmp, model, name, feeds, atol=1e-4, rtol=1e-4):
    """ONNX Runtime on tmp vs model(*feeds.values()) for every output."""
    import torch
    with torch.no_grad():
        want = model(*[torch.from_numpy(v) for v in feeds.values()])
    want = want if isinstance(want, (tuple, list)) else (want,)
    got = ort_run(tmp, feeds)
    for i, (g, w) in enumerate(zip(got, want)):
        check_close(f"{name} output {i}" if len(got) > 1 else name, g, w.numpy(), atol, rtol)


# ----------------------------------------------------------------------------------- yolo-tiny

def _yolo_module():
    import torch
    from torch import nn

    class ConvBnSilu(nn.Sequential):
        def __init__(self, cin, cout, k=1, s=1):
            super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.SiLU())

    class Bottleneck(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1, self.cv2 = ConvBnSilu(c, c, 3), ConvBnSilu(c, c, 3)

        def forward(self, x):
            return x + self.cv2(self.cv1(x))

    class C2f(nn.Module):
        """1x1 conv, Split in two halves, a chain of bottlenecks on the second, Concat of all."""

        def __init__(self, cin, cout, n=1):
            super().__init__()
            self.c = cout // 2
            self.cv1 = ConvBnSilu(cin, 2 * self.c)
            self.cv2 = ConvBnSilu((2 + n) * self.c, cout)
            self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))

        def forward(self, x):
            y = list(torch.split(self.cv1(x), [self.c, self.c], dim=1))
            for m in self.m:
                y.append(m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        """Three chained 5x5 stride-1 max pools, concatenated with their input."""

        def __init__(self, cin, cout):
            super().__init__()
            self.cv1 = ConvBnSilu(cin, cin // 2)
            self.cv2 = ConvBnSilu(cin * 2, cout)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class YoloTiny(nn.Module):
        """Backbone (strides 8, 16, 32), FPN top-down path, per-level Sigmoid heads; the output
        is [batch, 4 box + 8 class scores, anchors]: 400 + 100 + 25 = 525 anchors at 160x160."""

        def __init__(self, classes=8):
            super().__init__()
            self.p3 = nn.Sequential(ConvBnSilu(3, 16, 3, 2), ConvBnSilu(16, 32, 3, 2),
                                    ConvBnSilu(32, 32, 3, 2), C2f(32, 32))
            self.p4 = nn.Sequential(ConvBnSilu(32, 64, 3, 2), C2f(64, 64))
            self.p5 = nn.Sequential(ConvBnSilu(64, 128, 3, 2), C2f(128, 128), SPPF(128, 128))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.f4 = C2f(128 + 64, 64)
            self.f3 = C2f(64 + 32, 32)
            self.heads = nn.ModuleList(nn.Conv2d(c, 4 + classes, 1) for c in (32, 64, 128))

        def forward(self, images):
            p3 = self.p3(images)
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            f4 = self.f4(torch.cat([self.up(p5), p4], 1))
            f3 = self.f3(torch.cat([self.up(f4), p3], 1))
            outs = [h(f).flatten(2) for h, f in zip(self.heads, (f3, f4, p5))]
            return torch.cat(outs, 2).sigmoid()

    return YoloTiny()


def get_yolo_tiny(force):
    path = MODELS / "yolo-tiny" / "model.onnx"
    if not force and cached(path.parent, ["model.onnx"]):
        log(f"{path.relative_to(ROOT)}: cached")
        return
    import torch
    log(f"exporting {path.relative_to(ROOT)} (random init, seed 0, opset {OPSET})")
    torch.manual_seed(0)
    model = _calibrate_batchnorm(_yolo_module(), torch.randn(8, 3, 160, 160, generator=_gen(2)))
    x = torch.randn(1, 3, 160, 160, generator=_gen(0))
    tmp, m = export(model, (x,), path, input_names=["images"], output_names=["output"],
                    dynamic_axes={"images": {0: "batch"}, "output": {0: "batch"}},
                    opset_version=OPSET)
    log(f"  {op_histogram(m)}")
    vx = torch.randn(2, 3, 160, 160, generator=_gen(1)).numpy()
    _check_torch(tmp, model, "yolo-tiny [2,3,160,160]", {"images": vx}, atol=1e-5)
    finish(tmp, path)


# ----------------------------------------------------------------------------------- unet-tiny

def _unet_module():
    import torch
    from torch import nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.GroupNorm(8, cout), nn.SiLU(),
                             nn.Conv2d(cout, cout, 3, 1, 1), nn.GroupNorm(8, cout), nn.SiLU())

    class UNetTiny(nn.Module):
        """Two levels down (stride-2 conv), two up (ConvTranspose2d), skips joined by Concat."""

        def __init__(self):
            super().__init__()
            self.enc1, self.down1 = block(3, 16), nn.Conv2d(16, 32, 3, 2, 1)
            self.enc2, self.down2 = block(32, 32), nn.Conv2d(32, 64, 3, 2, 1)
            self.mid = block(64, 64)
            self.up2, self.dec2 = nn.ConvTranspose2d(64, 32, 2, 2), block(64, 32)
            self.up1, self.dec1 = nn.ConvTranspose2d(32, 16, 2, 2), block(32, 16)
            self.out = nn.Conv2d(16, 3, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(self.down1(e1))
            mid = self.mid(self.down2(e2))
            d2 = self.dec2(torch.cat([self.up2(mid), e2], 1))
            d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
            return self.out(d1)

    return UNetTiny()


def get_unet_tiny(force):
    path = MODELS / "unet-tiny" / "model.onnx"
    if not force and cached(path.parent, ["model.onnx"]):
        log(f"{path.relative_to(ROOT)}: cached")
        return
    import torch
    log(f"exporting {path.relative_to(ROOT)} (random init, seed 0, opset {OPSET})")
    torch.manual_seed(0)
    model = _unet_module().eval()
    x = torch.randn(1, 3, 64, 64, generator=_gen(0))
    tmp, m = export(model, (x,), path, input_names=["input"], output_names=["output"],
                    dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                    opset_version=OPSET)
    log(f"  {op_histogram(m)}")
    vx = torch.randn(2, 3, 64, 64, generator=_gen(1)).numpy()
    _check_torch(tmp, model, "unet-tiny [2,3,64,64]", {"input": vx}, atol=1e-5)
    finish(tmp, path)


# ------------------------------------------------------------------------------- wav2vec2-tiny

WAV2VEC2 = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                conv_dim=(64,) * 7, feat_extract_norm="group", num_conv_pos_embeddings=32,
                num_conv_pos_embedding_groups=4)


def get_wav2vec2_tiny(force):
    out_dir = MODELS / "wav2vec2-tiny"
    path = out_dir / "model.onnx"
    if not force and cached(out_dir, ["model.onnx", "config.json"]):
        log(f"{path.relative_to(ROOT)}: cached")
        return
    import torch
    import transformers
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    transformers.logging.set_verbosity_error()
    log(f"exporting {path.relative_to(ROOT)} (random init, seed 0, opset {OPSET})")
    torch.manual_seed(0)
    cfg = Wav2Vec2Config(**WAV2VEC2)
    model = Wav2Vec2Model(cfg).eval()

    class Hidden(torch.nn.Module):
        """last_hidden_state only (the model also returns the feature extractor's output)."""

        def __init__(self, w):
            super().__init__()
            self.w = w

        def forward(self, input_values):
            return self.w(input_values, return_dict=True).last_hidden_state

    hidden = Hidden(model).eval()
    x = torch.randn(1, 16000, generator=_gen(0))
    tmp, m = export(hidden, (x,), path, input_names=["input_values"],
                    output_names=["last_hidden_state"],
                    dynamic_axes={"input_values": {0: "batch", 1: "samples"},
                                  "last_hidden_state": {0: "batch", 1: "frames"}},
                    opset_version=OPSET)
    log(f"  {op_histogram(m)}")
    vx = torch.randn(2, 8000, generator=_gen(1)).numpy()
    _check_torch(tmp, hidden, "wav2vec2-tiny [2,8000]", {"input_values": vx})
    cfg.save_pretrained(out_dir)
    finish(tmp, path)


# ------------------------------------------------------------------------------- resnet18-op21

def get_resnet18_op21(force, make_resnet18):
    """models/resnet18 (made first if missing) through onnx.version_converter to opset 21,
    checked against ONNX Runtime on the opset-14 original."""
    path = MODELS / "resnet18-op21" / "model.onnx"
    if not force and cached(path.parent, ["model.onnx"]):
        log(f"{path.relative_to(ROOT)}: cached")
        return
    import numpy as np
    import onnx
    from onnx import version_converter
    src = MODELS / "resnet18" / "model.onnx"
    make_resnet18(False)
    log(f"converting {src.relative_to(ROOT)} to opset 21 -> {path.relative_to(ROOT)}")
    m = version_converter.convert_version(onnx.load(str(src)), 21)
    onnx.checker.check_model(m, full_check=True)
    log(f"  {op_histogram(m)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".onnx.tmp")
    onnx.save(m, str(tmp))
    vx = np.random.Generator(np.random.PCG64(1)).standard_normal((2, 3, 224, 224)).astype(np.float32)
    check_close("resnet18-op21 [2,3,224,224]", ort_run(tmp, {"input": vx})[0],
                ort_run(src, {"input": vx})[0], atol=1e-5, rtol=1e-4, against="opset 14")
    finish(tmp, path)


MAKERS = {**decoder_zoo.MAKERS, "yolo-tiny": get_yolo_tiny, "unet-tiny": get_unet_tiny,
          "wav2vec2-tiny": get_wav2vec2_tiny}
