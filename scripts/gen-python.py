#!/usr/bin/env python3
"""Write the Python package's typed surface from the operation catalogue's schemas.

The catalogue (crates/mnemon/src/ops) describes every operation with a JSON Schema for its
request and its response; docs/openapi.json carries them (a Rust test keeps it equal to what
the build serves). From it this script writes, under crates/python/python/mnemon/:

- ``_types.py``: a ``TypedDict`` for every response (records in answers typed as
  :class:`mnemon.Record` or :class:`mnemon.Hit`, as the package returns them), a ``Literal``
  for every enumeration, and ``OperationName``;
- ``_groups.py``: the domain groups (``ns.tasks``, ``ns.decisions``...), sync and async, one
  method per row of ``GROUPS`` below: its parameters, their types and defaults, its docstring
  and its return type read from the operation's schemas;
- ``_native.pyi``: the extension module's stub.

``GROUPS`` is the only thing written by hand: which operation a method calls, which
parameters come first, which are renamed or fixed. Run it after changing an operation
(``python3 scripts/gen-python.py``); ``--check`` fails when a file is stale (``.ci/run``).
"""

from __future__ import annotations

import argparse
import ast
import json
import keyword
import pathlib
import re
import sys
import textwrap
from typing import Any, Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "docs" / "openapi.json"
PACKAGE = ROOT / "crates" / "python" / "python" / "mnemon"
HEADER = "# Written by scripts/gen-python.py (python3 scripts/gen-python.py): do not edit by hand.\n"
WIDTH = 100


class M:
    """One method of a group: ``name`` calls operation ``op``.

    ``pos``: the parameters that may be given by position, in order (the rest are keywords);
    ``fixed``: arguments the method always passes (its docstring then says what they mean);
    ``rename``: Python name -> the operation's field; ``ids``: fields that are record ids
    besides ``id``; ``defaults``: Python defaults that differ from the operation's; ``omit``:
    optional fields the method does not offer (they mean nothing with its fixed arguments).
    """

    def __init__(self, name: str, op: str, *pos: str, fixed: Optional[Dict[str, Any]] = None,
                 rename: Optional[Dict[str, str]] = None, ids: Tuple[str, ...] = (),
                 defaults: Optional[Dict[str, Any]] = None, omit: Tuple[str, ...] = ()):
        self.name, self.op, self.pos, self.omit = name, op, pos, set(omit)
        self.fixed = fixed or {}
        self.rename = rename or {}
        self.ids = set(ids) | {"id", "ids"}
        self.defaults = defaults or {}


