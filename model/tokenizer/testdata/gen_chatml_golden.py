#!/usr/bin/env python3
"""Writes chatml_golden.json: model/tokenizer/chatml.jinja (ChatMLTemplate,
the chat_template that `spiral export --format hf` writes for a model
without a tokenizer_config.json) rendered by jinja2 the way transformers'
apply_chat_template renders a chat_template (a sandboxed environment with
trim_blocks and lstrip_blocks). TestChatMLTemplateMatchesRenderChat checks
that RenderChat writes the same text.

Run by hand (not in CI) after changing chatml.jinja or the cases:

    pip install jinja2
    python3 model/tokenizer/testdata/gen_chatml_golden.py
"""
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    ("user_generation_prompt", [{"role": "user", "content": "What is 2+2?"}], True),
    ("system_user_generation_prompt",
     [{"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Solve x+1=3."}], True),
    ("multi_turn_no_generation_prompt",
     [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello! How can I help?"},
      {"role": "user", "content": "Compute 7*6.\nPut the answer in \\boxed{}."},
      {"role": "assistant", "content": "\\boxed{42}"}], False),
    ("whitespace_kept", [{"role": "user", "content": "  a\n\n b \t\n"}], True),
    ("unicode_content", [{"role": "user", "content": "计算 ½ + ⅓ 😀"}], True),
    ("empty_content", [{"role": "user", "content": ""}], True),
    ("no_messages_generation_prompt", [], True),
]


def main():
    with open(os.path.join(HERE, "..", "chatml.jinja"), encoding="utf-8") as f:
        template = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    compiled = env.from_string(template)
    cases = [{"name": name, "messages": messages, "add_generation_prompt": gen,
              "text": compiled.render(messages=messages, add_generation_prompt=gen)}
             for name, messages, gen in CASES]
    path = os.path.join(HERE, "chatml_golden.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"source": "jinja2 %s rendering chatml.jinja" % jinja2.__version__,
                   "template": template, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
