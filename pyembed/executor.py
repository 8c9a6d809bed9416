"""The executor operations of cellexec, run inside the embedded interpreter.

Loaded by pyembed/executor.c as the module _cellexec_executor.  Every entry
point takes values from the host as JSON text and returns plain data (what
Executor.to_plain makes) that the C side converts to JSON nodes itself, and
reports a Python exception as ("error", type, message, traceback, line)
instead of raising, so the C side never has to pick apart a live exception.
"""

import ast
import builtins
import json
import sys
import types
import typing
import weakref

# Loaded before this module: formats exceptions (describe_exception) and
# keeps the source lines of our pseudo files for tracebacks (remember_lines).
import _cellexec_errors as _errors

_OWN_FILE = __file__


# ---- Values ------------------------------------------------------------------

# The integers a JSON node holds exactly (JSON-GLib keeps gint64 or double).
_INT64_MIN = -2**63
_INT64_MAX = 2**63 - 1


def _plain_str(text):
    """Whether TEXT crosses as a JSON string unchanged: no NUL (the host's
    strings end there) and nothing UTF-8 cannot encode (lone surrogates)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Executor:
    """Per session: the objects handed out as {"$ref": ID, "repr": ...}."""

    def __init__(self):
        self.objects = {}   # ref id -> object
        self.ids = {}       # id(object) -> ref id
        self.next_id = 1

    def ref(self, obj):
        ref = self.ids.get(id(obj))
        if ref is None or self.objects.get(ref) is not obj:
            ref = self.next_id
            self.next_id += 1
            self.objects[ref] = obj
            self.ids[id(obj)] = ref
        try:
            text = repr(obj)
        except BaseException as exc:
            text = f"<repr() failed: {type(exc).__name__}>"
        if len(text) > 1000:
            text = text[:1000] + "..."
        return {"$ref": ref, "repr": text}

    def to_plain(self, value, depth=0):
        """VALUE with everything the host's JSON cannot hold exactly replaced
        by a reference: objects of other types, ints beyond 64 bits, strs
        holding NUL or lone surrogates, NaN and the infinities, and dicts
        with a key that is not such a str (a key cannot be a reference)."""
        if value is None or type(value) is bool:
            return value
        if isinstance(value, str):
            return value if _plain_str(value) else self.ref(value)
        if type(value) is int:
            return value if _INT64_MIN <= value <= _INT64_MAX else self.ref(value)
        if type(value) is float and value == value and value not in (float("inf"), float("-inf")):
            return value
        if depth < 64:
            if type(value) in (list, tuple):
                return [self.to_plain(v, depth + 1) for v in value]
            if type(value) is dict and all(type(k) is str and _plain_str(k) for k in value):
                return {k: self.to_plain(v, depth + 1) for k, v in value.items()}
        return self.ref(value)

    def from_plain(self, value):
        """JSON data with references resolved to their objects."""
        if isinstance(value, list):
            return [self.from_plain(v) for v in value]
        if isinstance(value, dict):
            if "$ref" in value and set(value) <= {"$ref", "repr"}:
                try:
                    return self.objects[value["$ref"]]
                except (KeyError, TypeError):
                    raise ValueError(f"unknown reference {value['$ref']!r}: references are "
                                     "valid only in the session that made them") from None
            return {k: self.from_plain(v) for k, v in value.items()}
        return value

    def loads(self, text):
        return {} if text is None else self.from_plain(json.loads(text))


class Env:
    """One environment: a namespace of globals."""

    def __init__(self, executor):
        self.executor = executor
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}


def new_executor():
    return Executor()


def new_env(executor):
    return Env(executor)


def close_executor(executor):
    """Drop every object handed out by reference."""
    executor.objects.clear()
    executor.ids.clear()


def close_env(env):
    """Empty ENV's namespace: functions defined in it refer back to it, and
    without this the cycle (with the host functions bound in it) would wait
    for the garbage collector."""
    env.namespace.clear()


# ---- Errors ------------------------------------------------------------------

def _describe(exc, filename, line_offset=0):
    """("error", type, message, traceback, line) for EXC raised by the step
    whose code is FILENAME."""
    line = 0
    if isinstance(exc, SyntaxError) and exc.filename == filename and exc.lineno:
        line = exc.lineno
    # This module's frames are not the user's (and go first).
    type_name, message, text = _errors.describe_exception(exc, (_OWN_FILE,))
    walk = exc.__traceback__
    while walk is not None:
        if walk.tb_frame.f_code.co_filename == filename:
            line = walk.tb_lineno
        walk = walk.tb_next
    return ("error", type_name, message, text, line)


def _compile(source, filename, mode, line_offset=0, tree_hook=None):
    """Compile SOURCE; line numbers shifted by LINE_OFFSET, and remembered
    for tracebacks."""
    try:
        tree = ast.parse(source, filename, mode)
    except SyntaxError as exc:
        if exc.lineno:
            exc.lineno += line_offset
            if exc.end_lineno:
                exc.end_lineno += line_offset
        raise
    if line_offset:
        ast.increment_lineno(tree, line_offset)
    if tree_hook is not None:
        tree = tree_hook(tree)
    code = compile(tree, filename, mode, dont_inherit=True)
    _errors.remember_lines(code, [""] * line_offset + source.splitlines())
    return code


# ---- Operations --------------------------------------------------------------

def execute(env, source, bindings_json, line_offset, filename):
    """Run SOURCE in ENV for effect (preludes and side effects)."""
    try:
        env.namespace.update(env.executor.loads(bindings_json))
        exec(_compile(source, filename, "exec", line_offset), env.namespace)
        return ("ok", None)
    except BaseException as exc:
        return _describe(exc, filename, line_offset)


def _arguments(params):
    """Positional-or-keyword parameters named PARAMS."""
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                         kwonlyargs=[], kw_defaults=[], defaults=[])


def _as_lambda(params):
    """An AST hook turning the expression into `lambda PARAMS: expression`,
    so that nested scopes (comprehensions, lambdas) see the locals too."""
    def hook(tree):
        args = _arguments(params)
        body = ast.Lambda(args=args, body=tree.body)
        ast.copy_location(body, tree.body)
        ast.copy_location(args, tree.body)
        tree.body = ast.fix_missing_locations(body)
        return ast.fix_missing_locations(tree)
    return hook


def _call_with_locals(env, source, locals_json, filename, mode, make_hook, define):
    """Compile SOURCE (MODE) with the tree hook MAKE_HOOK(names of the
    locals) gives, DEFINE(code) the function it makes, call that with the
    locals and return ("ok", its value as plain data) or the error."""
    try:
        local_values = env.executor.loads(locals_json)
        code = _compile(source, filename, mode, tree_hook=make_hook(list(local_values)))
        return ("ok", env.executor.to_plain(define(code)(**local_values)))
    except BaseException as exc:
        return _describe(exc, filename)


def evaluate_inline(env, source, locals_json):
    return _call_with_locals(env, source, locals_json, "<inline>", "eval", _as_lambda,
                             lambda code: eval(code, env.namespace))


def _as_function(params, namespace):
    """An AST hook making the block the body of a function of PARAMS, in which
    names of NAMESPACE that the block assigns are declared global (so they
    are written back) and every other assigned name stays local."""
    def hook(tree):
        body = tree.body or [ast.Pass()]
        args = _arguments(params)
        probe = ast.Module(body=[ast.FunctionDef(name="__cellexec_block__", args=args, body=body,
                                                 decorator_list=[], returns=None)],
                           type_ignores=[])
        ast.fix_missing_locations(probe)
        inner = next(c for c in compile(probe, "<probe>", "exec").co_consts
                     if isinstance(c, types.CodeType))
        assigned = inner.co_varnames[inner.co_argcount:] + inner.co_cellvars
        rebound = [n for n in dict.fromkeys(assigned) if n in namespace and n not in params]
        if rebound:
            declaration = ast.Global(names=rebound)
            ast.copy_location(declaration, body[0])
            body.insert(0, declaration)
        function = ast.FunctionDef(name="__cellexec_block__", args=args, body=body,
                                   decorator_list=[], returns=None)
        ast.copy_location(function, body[0])
        tree.body = [function]
        return ast.fix_missing_locations(tree)
    return hook


def execute_block(env, source, locals_json):
    def define(code):
        scope = {}
        exec(code, env.namespace, scope)
        return scope["__cellexec_block__"]

    return _call_with_locals(env, source, locals_json, "<block>", "exec",
                             lambda names: _as_function(names, env.namespace), define)


def bind_function(env, name, params, defaults_json, call_host):
    """Bind NAME in ENV to a function of exactly PARAMS (with DEFAULTS) that
    passes its arguments, as plain data, to CALL_HOST, which returns the
    host's value as JSON text."""
    import inspect

    try:
        executor = env.executor
        defaults = executor.loads(defaults_json)
        unknown = set(defaults) - set(params)
        if unknown:
            raise TypeError(f"defaults for unknown parameters: {', '.join(sorted(unknown))}")
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        signature = inspect.Signature([
            inspect.Parameter(p, kind, default=defaults.get(p, inspect.Parameter.empty))
            for p in params])

        # Weakly: the executor's reference table may hold this function, and
        # a cycle would keep the host's callback data alive until a GC.
        executor_ref = weakref.ref(executor)

        def host_function(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            owner = executor_ref()
            if owner is None:
                raise RuntimeError(f"{name}() outlived the session it was bound in")
            return owner.loads(call_host(owner.to_plain(dict(bound.arguments))))

        host_function.__name__ = host_function.__qualname__ = name
        host_function.__signature__ = signature
        host_function.__doc__ = f"{name}{signature}: a function of the host program."
        env.namespace[name] = host_function
        return ("ok", None)
    except BaseException as exc:
        return _describe(exc, "<bind>")


_TYPING_NAMES = {n: getattr(typing, n) for n in typing.__all__}


class _TypeScope(dict):
    """Names a type expression sees: the environment's, then typing's."""

    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace

    def __missing__(self, key):
        if key in self.namespace:
            return self.namespace[key]
        if key in _TYPING_NAMES:
            return _TYPING_NAMES[key]
        raise KeyError(key)


def _describe_type(t, executor):
    if t is None or t is type(None):
        return {"kind": "none"}
    origin = typing.get_origin(t)
    if origin is typing.Union or origin is types.UnionType:
        return {"kind": "union", "args": [_describe_type(a, executor) for a in typing.get_args(t)]}
    if origin is typing.Literal:
        return {"kind": "literal", "values": [executor.to_plain(v) for v in typing.get_args(t)]}
    if origin is typing.Annotated:
        return _describe_type(typing.get_args(t)[0], executor)
    if origin is not None:
        return {"kind": "generic", "origin": _describe_type(origin, executor),
                "args": [_describe_type(a, executor) for a in typing.get_args(t)]}
    if isinstance(t, type):
        if t.__module__ == "typing":  # typing.Any is a class since 3.11
            return {"kind": "typing", "name": t.__qualname__}
        if t.__module__ == "builtins":
            return {"kind": "builtin", "name": t.__qualname__}
        return {"kind": "class", "module": t.__module__, "qualname": t.__qualname__}
    if isinstance(t, typing.TypeVar):
        return {"kind": "typing", "name": t.__name__}
    name = getattr(t, "_name", None)
    if getattr(t, "__module__", None) == "typing" and isinstance(name, str):
        return {"kind": "typing", "name": name}
    raise TypeError(f"{t!r} is not a type expression: expected a class, None, or a typing "
                    "construct such as list[int] | None")


def evaluate_type_expression(env, source):
    filename = "<type>"
    try:
        code = _compile(source, filename, "eval")
        value = eval(code, env.namespace, _TypeScope(env.namespace))
        return ("ok", _describe_type(value, env.executor))
    except BaseException as exc:
        return _describe(exc, filename)


def snapshot(env):
    """The environment's own names (not __dunder__ ones) as plain data; a
    name that is not a str JSON can carry is shown as its repr()."""
    try:
        executor = env.executor
        shown = {}
        for k, v in env.namespace.items():
            if isinstance(k, str) and k.startswith("__") and k.endswith("__"):
                continue
            shown[k if type(k) is str and _plain_str(k) else repr(k)] = executor.to_plain(v)
        return ("ok", shown)
    except BaseException as exc:
        return _describe(exc, "<snapshot>")