# The groups: (class, what it holds, its methods). Methods written by hand (sugar over
# ``Namespace.add``) live in _sugar.py and are mixed in.
GROUPS: List[Tuple[str, str, List[M]]] = [
    ("Tasks", "Tasks with statuses, priorities, dependencies and their history.", [
        M("start", "task", "id", fixed={"action": "start"}, omit=("reason",)),
        M("complete", "task", "id", fixed={"action": "complete"}, omit=("reason",)),
        M("plan", "task", "id", fixed={"action": "plan"}, omit=("reason",)),
        M("block", "task", "id", "reason", fixed={"action": "block"}),
        M("unblock", "task", "id", fixed={"action": "unblock"}, omit=("reason",)),
        M("cancel", "task", "id", "reason", fixed={"action": "cancel"}),
        M("move", "task", "id", "action", "reason"),
        M("depend", "task_depend", "id", "on", ids=("on",)),
        M("can_start", "task_can_start", "id"),
        M("graph", "task_graph"),
        M("list", "task_list"),
    ]),
    ("Decisions", "Decisions: their status, what superseded them, the tasks they drive.", [
        M("set_status", "decision_status", "id", "status"),
        M("accept", "decision_status", "id", fixed={"status": "accepted"}),
        M("reject", "decision_status", "id", fixed={"status": "rejected"}),
        M("deprecate", "decision_status", "id", fixed={"status": "deprecated"}),
        M("propose", "decision_status", "id", fixed={"status": "proposed"}),
        M("active", "decision_active"),
        M("link", "link", "decision", "task", ids=("decision", "task")),
    ]),
    ("Entities", "Entities (people, services, components), their facts, mentions and relations.", [
        M("ensure", "entity_ensure", "name", "entity_type", "description"),
        M("find", "entity_find", "name"),
        M("mention", "entity_mention", "id", "source", "context"),
        M("set", "entity_set", "id", "key", "value"),
        M("link", "entity_link", "a", "b", ids=("a", "b")),
        M("merge", "entity_merge", "keep", "absorb", ids=("keep", "absorb")),
        M("by_type", "entity_by_type", "entity_type"),
    ]),
    ("Episodes", "Episodes: what an agent did, with their embeddings, access counts and pruning.", [
        M("store", "episode_store", "content"),
        M("query", "episode_query", "query"),
        M("context", "episode_context", "task"),
        M("access", "episode_access", "id"),
        M("prune", "episode_prune"),
    ]),
    ("Memory", "Scoped memory (global, ``project:PATH``, ``agent:NAME``): learnings, errors, patterns, "
               "preferences and briefs, as the assistant-memory design keeps them.", [
        M("add", "memory_add", "content"),
        M("show", "memory_show"),
        M("context", "memory_context", "query", rename={"budget": "budget_tokens"}),
        M("brief", "memory_brief", "text"),
        M("projects", "memory_projects"),
        M("delete", "memory_delete", "id"),
        M("prune", "memory_prune"),
        M("clear", "memory_clear"),
        M("import_markdown", "memory_import", "markdown"),
        M("import_graph", "memory_import_graph", "jsonl"),
    ]),
    ("Knowledge", "An agent's role knowledge: learned, reinforced, pruned.", [
        M("learn", "knowledge_learn", "category", "content"),
        M("reinforce", "knowledge_reinforce", "id"),
        M("list", "knowledge_list", "category"),
        M("prune", "knowledge_prune", "before"),
    ]),
    ("Conversations", "Conversations and their messages.", [
        M("start", "conversation_start", "title"),
        M("add", "conversation_add", "id", "role", "content"),
        M("end", "conversation_end", "id", "summary"),
        M("show", "conversation_show", "id"),
        M("recent", "conversation_recent", "limit"),
    ]),
    ("Project", "A project's patterns, gotchas, component relations and learnings.", [
        M("pattern", "project_pattern", "pattern"),
        M("patterns", "project_patterns", "category"),
        M("gotcha", "project_gotcha", "gotcha"),
        M("gotchas", "project_gotchas", "severity"),
        M("relate", "project_relate", "from_", "relation", "to", "description"),
        M("relations", "project_relations", "component"),
        M("learn", "project_learn", "text"),
        M("learnings", "project_learnings", "limit"),
        M("search", "project_search", "query", "limit"),
        M("knowledge", "project_knowledge"),
    ]),
    ("Agent", "An agent's preferences, completions, errors and performance.", [
        M("prefer", "agent_prefer", "preferences"),
        M("preferences", "agent_preferences", "defaults"),
        M("completed", "agent_completed", "task", defaults={"iterations": 1, "quality_gate_passed": True}),
        M("error", "agent_error", "pattern", "resolution"),
        M("performance", "agent_performance"),
        M("context", "agent_context"),
    ]),
    ("Vectors", "Embeddings you bring: attach them to records and search them by vector.", [
        M("put", "vector_put", "id", "space", "vector"),
        M("search", "vector_search", "space", "vector", defaults={"k": 10}),
    ]),
]

# The methods of ``Namespace`` and ``Db`` (in _db.py) that ``AsyncNamespace`` and ``AsyncDb``
# offer as coroutines with the same signature (``list`` and ``watch`` are async iterators, by
# hand, in _async.py).
FORWARDED = {
    "Namespace": ["call", "add", "add_many", "revise", "supersede", "retire", "expire", "forget", "erase", "get",
                  "get_many", "history", "chain", "tagged", "stats", "changes", "search", "context"],
    "Db": ["export", "import_", "stats", "close"],  # `sync` is AsyncDb's blocking handle; `flush` syncs
}

# Fields that are times wherever they appear (a datetime, a date or an ISO string).
TIMES = {"as_of", "known_at", "at", "before", "valid_from", "valid_until"}
# Names the package gives its own classes: a response schema of that name gets another.
TAKEN = {"Record", "Hit", "Change", "Context", "Id", "Time", "Any"} | {g[0] for g in GROUPS}


