"""Model and traffic-class names come from users: ones HTTP cannot route, or given twice, are
refused at start; any other shows in /metrics as valid Prometheus text."""
import re
import subprocess

import pytest

from conftest import FUSOR, MODELS
from serve_util import Served, free_ports, get, tiny_model

# A sample line of the Prometheus text format: labels are name="value" with \\, \" and \n the only
# escapes, so a raw quote, backslash or newline in a value breaks the line.
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? \S+$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def unescaped(value):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def test_metrics_escape_names_in_label_values(tmp_path):
    model = tiny_model(tmp_path)
    encoder, decoder, cls = 'we"ird\\name', 'de"co\\der', 'x"y\\z'
    s = Served(tmp_path, f"serve:\n  default_class: '{cls}'\n  classes:\n    '{cls}': {{max_batch: 4}}\n",
               models=[(encoder, model), (decoder, MODELS / "llama-tiny")])
    try:
        code, text = get(f"127.0.0.1:{s.metrics}/metrics")
        assert code == 200
        models, classes = set(), set()
        for line in text.decode().splitlines():
            if line.startswith("#"):
                continue
            assert SAMPLE.match(line), line
            labels = {k: unescaped(v) for k, v in LABEL.findall(line)}
            models |= {labels[k] for k in ("model", "model_name") if k in labels}
            classes |= {labels["class"]} if "class" in labels else set()
        assert models == {encoder, decoder} and classes == {cls}
    finally:
        assert s.stop() == 0, s.output()


def serve_fails(models):
    """`fusor serve` with these --model NAME=PATH: its exit code and the last line it wrote. It
    must fail at once; one that serves is killed by the timeout."""
    http, grpc, metrics = free_ports(3)
    args = [FUSOR, "serve", "--http", http, "--grpc", grpc, "--metrics", metrics]
    for name, path in models:
        args += ["--model", f"{name}={path}"]
    r = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=30)
    return r.returncode, r.stderr.strip().splitlines()[-1]


def test_a_name_given_twice_is_refused_at_start(tmp_path):
    model = tiny_model(tmp_path)
    for second in (model, MODELS / "llama-tiny"):  # two encoders; an encoder and a decoder
        code, last = serve_fails([("a", model), ("a", second)])
        assert code != 0 and last == "fusor: error: model name 'a' is given twice; each model needs its own"


@pytest.mark.parametrize("name,why", [
    ("a/b", "contains '/'"),
    ("stats", "is reserved"),
    ("..", "is a path step"),
    ("a\nb", "contains a control character"),
])
def test_a_name_http_cannot_route_is_refused_at_start(tmp_path, name, why):
    code, last = serve_fails([(name, tiny_model(tmp_path))])
    shown = name.replace("\n", "\\x0a")
    assert code != 0 and last.startswith(f"fusor: error: model name '{shown}' {why}"), last
