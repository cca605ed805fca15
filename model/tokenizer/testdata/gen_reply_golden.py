#!/usr/bin/env python3
"""Writes reply_golden.json: a user turn and the assistant's reply to it,
rendered by chat templates with jinja2 the way transformers'
apply_chat_template renders a chat_template (a sandboxed environment with
trim_blocks and lstrip_blocks), with no generation prompt. Each case
gives the reply as Tokenizer.AssistantReply takes it (its reasoning and
answer) and the message the template renders it from.
TestAssistantReplyGolden checks that the user turn's prompt
(EncodeChat's, with the generation prompt) followed by AssistantReply and
"<|im_end|>\\n" is the template's text: what spiral sft trains on is
what the template writes for that reply.

The hybrid template is the chat_template of the real Qwen3 tokenizer
that scripts/setup.sh installs ($SPIRAL_QWEN3_TOKENIZER_DIR): it writes
the assistant turn after the last user turn as '<think>\\n' + the
reasoning + '\\n</think>\\n\\n' + the answer, an empty block where the
message has no reasoning, whatever enable_thinking is (which only
changes its generation prompt; spiral prompts as its default does, so
the cases' texts, rendered with enable_thinking unset, true and false,
are one). The thinking template is the same with its generation prompt
block writing '<|im_start|>assistant\\n<think>\\n' unconditionally, as
Qwen3-4B-Thinking-2507's does (its assistant turns are written as
Qwen3's: the reasoning in a <think> block before the answer); see
gen_prompt_golden.py.

Run by hand (not in CI) after changing the cases:

    pip install jinja2
    source ~/.cache/spiral/env.sh
    python3 model/tokenizer/testdata/gen_reply_golden.py
"""
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from gen_prompt_golden import HYBRID_GEN, THINKING_GEN, LOOP, qwen3_template

HERE = os.path.dirname(os.path.abspath(__file__))

PLAIN = LOOP + "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}"
USER = {"role": "user", "content": "What is 2+2?"}
REASONING = "2+2=4."
ANSWER = "\\boxed{4}"


def main():
    hybrid = qwen3_template()
    thinking = hybrid[:-len(HYBRID_GEN)] + THINKING_GEN
    # name, template, reasoning and answer (AssistantReply's), the
    # assistant message the template renders
    cases = [
        ("qwen3_thinking_2507_reasoning_content", thinking, REASONING, ANSWER,
         {"role": "assistant", "reasoning_content": REASONING, "content": ANSWER}),
        ("qwen3_thinking_2507_think_in_content", thinking, REASONING, ANSWER,
         {"role": "assistant", "content": REASONING + "\n</think>\n\n" + ANSWER}),
        ("qwen3_thinking_2507_no_reasoning", thinking, "", ANSWER,
         {"role": "assistant", "content": ANSWER}),
        ("plain_chatml", PLAIN, REASONING + " ", ANSWER,
         {"role": "assistant", "content": REASONING + " " + ANSWER}),
    ]
    for thinking_mode in (None, True, False):
        suffix = {None: "", True: "_enable_thinking", False: "_disable_thinking"}[thinking_mode]
        cases += [
            ("qwen3_hybrid_reasoning_content" + suffix, hybrid, REASONING, ANSWER,
             {"role": "assistant", "reasoning_content": REASONING, "content": ANSWER}, thinking_mode),
            ("qwen3_hybrid_think_in_content" + suffix, hybrid, REASONING, ANSWER,
             {"role": "assistant", "content": "<think>\n" + REASONING + "\n</think>\n\n" + ANSWER}, thinking_mode),
            ("qwen3_hybrid_empty_reasoning_content" + suffix, hybrid, "", ANSWER,
             {"role": "assistant", "reasoning_content": "", "content": ANSWER}, thinking_mode),
            ("qwen3_hybrid_no_reasoning" + suffix, hybrid, "", ANSWER,
             {"role": "assistant", "content": ANSWER}, thinking_mode),
        ]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    out = []
    for name, template, reasoning, answer, message, *mode in cases:
        kwargs = {} if not mode or mode[0] is None else {"enable_thinking": mode[0]}
        text = env.from_string(template).render(messages=[USER, message], add_generation_prompt=False, **kwargs)
        case = {"name": name, "template": template, "user": USER["content"],
                "reasoning": reasoning, "answer": answer, "message": message, "text": text}
        if kwargs:
            case["enable_thinking"] = kwargs["enable_thinking"]
        out.append(case)
    path = os.path.join(HERE, "reply_golden.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"source": "jinja2 %s rendering as transformers' apply_chat_template" % jinja2.__version__,
                   "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