def lit(value: Any) -> str:
    """``value`` as Python source, strings in double quotes."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def shape(schema: Dict[str, Any]) -> str:
    """What makes two schemas one Python type: everything but their title and top description."""
    return json.dumps({k: v for k, v in schema.items() if k not in ("description", "title")}, sort_keys=True)


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[_\W]+", name) if p)


def sentence(text: Optional[str]) -> str:
    return " ".join((text or "").split())


def is_record(schema: Dict[str, Any]) -> Optional[str]:
    """``Record`` or ``Hit`` when the package turns values of this schema into that class
    (the rule of ``_values.wrap``)."""
    props = schema.get("properties", {})
    if {"id", "kind", "body", "recorded_at"} <= set(props):
        return "Hit" if "score" in props else "Record"
    return None


class Types:
    """The Python types of the schemas, written out as they are first needed."""

    def __init__(self, components: Dict[str, Any]):
        self.components = components
        self.names: Dict[str, str] = {}  # component name -> Python name
        self.used: Dict[str, str] = {}  # Python name -> component (or inline key)
        self.defs: List[str] = []  # class and alias definitions, in order
        self.mentioned: set = set()  # names the groups' signatures use
        self.kinds = components["Record"]["properties"]["kind"]["enum"]

    def fresh(self, wanted: str, key: str) -> str:
        name = wanted if wanted not in TAKEN else wanted + "Dict"
        n = 2
        while name in self.used and self.used[name] != key:
            name = f"{wanted}{n}"
            n += 1
        self.used[name] = key
        return name

    def component(self, comp: str) -> str:
        if comp in self.names:
            return self.names[comp]
        schema = self.components[comp]
        key = shape(schema)
        same = [n for n, k in self.used.items() if k == key]
        if same and not is_record(schema):
            self.names[comp] = same[0]
            return same[0]
        schema = self.components[comp]
        record = is_record(schema)
        if record:
            self.names[comp] = record
            return record
        if "oneOf" in schema and all("const" in v for v in schema["oneOf"]):
            name = self.fresh(comp, comp)
            self.names[comp] = name
            values = ", ".join(json.dumps(v["const"]) for v in schema["oneOf"])
            doc = "; ".join(f"``{v['const']}``: {sentence(v.get('description'))}" for v in schema["oneOf"])
            self.defs.append(f"{name} = Literal[{values}]\n" + comment(doc))
            return name
        if schema.get("type") == "object" and "properties" in schema:
            name = self.fresh(schema.get("title") or comp, shape(schema))
            self.names[comp] = name
            self.typed_dict(name, schema)
            return name
        name = self.fresh(comp, comp)
        self.names[comp] = name
        self.defs.append(f"{name} = {self.of(schema, comp)}\n")
        return name

    def of(self, schema: Dict[str, Any], context: str) -> str:
        """The Python type of ``schema`` (``context`` names inline objects)."""
        if not schema:
            return "Any"
        if "$ref" in schema:
            return self.component(ref_name(schema["$ref"]))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                parts = [p for p in schema[key] if p.get("type") != "null"]
                nullable = len(parts) < len(schema[key])
                if all("const" in p for p in parts):
                    inner = "Literal[" + ", ".join(json.dumps(p["const"]) for p in parts) + "]"
                else:
                    kinds = [self.of(p, context) for p in parts]
                    inner = kinds[0] if len(kinds) == 1 else "Union[" + ", ".join(kinds) + "]"
                return f"Optional[{inner}]" if nullable else inner
        types = schema.get("type")
        nullable = isinstance(types, list) and "null" in types
        if isinstance(types, list):
            types = [t for t in types if t != "null"]
            types = types[0] if len(types) == 1 else types
        if "enum" in schema:
            inner = "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"] if v is not None) + "]"
            if schema["enum"] == self.kinds:
                if "Kind" not in self.used:
                    self.used["Kind"] = "kind"
                    values = "".join(f"    {json.dumps(v)},\n" for v in schema["enum"])
                    self.defs.append(f"Kind = Literal[\n{values}]\n" + comment("What sort of memory a record is."))
                inner = "Kind"
        elif isinstance(types, list):
            inner = "Any"
        elif types == "string":
            inner = "str"
        elif types == "integer":
            inner = "int"
        elif types == "number":
            inner = "float"
        elif types == "boolean":
            inner = "bool"
        elif types == "array":
            if "prefixItems" in schema.get("items", {}) or "prefixItems" in schema:
                tup = schema.get("items", schema)
                if "prefixItems" in schema:
                    inner = "Tuple[" + ", ".join(self.of(p, context) for p in schema["prefixItems"]) + "]"
                else:
                    inner = "List[Tuple[" + ", ".join(self.of(p, context) for p in tup["prefixItems"]) + "]]"
            else:
                inner = f"List[{self.of(schema.get('items', {}), context)}]"
        elif types == "object":
            if schema.get("properties"):
                key = shape(schema)
                known = [n for n, k in self.used.items() if k == key]
                if known:
                    inner = known[0]
                else:
                    inner = self.fresh(schema.get("title") or camel(context), key)
                    self.typed_dict(inner, schema)
            else:
                extra = schema.get("additionalProperties")
                value = self.of(extra, context) if isinstance(extra, dict) else "Any"
                inner = f"Dict[str, {value}]"
        else:
            inner = "Any"
        return f"Optional[{inner}]" if nullable else inner

    def typed_dict(self, name: str, schema: Dict[str, Any]) -> None:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fields = {k: self.of(v, f"{name}_{k}") for k, v in props.items()}
        docs = {k: sentence(v.get("description")) for k, v in props.items()}
        doc = sentence(schema.get("description")) or f"The answer ``{name}``."

        def body(keys: List[str]) -> str:
            lines = []
            for k in keys:
                if docs[k]:
                    lines.append(comment(docs[k], "    #: "))
                lines.append(f"    {k}: {fields[k]}\n")
            return "".join(lines)

        req = [k for k in props if k in required]
        opt = [k for k in props if k not in required]
        bad = [k for k in props if not k.isidentifier() or keyword.iskeyword(k)]
        if bad:
            raise SystemExit(f"{name}: fields {bad} are not Python names; give the schema a title")
        docstring = docblock(doc, "    ")
        if opt and req:
            base = f"_{name}Required"
            self.defs.append(f"class {base}(TypedDict):\n{body(req)}")
            self.defs.append(f"class {name}({base}, total=False):\n{docstring}{body(opt)}")
        elif opt:
            self.defs.append(f"class {name}(TypedDict, total=False):\n{docstring}{body(opt)}")
        else:
            self.defs.append(f"class {name}(TypedDict):\n{docstring}{body(req) or '    pass' + chr(10)}")


def comment(text: str, prefix: str = "#: ") -> str:
    return "".join(f"{line}\n" for line in textwrap.wrap(text, WIDTH - len(prefix), initial_indent=prefix,
                                                          subsequent_indent=prefix))


def docblock(text: str, indent: str) -> str:
    """A docstring of ``text`` (paragraphs separated by blank lines) at ``indent``."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    paras = [p for p in text.split("\n\n")]
    out: List[str] = []
    for i, p in enumerate(paras):
        if p.startswith("Args:"):
            out.append(f"{indent}Args:\n" + "".join(
                textwrap.fill(line, WIDTH, initial_indent=indent + "    ", subsequent_indent=indent + "        ") + "\n"
                for line in p.split("\n")[1:]))
            continue
        first = i == 0
        wrapped = textwrap.fill(sentence(p), WIDTH, initial_indent=indent + ('"""' if first else ""),
                                subsequent_indent=indent)
        out.append(wrapped + "\n")
    if len(out) == 1 and out[0].count("\n") == 1 and len(out[0]) + 3 <= WIDTH:
        return out[0][:-1] + '"""\n'
    return "\n".join(out) + f'{indent}"""\n'


