"""The type stubs (paratune/__init__.pyi) describe the module as built: every name, every class member, and
every function's parameters in the order and kinds pybind11's signatures give them."""

import ast
import os

import paratune


def stub_tree():
    path = os.path.join(os.path.dirname(paratune.__file__), "__init__.pyi")
    return ast.parse(open(path, encoding="utf-8").read())


def runtime_parameters(function):
    """Parameter names from pybind11's signature line: "name(a: int, b: str = 'x', *, c: int = 1, **kwargs) -> T"."""
    line = function.__doc__.splitlines()[0]
    inner = line[line.index("(") + 1:line.rindex(") ->")]
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    names = [p.split(":")[0].split("=")[0].strip() for p in parts]
    return [n for n in names if n != "self"]


def stub_parameters(node):
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args if a.arg != "self"]
    if args.vararg or args.kwonlyargs:
        names.append("*")
    names += [a.arg for a in args.kwonlyargs]
    return names


def check_signature(name, function, node):
    runtime = runtime_parameters(function)
    stub = stub_parameters(node)
    if runtime and runtime[-1] == "**kwargs":
        # The training keywords: the stub spells them out after the named ones.
        runtime = runtime[:-1]
        assert stub[:len(runtime)] == runtime, f"{name}: stub {stub} vs module {runtime}"
    else:
        assert stub == runtime, f"{name}: stub {stub} vs module {runtime}"


def test_every_exported_name_is_in_the_stubs_and_exists():
    tree = stub_tree()
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    for name in paratune.__all__:
        assert name in defined, f"{name} is exported but not in the stubs"
    for name in defined:
        if name[0].isupper() and name.endswith("Like") or name in ("PathLike", "Constraints"):
            continue  # type aliases of the stubs only
        assert hasattr(paratune, name), f"the stubs declare {name}, which the module does not have"


def test_functions_and_methods_have_the_stubs_parameters():
    tree = stub_tree()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            check_signature(node.name, getattr(paratune, node.name), node)
        if isinstance(node, ast.ClassDef) and not issubclass(getattr(paratune, node.name), BaseException):
            cls = getattr(paratune, node.name)
            members = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
            public = {n for n in vars(cls) if not n.startswith("_")} | {n for n in ("__len__", "__iter__", "__getitem__") if n in vars(cls)}
            assert public <= set(members), f"{node.name}: not in the stubs: {sorted(public - set(members))}"
            for name, member in members.items():
                assert name in vars(cls), f"{node.name}.{name} is in the stubs, not in the module"
                if isinstance(vars(cls)[name], property) or name.startswith("__"):
                    continue
                check_signature(f"{node.name}.{name}", getattr(cls, name), member)


def test_everything_public_is_documented():
    for name in paratune.__all__:
        value = getattr(paratune, name)
        if callable(value):
            assert value.__doc__, f"{name} has no docstring"
