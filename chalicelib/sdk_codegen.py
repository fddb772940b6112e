"""Generates the Python SDK's typed results from the OpenAPI document (`sdk/loom/_generated.py`).

`python -m chalicelib.sdk_codegen > sdk/loom/_generated.py`; a test keeps the file current.
"""

from __future__ import annotations

import keyword
import re
import sys
from typing import Any

from chalicelib.openapi import openapi_document

IDENTITY = ("org", "namespace", "agent")  # the fields an `Agent` fills in from its own

HEADER = '''"""Loom's typed results, generated from its OpenAPI document by
`python -m chalicelib.sdk_codegen`: do not edit."""

from __future__ import annotations

from typing import Any, Literal, TypedDict
'''


class Generator:
    def __init__(self, components: dict[str, Any]):
        self.components = components
        self.classes: dict[str, str] = {}

    def type_of(self, schema: dict[str, Any], hint: str) -> str:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            return self.define(name, self.components[name])
        if "anyOf" in schema:
            parts = [self.type_of(s, hint) for s in schema["anyOf"]]
            return " | ".join(dict.fromkeys(parts))
        if "enum" in schema:
            return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
        if "const" in schema:
            return f"Literal[{schema['const']!r}]"
        kind = schema.get("type")
        if kind == "array":
            return f"list[{self.type_of(schema.get('items', {}), hint)}]"
        if kind == "object":
            if "properties" in schema:
                return self.define(schema.get("title", hint), schema)
            extra = schema.get("additionalProperties")
            value = self.type_of(extra, hint) if isinstance(extra, dict) else "Any"
            return f"dict[str, {value}]"
        return {
            "string": "str",
            "integer": "int",
            "number": "float",
            "boolean": "bool",
            "null": "None",
        }.get(str(kind), "Any")

    def define(self, name: str, schema: dict[str, Any]) -> str:
        cls = re.sub(r"\W", "", name[:1].upper() + name[1:].replace(" ", "")) or "Model"
        if " " in name:
            cls = "".join(w[:1].upper() + w[1:] for w in name.split())
        if cls in self.classes:
            return cls
        self.classes[cls] = ""  # reserve (recursive references)
        lines = [f"class {cls}(TypedDict, total=False):"]
        for prop, sub in (schema.get("properties") or {}).items():
            field = prop if prop.isidentifier() and not keyword.iskeyword(prop) else None
            if field is None:
                continue
            lines.append(f"    {field}: {self.type_of(sub, cls + '_' + prop)}")
        if len(lines) == 1:
            lines.append("    pass")
        self.classes[cls] = "\n".join(lines)
        return cls


def generate() -> str:
    doc = openapi_document()
    gen = Generator(doc["components"]["schemas"])
    ops: list[str] = []
    identity: list[str] = []
    for item in doc["paths"].values():
        post = item["post"]
        name = post["operationId"]
        schema = post["responses"]["200"]["content"]["application/json"]["schema"]
        # Results are named after their op: several ops share an output class name.
        result = gen.define(name.replace(".", " ").replace("_", " ") + " Result", schema)
        ops.append(f"    {name!r}: ({post['x-loom-kind']!r}, {result}),")
        request = post["requestBody"]["content"]["application/json"]["schema"]
        taken = tuple(f for f in IDENTITY if f in (request.get("properties") or {}))
        identity.append(f"    {name!r}: {taken!r},")
    body = [HEADER]
    body += [gen.classes[c] + "\n" for c in sorted(gen.classes)]
    body.append(
        "# op name: (kind, result type); kinds read and idempotent are retried on 503\n"
        "OPS: dict[str, tuple[str, Any]] = {\n" + "\n".join(sorted(ops)) + "\n}\n"
    )
    body.append(
        "# op name: the identity fields its input takes; an Agent fills in only these\n"
        "IDENTITY: dict[str, tuple[str, ...]] = {\n" + "\n".join(sorted(identity)) + "\n}\n"
    )
    return "\n\n".join(body)


if __name__ == "__main__":
    sys.stdout.write(generate())