class Param:
    def __init__(self, py: str, field: str, schema: Dict[str, Any], required: bool, method: M, types: Types):
        self.py, self.field, self.schema, self.required = py, field, schema, required
        self.doc = sentence(schema.get("description"))
        plain = types.of(schema, field)
        is_array = plain.startswith("List[") or plain.startswith("Optional[List[")
        if field in method.ids:
            self.type = "Sequence[Id]" if is_array else "Id"
            self.convert = (f"[id_arg(v, {lit(field)}) for v in {py}]" if is_array else f"id_arg({py}, {lit(field)})")
        elif field in TIMES:
            self.type = "Time"
            self.convert = f"time_arg({lit(field)}, {py})"
        elif is_array:
            item = plain[len("Optional["):-1] if plain.startswith("Optional[") else plain
            item = item[len("List["):-1]
            if item in ("float", "int"):
                self.type = f"Sequence[{item}]"
                self.convert = f"[{item}(x) for x in {py}]"
            elif item == "str" or item.startswith("Literal[") or item[:1].isupper() and item in types.names.values() \
                    and item not in ("Record", "Hit"):
                self.type = f"Union[{item}, Sequence[{item}]]"
                self.convert = f"strings({lit(field)}, {py})"
            else:
                self.type = f"Sequence[{item}]"
                self.convert = f"list({py})"
        elif plain.startswith("Dict[") or plain.startswith("Optional[Dict["):
            self.type = "Mapping[str, Any]"
            self.convert = f"dict({py})"
        else:
            self.type = plain[len("Optional["):-1] if plain.startswith("Optional[") else plain
            self.convert = py
        self.array = is_array
        if py in method.defaults:
            self.default: Optional[str] = lit(method.defaults[py])
        elif required:
            self.default = None
        else:
            self.default = "None"
        if self.default == "None":
            self.type = f"Optional[{self.type}]"
            if self.convert != py and not self.convert.startswith(("time_arg(", "strings(")):
                self.convert = f"None if {py} is None else {self.convert}"

    def signature(self) -> str:
        return f"{self.py}: {self.type}" + ("" if self.default is None else f" = {self.default}")


