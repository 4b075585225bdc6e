#!/usr/bin/env python3
"""Renders Qwen3's real chat template (Jinja, from tokenizer_config.json) for the tokenizer tests.

usage: render_chat_template.py TOKENIZER_CONFIG_JSON < requests.jsonl > rendered.jsonl

Each request line: {"messages": [...], "add_generation_prompt": bool, "enable_thinking": bool?}
(enable_thinking left out = the template's default). Each output line: the rendered string as
JSON. Uses jinja2 the way Hugging Face transformers does (trim_blocks, lstrip_blocks,
loopcontrols). Exits 3 when jinja2 is not installed, so the caller can skip.
"""
import json
import sys

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("render_chat_template.py: jinja2 is not installed\n")
    sys.exit(3)


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        template_text = json.load(f)["chat_template"]
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
    template = env.from_string(template_text)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        variables = {
            "messages": request["messages"],
            "add_generation_prompt": request.get("add_generation_prompt", False),
        }
        if "enable_thinking" in request:
            variables["enable_thinking"] = request["enable_thinking"]
        sys.stdout.write(json.dumps(template.render(**variables), ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
