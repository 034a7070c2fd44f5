#!/usr/bin/env python3
"""Renders a crate's public API from rustdoc JSON as a sorted list, one item per line.

Usage: public_api.py CRATE.json > public-api/CRATE.txt

Walks the crate from its root module the way a user reaches items (modules and `pub use`
re-exports), and prints each public item with its path and signature: modules, structs with
their public fields, enums with their variants, traits with their items, functions, methods,
constants, type aliases, macros, and the trait impls of each type (auto traits included, since
losing `Send` is a breaking change; blanket impls left out, they follow from the others).
Re-exports of another crate's items print as `pub use PATH = ORIGIN` (that crate's own
snapshot covers the item). Written against rustdoc JSON format version 57 (Rust 1.95).
"""

import json
import sys

FORMAT_VERSIONS = {57}
# Auto traits whose loss breaks users (`Freeze` is compiler-internal).
AUTO_TRAITS = {"Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"}


class Renderer:
    def __init__(self, doc):
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.external_crates = doc["external_crates"]
        self.lines = set()
        # Item id -> the shortest public path it is reachable by (filled by a first walk).
        self.public = {}

    # ----- types -----

    def path_of(self, p):
        """A resolved path (type or trait) and its generic arguments: our items by their
        public path, other crates' items by their name."""
        public = self.public.get(p.get("id"))
        if public is not None:
            name = public
        elif str(p.get("id")) in self.paths:
            name = self.paths[str(p["id"])]["path"][-1]
        else:
            name = p["path"].split("::")[-1]
        return name + self.args(p.get("args"))

    def args(self, args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            ab = args["angle_bracketed"]
            parts = []
            for a in ab["args"]:
                if "lifetime" in a:
                    parts.append(a["lifetime"])
                elif "type" in a:
                    parts.append(self.ty(a["type"]))
                elif "const" in a:
                    parts.append(a["const"].get("expr", "_"))
                else:
                    parts.append("_")
            for c in ab.get("constraints", []):
                binding = c["binding"]
                if "equality" in binding:
                    eq = binding["equality"]
                    rhs = self.ty(eq["type"]) if "type" in eq else str(eq.get("constant"))
                    parts.append(f"{c['name']} = {rhs}")
                else:
                    parts.append(f"{c['name']}: {self.bounds(binding['constraint'])}")
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in args:
            par = args["parenthesized"]
            out = "(" + ", ".join(self.ty(t) for t in par["inputs"]) + ")"
            if par.get("output") is not None:
                out += " -> " + self.ty(par["output"])
            return out
        return "<..>"

    def bounds(self, bounds):
        out = []
        for b in bounds:
            if "trait_bound" in b:
                tb = b["trait_bound"]
                prefix = {"maybe": "?", "maybe_const": "~const "}.get(tb.get("modifier"), "")
                hrtb = self.hrtb(tb.get("generic_params", []))
                out.append(hrtb + prefix + self.path_of(tb["trait"]))
            elif "outlives" in b:
                out.append(b["outlives"])
            elif "use" in b:
                out.append("use<..>")
        return " + ".join(out)

    def hrtb(self, params):
        if not params:
            return ""
        return "for<" + ", ".join(p["name"] for p in params) + "> "

    def ty(self, t):
        if t is None:
            return "()"
        (kind, v), = t.items()
        if kind == "resolved_path":
            return self.path_of(v)
        if kind == "generic" or kind == "primitive":
            return v
        if kind == "borrowed_ref":
            lt = v["lifetime"] + " " if v.get("lifetime") else ""
            mut = "mut " if v["is_mutable"] else ""
            return f"&{lt}{mut}{self.ty(v['type'])}"
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "tuple":
            inner = ", ".join(self.ty(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if kind == "slice":
            return f"[{self.ty(v)}]"
        if kind == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "dyn_trait":
            parts = [self.hrtb(p.get("generic_params", [])) + self.path_of(p["trait"])
                     for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind == "function_pointer":
            sig = v["sig"]
            ins = ", ".join(self.ty(x[1]) for x in sig["inputs"])
            out = " -> " + self.ty(sig["output"]) if sig.get("output") is not None else ""
            return f"{self.hrtb(v.get('generic_params', []))}fn({ins}){out}"
        if kind == "qualified_path":
            self_ty = self.ty(v["self_type"])
            if v.get("trait"):
                return f"<{self_ty} as {self.path_of(v['trait'])}>::{v['name']}"
            return f"{self_ty}::{v['name']}"
        if kind == "infer":
            return "_"
        return f"<{kind}>"

    # ----- generics and signatures -----

    def generics(self, g):
        params = []
        for p in g["params"]:
            k = p["kind"]
            if "lifetime" in k:
                out = k["lifetime"].get("outlives", [])
                params.append(p["name"] + (": " + " + ".join(out) if out else ""))
            elif "type" in k:
                if k["type"].get("is_synthetic"):
                    continue
                b = self.bounds(k["type"]["bounds"])
                d = k["type"].get("default")
                params.append(p["name"] + (": " + b if b else "") +
                              (" = " + self.ty(d) if d else ""))
            elif "const" in k:
                params.append(f"const {p['name']}: {self.ty(k['const']['type'])}")
        return "<" + ", ".join(params) + ">" if params else ""

    def where_clause(self, g):
        preds = []
        for w in g["where_predicates"]:
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                preds.append(self.hrtb(bp.get("generic_params", [])) + self.ty(bp["type"]) +
                             ": " + self.bounds(bp["bounds"]))
            elif "lifetime_predicate" in w:
                lp = w["lifetime_predicate"]
                preds.append(lp["lifetime"] + ": " + " + ".join(lp["outlives"]))
            elif "eq_predicate" in w:
                ep = w["eq_predicate"]
                rhs = ep["rhs"]
                rhs = self.ty(rhs["type"]) if "type" in rhs else str(rhs.get("constant"))
                preds.append(self.ty(ep["lhs"]) + " = " + rhs)
        return " where " + ", ".join(preds) if preds else ""

    def function(self, name, f):
        h = f["header"]
        quals = ("const " if h["is_const"] else "") + ("async " if h["is_async"] else "") + \
                ("unsafe " if h["is_unsafe"] else "")
        sig = f["sig"]
        ins = []
        for arg_name, t in sig["inputs"]:
            if arg_name == "self":
                rendered = self.ty(t)
                ins.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}
                           .get(rendered, "self: " + rendered))
            else:
                ins.append(f"{arg_name}: {self.ty(t)}")
        out = " -> " + self.ty(sig["output"]) if sig.get("output") is not None else ""
        return (f"{quals}fn {name}{self.generics(f['generics'])}({', '.join(ins)}){out}"
                f"{self.where_clause(f['generics'])}")

    # ----- items -----

    def attrs(self, item):
        return "#[non_exhaustive] " if "non_exhaustive" in item.get("attrs", []) else ""

    def emit(self, line):
        self.lines.add(line)

    def walk_module(self, mod_id, prefix, seen):
        for child in self.index[str(mod_id)]["inner"]["module"]["items"]:
            self.item(child, prefix, seen)

    def item(self, item_id, prefix, seen, name=None):
        item = self.index.get(str(item_id))
        if item is None:
            return
        inner = item["inner"]
        kind = next(iter(inner))
        if kind == "use":
            self.use(item, inner["use"], prefix, seen)
            return
        if item["visibility"] != "public" and kind not in ("variant", "struct_field"):
            return
        name = name or item["name"]
        path = f"{prefix}::{name}"
        key = (item_id, path)
        if key in seen:
            return
        seen = seen | {key}
        known = self.public.get(item_id)
        if known is None or (len(path), path) < (len(known), known):
            self.public[item_id] = path
        v = inner[kind]
        if kind == "module":
            self.emit(f"pub mod {path}")
            self.walk_module(item_id, path, seen)
        elif kind == "struct":
            g = v["generics"]
            head = f"{self.attrs(item)}pub struct {path}{self.generics(g)}"
            sk = v["kind"]
            if sk == "unit":
                self.emit(head + ";")
            elif "tuple" in sk:
                fields = ["_" if f is None else "pub " + self.ty(self.index[str(f)]["inner"]
                                                                  ["struct_field"])
                          for f in sk["tuple"]]
                self.emit(f"{head}({', '.join(fields)}){self.where_clause(g)}")
            else:
                self.emit(head + self.where_clause(g))
                for f in sk["plain"]["fields"]:
                    fi = self.index[str(f)]
                    self.emit(f"pub {path}::{fi['name']}: {self.ty(fi['inner']['struct_field'])}")
            self.impls(path, v["impls"])
        elif kind == "enum":
            g = v["generics"]
            self.emit(f"{self.attrs(item)}pub enum {path}{self.generics(g)}"
                      f"{self.where_clause(g)}")
            for var in v["variants"]:
                self.variant(path, self.index[str(var)])
            self.impls(path, v["impls"])
        elif kind == "union":
            self.emit(f"pub union {path}{self.generics(v['generics'])}")
            self.impls(path, v["impls"])
        elif kind == "trait":
            unsafe = "unsafe " if v["is_unsafe"] else ""
            sup = ": " + self.bounds(v["bounds"]) if v["bounds"] else ""
            g = v["generics"]
            self.emit(f"pub {unsafe}trait {path}{self.generics(g)}{sup}{self.where_clause(g)}")
            for assoc in v["items"]:
                self.assoc(path, self.index[str(assoc)], in_trait=True)
        elif kind == "function":
            self.emit(f"pub {self.function(path, v)}")
        elif kind == "constant":
            self.emit(f"pub const {path}: {self.ty(v['type'])}")
        elif kind == "static":
            mut = "mut " if v["is_mutable"] else ""
            self.emit(f"pub static {mut}{path}: {self.ty(v['type'])}")
        elif kind == "type_alias":
            g = v["generics"]
            self.emit(f"pub type {path}{self.generics(g)} = {self.ty(v['type'])}")
        elif kind == "macro":
            self.emit(f"macro {path}!")
        elif kind == "proc_macro":
            self.emit(f"proc-macro {path}")
        else:
            self.emit(f"pub {kind} {path}")

    def use(self, item, use, prefix, seen):
        target = use.get("id")
        if use["is_glob"]:
            if target is not None and str(target) in self.index:
                t = self.index[str(target)]
                if "module" in t["inner"]:
                    self.walk_module(target, prefix, seen)
                elif "enum" in t["inner"]:
                    for var in t["inner"]["enum"]["variants"]:
                        vi = self.index[str(var)]
                        self.emit(f"pub use {prefix}::{vi['name']}")
            else:
                self.emit(f"pub use {prefix}::* = {use['source']}::*")
            return
        if target is not None and str(target) in self.index:
            self.item(target, prefix, seen, name=use["name"])
        else:
            # As written in the `pub use` (a public path; `paths` would name the defining
            # module, which may be private).
            origin = use["source"]
            crates = {c["name"] for c in self.external_crates.values()}
            if origin.split("::")[0] not in crates and str(target) in self.paths:
                # A re-export of a re-export: name the item where it is defined.
                origin = "::".join(self.paths[str(target)]["path"])
            self.emit(f"pub use {prefix}::{use['name']} = {origin}")

    def variant(self, path, var):
        v = var["inner"]["variant"]
        k = v["kind"]
        vpath = f"{path}::{var['name']}"
        attrs = self.attrs(var)
        if k == "plain":
            disc = f" = {v['discriminant']['expr']}" if v.get("discriminant") else ""
            self.emit(f"{attrs}{vpath}{disc}")
        elif "tuple" in k:
            fields = ["_" if f is None else self.ty(self.index[str(f)]["inner"]["struct_field"])
                      for f in k["tuple"]]
            self.emit(f"{attrs}{vpath}({', '.join(fields)})")
        elif "struct" in k:
            self.emit(f"{attrs}{vpath} {{ .. }}")
            for f in k["struct"]["fields"]:
                fi = self.index[str(f)]
                self.emit(f"{vpath}::{fi['name']}: {self.ty(fi['inner']['struct_field'])}")

    def assoc(self, path, it, in_trait):
        inner = it["inner"]
        kind = next(iter(inner))
        v = inner[kind]
        vis = "" if in_trait else "pub "
        if not in_trait and it["visibility"] != "public":
            return
        if kind == "function":
            provided = " { .. }" if in_trait and v["has_body"] else ""
            self.emit(f"{vis}{self.function(path + '::' + it['name'], v)}{provided}")
        elif kind == "assoc_const":
            self.emit(f"{vis}const {path}::{it['name']}: {self.ty(v['type'])}")
        elif kind == "assoc_type":
            b = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            t = " = " + self.ty(v["type"]) if v.get("type") else ""
            self.emit(f"{vis}type {path}::{it['name']}{b}{t}")

    def impls(self, path, impl_ids):
        for impl_id in impl_ids:
            imp = self.index[str(impl_id)]["inner"]["impl"]
            if imp.get("blanket_impl") is not None:
                continue
            g = imp["generics"]
            if imp["trait"] is None:
                for assoc in imp["items"]:
                    self.assoc(path, self.index[str(assoc)], in_trait=False)
                continue
            if imp["is_synthetic"] and imp["trait"]["path"] not in AUTO_TRAITS:
                continue
            neg = "!" if imp["is_negative"] else ""
            unsafe = "unsafe " if imp["is_unsafe"] else ""
            for_ty = imp["for"]
            if "resolved_path" in for_ty:
                # The type by the path this line is about (it may be reachable by several).
                for_ty = path + self.args(for_ty["resolved_path"].get("args"))
            else:
                for_ty = self.ty(for_ty)
            self.emit(f"{unsafe}impl{self.generics(g)} {neg}{self.path_of(imp['trait'])} for "
                      f"{for_ty}{self.where_clause(g)}")


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    if doc["format_version"] not in FORMAT_VERSIONS:
        sys.exit(f"rustdoc JSON format {doc['format_version']} is not one this script knows "
                 f"({sorted(FORMAT_VERSIONS)}): update scripts/public_api.py")
    r = Renderer(doc)
    root = doc["index"][str(doc["root"])]
    # The first walk learns every item's public path, the second renders with them.
    for _ in range(2):
        r.lines = set()
        r.emit(f"pub mod {root['name']}")
        r.walk_module(doc["root"], root["name"], frozenset())
    for line in sorted(r.lines):
        print(line)


if __name__ == "__main__":
    main()