def method_params(m: M, request: Dict[str, Any], types: Types) -> List[Param]:
    props = request.get("properties", {})
    required = set(request.get("required", []))
    field_of = {py: f for py, f in m.rename.items()}
    py_of = {f: py for py, f in field_of.items()}
    params = []
    for field, schema in props.items():
        if field == "namespace" or field in m.fixed or field in m.omit:
            if field in m.omit and field in required:
                raise SystemExit(f"{m.op}: {m.name} omits {field!r}, which the request requires")
            continue
        py = py_of.get(field, field + "_" if keyword.iskeyword(field) else field)
        params.append(Param(py, field, schema, field in required, m, types))
    names = {p.py for p in params}
    for p in m.pos:
        if p not in names:
            raise SystemExit(f"{m.op}: the method {m.name} names {p!r}, which the request does not have")
    for f in m.fixed:
        if f not in props:
            raise SystemExit(f"{m.op}: {m.name} fixes {f!r}, which the request does not have")
    return params


def fixed_doc(m: M, request: Dict[str, Any], types: Types) -> str:
    """What the fixed arguments mean, from their enumeration's descriptions."""
    parts = []
    for field, value in m.fixed.items():
        schema = request["properties"][field]
        target = types.components.get(ref_name(schema.get("$ref", "")), schema)
        for v in target.get("oneOf", []):
            if v.get("const") == value and v.get("description"):
                parts.append(sentence(v["description"]))
    return " ".join(parts)


