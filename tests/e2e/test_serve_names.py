"""Model and traffic-class names come from users: any of them shows in /metrics as valid
Prometheus text."""
import re

from conftest import MODELS
from serve_util import Served, get, tiny_model

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
