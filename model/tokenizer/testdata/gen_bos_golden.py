#!/usr/bin/env python3
"""Writes bos_golden.json: ChatML chat templates that write {{ bos_token }}
(Hermes-style ChatML on Mistral and Llama bases) rendered by jinja2 the
way transformers' apply_chat_template renders a chat_template: a
sandboxed environment with trim_blocks and lstrip_blocks, given the
messages, add_generation_prompt and the tokenizer's special tokens map,
whose bos_token is the content of tokenizer_config.json's bos_token (a
string, or an AddedToken object's "content"), and which lacks it when the
config has none (jinja2 then renders the undefined name as ""). The text
is then tokenized without special tokens added (add_special_tokens=False),
which Tokenizer.Encode does. TestChatBOSGolden checks that
Tokenizer.EncodeChat gives the ids of that text.

Run by hand (not in CI) after changing the cases:

    pip install jinja2
    python3 model/tokenizer/testdata/gen_bos_golden.py
"""
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

# NousResearch/Nous-Hermes-2-Mixtral-8x7B-DPO's chat_template.
HERMES = ("{{bos_token}}{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\\n' }}{% endif %}")
# The same with whitespace control and a newline after the BOS, as
# LFM2's template begins.
TRIMMED = ("{{- bos_token -}}\n{%- for message in messages %}\n    {{- '<|im_start|>' + message['role'] + '\\n' + "
           "message['content'] + '<|im_end|>\\n' }}\n{%- endfor %}\n{%- if add_generation_prompt %}\n"
           "    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n")

USER = [{"role": "user", "content": "What is 2+2?"}]
SYSTEM_USER = [{"role": "system", "content": "You are a helpful assistant."},
               {"role": "user", "content": "Solve x+1=3."}]
ADDED_BOS = {"__type": "AddedToken", "content": "<s>", "lstrip": False, "normalized": False,
             "rstrip": False, "single_word": False}

# name, template, tokenizer_config.json's bos_token (None: no key), messages, add_generation_prompt
CASES = [
    ("hermes_user", HERMES, "<s>", USER, True),
    ("hermes_system_user", HERMES, "<s>", SYSTEM_USER, True),
    ("hermes_no_generation_prompt", HERMES, "<s>", USER, False),
    ("hermes_added_token_bos", HERMES, ADDED_BOS, USER, True),
    ("hermes_without_bos_token", HERMES, None, USER, True),
    ("trimmed_user", TRIMMED, "<s>", USER, True),
]


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    cases = []
    for name, template, bos, messages, gen in CASES:
        special = {}
        if bos is not None:
            special["bos_token"] = bos["content"] if isinstance(bos, dict) else bos
        text = env.from_string(template).render(messages=messages, add_generation_prompt=gen, **special)
        cases.append({"name": name, "template": template, "bos_token": bos, "messages": messages,
                      "add_generation_prompt": gen, "text": text})
    path = os.path.join(HERE, "bos_golden.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"source": "jinja2 %s rendering as transformers' apply_chat_template" % jinja2.__version__,
                   "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