def split_args(text: str) -> List[str]:
    """The top-level comma-separated parts of an argument list."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def write_method(cls: str, m: M, op: Dict[str, Any], types: Types, components: Dict[str, Any]) -> Tuple[str, str]:
    request = components[f"{m.op}_request"]
    result = types.component(f"{m.op}_response")
    params = method_params(m, request, types)
    by_py = {p.py: p for p in params}
    positional = [by_py[p] for p in m.pos]
    keywords = [p for p in params if p.py not in m.pos]
    keywords.sort(key=lambda p: (p.default is not None, p.py))
    sig = ["self"] + [p.signature() for p in positional]
    if keywords:
        sig += ["*"] + [p.signature() for p in keywords]
    fixed = fixed_doc(m, request, types)
    described = sentence(op["description"])
    call = f"operation ``{m.op}``" + "".join(f", {k} ``{v}``" for k, v in m.fixed.items())
    first = f"{fixed.rstrip('.')} ({call})." if fixed else f"{described.rstrip('.')} ({call})."
    doc = [first]
    if fixed and described:
        doc.append(described)
    args = [p for p in positional + keywords if p.doc]
    if args:
        doc.append("Args:\n" + "\n".join(f"{p.py}: {p.doc}" for p in args))
    pieces = [f"{k}={lit(v)}" for k, v in m.fixed.items()] + [f"{p.field}={p.convert}" for p in params
                                                            if p.field.isidentifier() and not keyword.iskeyword(p.field)]
    odd = {p.field: p.convert for p in params if not (p.field.isidentifier() and not keyword.iskeyword(p.field))}
    call_args = ", ".join([lit(m.op)] + pieces + ([f"**{{{', '.join(f'{lit(k)}: {v}' for k, v in odd.items())}}}"]
                                                    if odd else []))
    if len(call_args) + 28 > WIDTH:
        call_args = "\n" + "".join(f"            {a},\n" for a in split_args(call_args)) + "        "
    def head(word: str) -> str:
        line = f"    {word} {m.name}({', '.join(sig)}) -> {result}:\n"
        if len(line) > WIDTH + 1:
            line = f"    {word} {m.name}(\n" + "".join(f"        {s},\n" for s in sig) + f"    ) -> {result}:\n"
        types.mentioned.update(re.findall(r"[A-Za-z_]\w*", line))
        return line

    sync = head("def") + docblock("\n\n".join(doc), "        ") + f"        return self._call({call_args})\n"
    forward = ", ".join([f"self._sync.{m.name}"] + [p.py for p in positional] + [f"{p.py}={p.py}" for p in keywords])
    if len(forward) + 30 > WIDTH:
        forward = "\n" + "".join(f"            {a},\n" for a in split_args(forward)) + "        "
    adoc = docblock(f"Coroutine of :meth:`{cls}.{m.name}`: {first}", "        ")
    return sync, head("async def") + adoc + f"        return await _run({forward})\n"


def forwarders() -> str:
    """``_forward.py``: coroutine twins of the methods of ``FORWARDED``, their signatures and
    docstrings read from _db.py."""
    tree = ast.parse((PACKAGE / "_db.py").read_text())
    origin: Dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 1:
            for a in node.names:
                origin[a.asname or a.name] = "." + node.module
        elif isinstance(node, ast.ImportFrom) and node.module == "typing":
            for a in node.names:
                origin[a.name] = "typing"
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    origin[t.id] = "._db"
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    used: set = set()
    out = []
    for cls, names in FORWARDED.items():
        funcs = {f.name: f for f in classes[cls].body if isinstance(f, ast.FunctionDef)}
        methods = []
        for name in names:
            f = funcs.get(name)
            if f is None:
                raise SystemExit(f"_db.py: {cls} has no method {name!r} to forward")
            a = f.args
            params, forward = ["self"], []
            defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)

            def one(arg: ast.arg, default: Optional[ast.expr]) -> str:
                text = arg.arg
                if arg.annotation is not None:
                    text += ": " + ast.unparse(arg.annotation)
                    used.update(re.findall(r"[A-Za-z_]\w*", ast.unparse(arg.annotation)))
                if default is not None:
                    text += (" = " if arg.annotation is not None else "=") + ast.unparse(default)
                return text

            for arg, default in list(zip(a.args, defaults))[1:]:
                params.append(one(arg, default))
                forward.append(arg.arg)
            if a.vararg:
                params.append("*" + one(a.vararg, None))
                forward.append("*" + a.vararg.arg)
            elif a.kwonlyargs:
                params.append("*")
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                params.append(one(arg, default))
                forward.append(f"{arg.arg}={arg.arg}")
            if a.kwarg:
                params.append("**" + one(a.kwarg, None))
                forward.append("**" + a.kwarg.arg)
            ret = ast.unparse(f.returns) if f.returns is not None else "None"
            used.update(re.findall(r"[A-Za-z_]\w*", ret))
            line = f"    async def {name}({', '.join(params)}) -> {ret}:\n"
            if len(line) > WIDTH + 1:
                line = f"    async def {name}(\n" + "".join(f"        {p},\n" for p in params) + f"    ) -> {ret}:\n"
            doc = ast.get_docstring(f) or ""
            body = textwrap.indent(f":meth:`mnemon.{cls}.{name}` as a coroutine.\n\n{doc}", "        ").rstrip()
            call = ", ".join([f"self._sync.{name}"] + forward)
            if len(call) + 30 > WIDTH:
                call = "\n" + "".join(f"            {a},\n" for a in split_args(call)) + "        "
            methods.append(f'{line}        """{body.lstrip()}\n        """\n        return await _run({call})\n')
        out.append(f"class Async{cls}Methods:\n"
                   f'    """The coroutine methods of :class:`mnemon.Async{cls}`."""\n\n'
                   f"    __slots__ = ()\n    _sync: {cls}\n\n" + "\n".join(methods))
    imports: Dict[str, List[str]] = {}
    for n in sorted(used | set(FORWARDED)):
        module = origin.get(n, "._db" if n in FORWARDED else None)
        if module:
            imports.setdefault(module, []).append(n)
    lines = [f"from {m} import {', '.join(ns)}\n" for m, ns in sorted(imports.items()) if m == "typing"]
    lines += [f"from {m} import {', '.join(ns)}\n" for m, ns in sorted(imports.items()) if m != "typing"]
    return (HEADER + '"""The coroutine twins of :class:`mnemon.Namespace`\'s and :class:`mnemon.Db`\'s methods, for\n'
            ':class:`mnemon.AsyncNamespace` and :class:`mnemon.AsyncDb` (each runs on a worker thread)."""\n\n'
            "from __future__ import annotations\n\n" + lines[0] + "\n" + "".join(lines[1:])
            + "from ._pool import run as _run\n\n\n" + "\n\n".join(out))


