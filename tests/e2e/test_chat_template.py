"""fusor's chat templates (include/fusor/chat_template.h) against transformers' apply_chat_template.

Real templates of common chat models (ChatML, Qwen2 and 2.5, Llama 2 and 3, Mistral, Mixtral,
Zephyr, TinyLlama, Gemma, Phi-3.5, DeepSeek Coder, Command-R; tests/data/chat_templates/, each as
the model's tokenizer_config.json carries it) go into a model folder beside a tokenizer.json; transformers
(4.38, rendering with jinja2) and `fusor tokenize FOLDER --chat` then render the same message lists,
with and without a generation prompt, and must give the same text, or both refuse (a template's
raise_exception on a bad role order, with the same message).
"""
import json
import shutil

import pytest

from conftest import MODELS, ROOT, run_fusor

transformers = pytest.importorskip("transformers")
pytest.importorskip("jinja2")

TEMPLATES = sorted((ROOT / "tests" / "data" / "chat_templates").glob("*.json"))

MESSAGES = {
    "system_first": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "Hello!"}],
    "user_only": [{"role": "user", "content": "What is 2 + 2?"}],
    "multi_turn_system": [{"role": "system", "content": "Answer briefly."},
                          {"role": "user", "content": "Hi"},
                          {"role": "assistant", "content": "Hello! How can I help?"},
                          {"role": "user", "content": "Name a color."}],
    "multi_turn": [{"role": "user", "content": "Hi"},
                   {"role": "assistant", "content": "   I am an assistant   "},
                   {"role": "user", "content": "Another question"}],
    # Spaces to trim, newlines, non-ASCII, and text that looks like a template but is data.
    "awkward_content": [{"role": "user", "content": "  é 中文 😀\n\tline two  \n"},
                        {"role": "assistant", "content": "{{ not a tag }} {% if %} 'quotes' \"double\""},
                        {"role": "user", "content": "\\n is not a newline"}],
    # Tool results between turns (Qwen2.5 groups consecutive ones; others skip or refuse the role).
    "tool_results": [{"role": "user", "content": "Weather in Paris and Rome?"},
                     {"role": "assistant", "content": "Checking."},
                     {"role": "tool", "content": "{\"city\": \"Paris\", \"temp\": 18}"},
                     {"role": "tool", "content": "{\"city\": \"Rome\", \"temp\": 24}"},
                     {"role": "user", "content": "Thanks"}],
    "bad_role_order": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    "empty": [],
}


def model_folder(tmp_path, template_file):
    """A folder transformers and fusor both load: llama-tiny's tokenizer.json, and a
    tokenizer_config.json with the template and its special tokens."""
    data = json.loads(template_file.read_text(encoding="utf-8"))
    folder = tmp_path / template_file.stem
    folder.mkdir()
    shutil.copy(MODELS / "llama-tiny" / "tokenizer.json", folder / "tokenizer.json")
    config = {k: data[k] for k in ("chat_template", "bos_token", "eos_token") if k in data}
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def fusor_chat(tmp_path, *args, request):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    return run_fusor("tokenize", *args, "--chat", path, "--json")


def reference(tokenizer, messages, add_generation_prompt):
    """transformers' prompt, or the error it raised (jinja2's TemplateError and friends)."""
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt), None
    except Exception as e:  # noqa: BLE001 - the kind differs by failure; the message is compared
        return None, str(e)


@pytest.mark.parametrize("template_file", TEMPLATES, ids=lambda p: p.stem)
def test_real_templates_match_transformers(tmp_path, template_file):
    folder = model_folder(tmp_path, template_file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    compared = 0
    for name, messages in MESSAGES.items():
        for generation in (False, True):
            expected, error = reference(tokenizer, messages, generation)
            got = fusor_chat(tmp_path, folder, request={"messages": messages, "add_generation_prompt": generation})
            where = f"{template_file.stem} / {name} / add_generation_prompt={generation}"
            if error is not None:
                assert got.returncode == 1, f"{where}: transformers refused ({error}) but fusor printed {got.stdout!r}"
                if "raise" in template_file.read_text() and name == "bad_role_order":
                    assert error in got.stderr, f"{where}: {got.stderr!r} lacks {error!r}"
                continue
            assert got.returncode == 0, f"{where}: {got.stderr}"
            out = json.loads(got.stdout)
            assert out["plain"] is False
            assert out["prompt"] == expected, f"{where}"
            compared += 1
    assert compared >= 6, f"only {compared} message lists rendered"  # Gemma refuses system messages, tools


def test_bad_role_order_is_refused_with_the_templates_message(tmp_path):
    folder = model_folder(tmp_path, ROOT / "tests" / "data" / "chat_templates" / "mistral-instruct.json")
    got = fusor_chat(tmp_path, folder, request={"messages": MESSAGES["bad_role_order"], "add_generation_prompt": True})
    assert got.returncode == 1
    assert "Conversation roles must alternate user/assistant/user/assistant/..." in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_a_template_in_the_request_with_its_tokens(tmp_path):
    data = json.loads((ROOT / "tests" / "data" / "chat_templates" / "llama2.json").read_text(encoding="utf-8"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(MODELS / "llama-tiny"))
    messages = MESSAGES["multi_turn_system"]
    expected = tokenizer.apply_chat_template(messages, chat_template=data["chat_template"], tokenize=False)
    got = fusor_chat(tmp_path, request={"template": data["chat_template"], "messages": messages,
                                        "bos_token": tokenizer.bos_token, "eos_token": tokenizer.eos_token})
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["prompt"] == expected


def test_a_model_without_a_template_gets_the_plain_one(tmp_path):
    config = json.loads((MODELS / "llama-tiny" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert "chat_template" not in config
    messages = MESSAGES["multi_turn_system"]
    for generation in (False, True):
        got = fusor_chat(tmp_path, "--tokenizer", MODELS / "llama-tiny",
                         request={"messages": messages, "add_generation_prompt": generation})
        assert got.returncode == 0, got.stderr
        out = json.loads(got.stdout)
        expected = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + ("assistant:" if generation else "")
        assert out == {"prompt": expected, "plain": True}


@pytest.mark.parametrize("request_body, message", [
    ({"messages": "hi"}, '"messages" must be a list'),
    ({"messages": [{"role": "user"}]}, "each message must be"),
    ({"messages": [], "add_generation_prompt": "yes"}, '"add_generation_prompt" must be true or false'),
    ({"messages": [], "template": "{{ x | nope }}"}, "chat template line 1: unknown filter 'nope'"),
    ({"messages": [], "template": "a\n{% for %}"}, "chat template line 2: expected a loop variable"),
])
def test_bad_requests_are_one_line_errors(tmp_path, request_body, message):
    got = fusor_chat(tmp_path, request=request_body)
    assert got.returncode == 1
    assert message in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_a_malformed_tokenizer_config_is_one_line(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text('{"chat_template": ', encoding="utf-8")
    got = fusor_chat(tmp_path, folder, request={"messages": []})
    assert got.returncode == 1
    assert "tokenizer_config.json: malformed JSON" in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
