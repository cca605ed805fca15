#!/usr/bin/env python3
"""Writes prompt_golden.json: ChatML chat templates whose generation prompt
(what add_generation_prompt writes) goes past "<|im_start|>assistant\\n",
as the templates of thinking-only models open a <think> block there
(Qwen/Qwen3-*-Thinking-2507, Qwen/QwQ-32B), and Qwen3's hybrid template,
which does not, rendered by jinja2 the way transformers'
apply_chat_template renders a chat_template (a sandboxed environment
with trim_blocks and lstrip_blocks). TestChatGenerationPromptGolden
checks that Tokenizer.EncodeChat gives the ids of that text (tokenized
without special tokens added, as transformers tokenizes a rendered
template).

The Qwen3 templates are the chat_template of the real Qwen3 tokenizer
that scripts/setup.sh installs ($SPIRAL_QWEN3_TOKENIZER_DIR) and, for
Thinking-2507's, the same with its generation prompt block writing
'<|im_start|>assistant\\n<think>\\n' unconditionally, as
Qwen3-4B-Thinking-2507's does (its other differences are in assistant
and tool turns, which spiral's prompts have none of).

Run by hand (not in CI) after changing the cases:

    pip install jinja2
    source ~/.cache/spiral/env.sh
    python3 model/tokenizer/testdata/gen_prompt_golden.py
"""
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

HYBRID_GEN = ("{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n"
              "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
              "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}")
THINKING_GEN = "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}"

LOOP = ("{%- for message in messages %}\n    {{- '<|im_start|>' + message.role + '\\n' + message.content + "
        "'<|im_end|>' + '\\n' }}\n{%- endfor %}\n")
# QwQ-32B's form: a ChatML loop, then a generation prompt opening <think>.
QWQ = LOOP + THINKING_GEN
# The generation prompt as literal template text on its own line.
RAW = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
       "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}\n<|im_start|>assistant\n<think>\n{% endif %}")
# Template whitespace: trim_blocks keeps the newline after an
# expression, lstrip_blocks drops the blanks before a nested block.
NEWLINE = LOOP + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}\n{% endif %}"
BLANKS = (LOOP + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}  \n  "
          "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}")
# Two literals joined with +, double quoted.
JOINED = LOOP + '{% if add_generation_prompt %}{{ "<|im_start|>assistant\\n" + "<think>\\n" }}{% endif %}'

USER = [{"role": "user", "content": "What is 2+2?"}]
SYSTEM_USER = [{"role": "system", "content": "You are a helpful assistant."},
               {"role": "user", "content": "Solve x+1=3."}]


def qwen3_template():
    path = os.path.join(os.environ["SPIRAL_QWEN3_TOKENIZER_DIR"], "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        tmpl = json.load(f)["chat_template"]
    assert tmpl.endswith(HYBRID_GEN), "Qwen3's generation prompt block is not the expected one"
    return tmpl


def main():
    hybrid = qwen3_template()
    thinking = hybrid[:-len(HYBRID_GEN)] + THINKING_GEN
    # name, template, messages, add_generation_prompt
    cases = [
        ("qwen3_hybrid_user", hybrid, USER, True),
        ("qwen3_hybrid_system_user", hybrid, SYSTEM_USER, True),
        ("qwen3_thinking_2507_user", thinking, USER, True),
        ("qwen3_thinking_2507_system_user", thinking, SYSTEM_USER, True),
        ("qwen3_thinking_2507_no_generation_prompt", thinking, USER, False),
        ("qwq_user", QWQ, USER, True),
        ("raw_text_user", RAW, USER, True),
        ("joined_literals_user", JOINED, USER, True),
        ("newline_after_expression_user", NEWLINE, USER, True),
        ("blanks_before_nested_block_user", BLANKS, USER, True),
    ]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    out = []
    for name, template, messages, gen in cases:
        text = env.from_string(template).render(messages=messages, add_generation_prompt=gen)
        out.append({"name": name, "template": template, "messages": messages,
                    "add_generation_prompt": gen, "text": text})
    path = os.path.join(HERE, "prompt_golden.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"source": "jinja2 %s rendering as transformers' apply_chat_template" % jinja2.__version__,
                   "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