def generate() -> Dict[str, str]:
    doc = json.loads(SOURCE.read_text())
    components = doc["components"]["schemas"]
    ops: Dict[str, Dict[str, Any]] = {}
    for path, item in doc["paths"].items():
        m = re.fullmatch(r"/v1/ns/\{ns\}/ops/(\w+)", path)
        if m:
            post = dict(item["post"])
            post["description"] = post["description"].split("\n\nScope:")[0]
            ops[m.group(1)] = post
    types = Types(components)
    # Every response first, in name order, so that a group's order does not rename types.
    for name in sorted(ops):
        types.component(f"{name}_response")
    mixins = {n.name for n in ast.parse((PACKAGE / "_sugar.py").read_text()).body if isinstance(n, ast.ClassDef)}
    groups, agroups, sugar = [], [], []
    for cls, what, methods in GROUPS:
        sync_methods, async_methods = [], []
        for m in methods:
            if m.op not in ops:
                raise SystemExit(f"{cls}.{m.name}: no operation {m.op!r} in {SOURCE}")
            s, a = write_method(cls, m, ops[m.op], types, components)
            sync_methods.append(s)
            async_methods.append(a)
        mix = f"_sugar.{cls}Sugar, " if f"{cls}Sugar" in mixins else ""
        amix = f"_sugar.Async{cls}Sugar, " if f"Async{cls}Sugar" in mixins else ""
        groups.append(f"class {cls}({mix}_Group):\n{docblock(what, '    ')}\n    __slots__ = ()\n\n"
                      + "\n".join(sync_methods))
        agroups.append(f"class Async{cls}({amix}_AsyncGroup):\n"
                       + docblock(f":class:`{cls}` with coroutine methods: {what}", "    ")
                       + "\n    __slots__ = ()\n\n" + "\n".join(async_methods))
        sugar.append(cls)
    used = sorted({n for n in types.used} - {"Record", "Hit"})
    type_names = sorted(set(types.names.values()) | set(types.used))
    types_py = (HEADER + '"""The types of the operations\' answers, as the domain groups return them '
                "(records in them as\n:class:`mnemon.Record` and :class:`mnemon.Hit`), and the enumerations their "
                'arguments take."""\n\n'
                "from __future__ import annotations\n\n"
                "from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union\n\n"
                "from ._values import Hit, Record\n\n"
                "__all__ = [\n" + "".join(f"    {lit(n)},\n" for n in ["OperationName"] + used) + "]\n\n"
                + "OperationName = Literal[\n" + "".join(f"    {json.dumps(n)},\n" for n in sorted(ops)) + "]\n"
                + comment("The name of every operation (``mnemon.operations()``).") + "\n\n"
                + "\n\n".join(types.defs))
    # Record too: `Id` names it, and typing.get_type_hints resolves it here.
    values_names = ", ".join(sorted({"Id", "Record", "Time", "id_arg", "strings", "time_arg", "wrap"}
                                    | ({"Record", "Hit"} & types.mentioned), key=str.lower))
    imported = sorted(n for n in type_names if n not in ("Record", "Hit") and n in types.mentioned)
    groups_py = (HEADER + '"""The domain groups of a namespace: tasks, decisions, entities, episodes, scoped memory,\n'
                 "role knowledge, conversations, project knowledge, agent state and raw vectors, and their\n"
                 "coroutine twins. Each method is one operation of mnemon's operation layer (named in its\n"
                 'docstring); records in answers come back as :class:`mnemon.Record` objects."""\n\n'
                 "from __future__ import annotations\n\n"
                 "from typing import Any, Dict, Mapping, Optional, Sequence, Union\n\n"
                 "from . import _sugar\n"
                 "from ._pool import run as _run\n"
                 "from ._types import (\n" + "".join(f"    {n},\n" for n in imported) + ")\n"
                 f"from ._values import {values_names}\n\n"
                 "__all__ = [\n" + "".join(f"    {lit(n)},\n" for n in sugar + ["Async" + c for c in sugar]) + "]\n\n\n"
                 + GROUP_BASES + "\n\n" + "\n\n".join(groups) + "\n\n" + "\n\n".join(agroups))
    native_pyi = HEADER + NATIVE_PYI.replace("OPERATION_NAMES", "OperationName")
    return {"_types.py": types_py, "_groups.py": groups_py, "_native.pyi": native_pyi, "_forward.py": forwarders()}


