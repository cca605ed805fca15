#!/usr/bin/env python3
"""Writes the golden files of model/tokenizer's tests with independent tools.

Run by hand (not in CI) after changing the cases or the generated
tokenizers:

    source ~/.cache/spiral/env.sh
    go test ./model/tokenizer -run TestGeneratedGolden -update   # char/byte tokenizer.json
    pip install tokenizers==0.20.4 jinja2
    python3 model/tokenizer/testdata/gen_golden.py

It writes, next to itself:

  qwen3_golden.json  token ids of the real Qwen3 tokenizer.json
                     ($SPIRAL_QWEN3_TOKENIZER_DIR) for each case, computed by
                     the Python `tokenizers` package (0.20.4, the version that
                     daulet/tokenizers v1.22.1 compiles), plus its vocabulary
                     size and special-token ids.
  chat_golden.json   chat prompts rendered by jinja2 from the real Qwen3
                     tokenizer_config.json chat_template, the way transformers'
                     apply_chat_template does (trim_blocks, lstrip_blocks).
  generated_golden.json  ids that Python `tokenizers` gives with our generated
                     char_tokenizer.json and byte_tokenizer.json.
"""
import hashlib
import json
import os
import sys

import jinja2
import jinja2.ext
import tokenizers
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

QWEN3_CASES = [
    ("empty", ""),
    ("ascii", "Hello, world!"),
    ("math", "If 3x + 5 = 20, then x = 5. The answer is 5."),
    ("latex", r"We have $\frac{a}{b} + \sqrt{x^2+1} = \int_0^1 f(t)\,dt$, so the answer is \boxed{\dfrac{7}{12}}."),
    ("digits", "12345678901234567890 and 3.14159"),
    ("cjk", "我们来计算：二加三等于五。日本語のテキスト、한국어 텍스트"),
    ("emoji", "Great job 😀👍🏽 family 👨‍👩‍👧‍👦 flag 🇯🇵"),
    ("whitespace_runs", "a  b   c\t\td\n\n\ne    \n  f\r\n"),
    ("leading_trailing_space", "   padded   "),
    ("nfc", "Cafe\u0301 and na\u0131\u0308ve"),
    ("special_tokens", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"),
    ("think", "<think>\nLet me reason.\n</think>\n\nThe answer is \\boxed{4}."),
    ("mixed_scripts", "Ελληνικά, русский, العربية, עברית, हिन्दी"),
    ("code", "func main() {\n\tfmt.Println(\"hi\")\n}\n"),
]

CHAT_CASES = [
    ("user_generation_prompt", [{"role": "user", "content": "What is 2+2?"}], True),
    ("system_user_generation_prompt",
     [{"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Solve x+1=3."}], True),
    ("multi_turn_generation_prompt",
     [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello! How can I help?"},
      {"role": "user", "content": "Compute 7*6.\nPut the answer in \\boxed{}."}], True),
    ("user_no_generation_prompt", [{"role": "user", "content": "Only a user turn."}], False),
    ("unicode_content", [{"role": "user", "content": "计算 ½ + ⅓ 😀"}], True),
    ("empty_content", [{"role": "user", "content": ""}], True),
    # Differs from plain ChatML: Qwen3's hybrid template writes an empty think
    # block into a final assistant turn after the last user turn.
    ("final_assistant_think_block",
     [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}], False),
]

GENERATED_CASES = [
    "",
    "12+34=46",
    "<|im_start|>user\nWhat is 12+3?<|im_end|>\n<|im_start|>assistant\n15<|im_end|>",
    "unknown chars: é 😀 Q",
    "line1\nline2\n\n",
    "ÿ\u0100 \t",
]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write(name, obj):
    path = os.path.join(HERE, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path)


def main():
    tok_dir = os.environ.get("SPIRAL_QWEN3_TOKENIZER_DIR")
    if not tok_dir:
        sys.exit("SPIRAL_QWEN3_TOKENIZER_DIR is not set: source ~/.cache/spiral/env.sh")
    tok_path = os.path.join(tok_dir, "tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(tok_path)
    cases = []
    for name, text in QWEN3_CASES:
        enc = tok.encode(text, add_special_tokens=False)
        cases.append({"name": name, "text": text, "ids": enc.ids,
                      "decoded": tok.decode(enc.ids, skip_special_tokens=False)})
    specials = {s: tok.token_to_id(s) for s in
                ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]}
    write("qwen3_golden.json", {
        "source": "python tokenizers %s on tokenizer.json sha256 %s" % (tokenizers.__version__, sha256(tok_path)),
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "special_ids": specials,
        "cases": cases,
    })

    with open(os.path.join(tok_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        template = json.load(f)["chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    compiled = env.from_string(template)
    chats = []
    for name, messages, gen in CHAT_CASES:
        text = compiled.render(messages=messages, add_generation_prompt=gen, tools=None)
        chats.append({"name": name, "messages": messages, "add_generation_prompt": gen,
                      "text": text, "ids": tok.encode(text, add_special_tokens=False).ids})
    write("chat_golden.json", {
        "source": "jinja2 %s rendering chat_template of tokenizer_config.json sha256 %s; ids by python tokenizers %s"
                  % (jinja2.__version__, sha256(os.path.join(tok_dir, "tokenizer_config.json")), tokenizers.__version__),
        "cases": chats,
    })

    gen = {"source": "python tokenizers %s" % tokenizers.__version__, "files": {}}
    for fname in ["char_tokenizer.json", "byte_tokenizer.json"]:
        t = tokenizers.Tokenizer.from_file(os.path.join(HERE, fname))
        out = []
        for text in GENERATED_CASES:
            ids = t.encode(text, add_special_tokens=False).ids
            out.append({"text": text, "ids": ids, "decoded": t.decode(ids, skip_special_tokens=False)})
        gen["files"][fname] = {"vocab_size": t.get_vocab_size(with_added_tokens=True), "cases": out}
    write("generated_golden.json", gen)


if __name__ == "__main__":
    main()