GROUP_BASES = '''def _args(**kw: Any) -> Dict[str, Any]:
    """The arguments that were given (``None`` means: the operation's default)."""
    return {k: v for k, v in kw.items() if v is not None}


class _Group:
    __slots__ = ("_ns",)

    def __init__(self, ns: Any):
        self._ns = ns

    def _call(self, operation: str, **kw: Any) -> Any:
        return wrap(self._ns._raw(operation, _args(**kw)))

    def __repr__(self) -> str:
        return f"<{type(self).__name__.lower()} of {self._ns!r}>"


class _AsyncGroup:
    """A domain group whose methods are coroutines run on the package's worker threads."""

    __slots__ = ("_sync",)

    def __init__(self, group: Any):
        self._sync = group

    def __repr__(self) -> str:
        return f"mnemon.Async({self._sync!r})"
'''

NATIVE_PYI = '''"""The extension module: one handle on a file or a server, one call for every operation."""

from typing import Any, Dict, List, Optional, Tuple

from ._types import OperationName

VERSION: str

def model_dirs() -> List[Tuple[str, str, bool]]: ...
def register_model_dir(dir: str) -> None: ...

class Handle:
    def call(self, ns: str, op: str, args: Dict[str, Any]) -> Any: ...
    def export(self, path: str, ns: Optional[str] = None) -> int: ...
    def import_(self, path: str, ns: str, partial: bool = False) -> Dict[str, Any]: ...
    def sync(self) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def remote(self) -> bool: ...
    @property
    def target(self) -> str: ...
    @property
    def embedder(self) -> Optional[str]: ...

def open(
    path: str,
    *,
    embedder: Optional[str] = None,
    durability: str = "immediate",
    read_only: bool = False,
    create: bool = True,
    shared: bool = False,
    reembed: bool = False,
    embedder_fn: Any = None,
    embedder_name: Optional[str] = None,
    defer_embeddings: Optional[bool] = None,
) -> Handle: ...
def connect(url: str, *, token: Optional[str] = None, ca_cert: Optional[str] = None) -> Handle: ...
def operations() -> List[OPERATION_NAMES]: ...
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale; write nothing")
    args = parser.parse_args()
    stale = []
    for name, text in generate().items():
        path = PACKAGE / name
        old = path.read_text() if path.exists() else None
        if old != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(text)
    if args.check and stale:
        print("stale (run python3 scripts/gen-python.py): " + ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    for p in stale:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
