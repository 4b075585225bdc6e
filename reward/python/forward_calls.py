"""What ModelNew.forward may call, read from the candidate's source (static_check.py's
torch-op-in-forward): an allow-list. forward, and every function, lambda, method and class of the
file it reaches, may call the extension's functions and tensor plumbing (allocation, metadata,
views, casts, copies) only; any other callee, a torch function handed on as a value, and Python
arithmetic on a tensor are reported. Standard library only, like static_check.py.
"""

import ast
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidate_ast as ca  # noqa: E402

# torch.* functions that only allocate, describe or move tensors: output buffers
# (torch.empty(...)), metadata, and context managers. Anything else under torch. computes.
ALLOWED_TORCH_FUNCTIONS = {
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.tensor",
    "torch.as_tensor", "torch.arange", "torch.Size", "torch.device", "torch.dtype",
    "torch.is_tensor", "torch.is_floating_point", "torch.numel", "torch.no_grad",
    "torch.inference_mode", "torch.get_default_dtype", "torch.promote_types",
    "torch.result_type", "torch.finfo", "torch.iinfo", "torch.cuda.current_device",
    "torch.cuda.current_stream", "torch.cuda.is_available", "torch.cuda.device",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
    "torch.jit.is_scripting", "torch._C._get_tracing_state",
}

# Method calls that do no arithmetic: tensor metadata and views, copies/casts that the kernel's
# inputs may need, and plain Python container/string methods.
ALLOWED_METHODS = {
    # tensor metadata
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr",
    "element_size", "is_contiguous", "get_device", "item", "tolist", "type", "is_cuda",
    # views, layout and placement
    "view", "view_as", "reshape", "reshape_as", "contiguous", "flatten", "unflatten",
    "squeeze", "unsqueeze", "permute", "transpose", "t", "expand", "expand_as", "narrow",
    "select", "unbind", "split", "chunk", "as_strided", "detach", "clone", "to", "cuda", "cpu",
    "float", "half", "bfloat16", "double", "int", "long", "bool", "short", "byte", "char",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "zero_", "fill_",
    "requires_grad_", "copy_", "pin_memory",
    # autograd.Function plumbing
    "apply", "save_for_backward", "mark_dirty", "mark_non_differentiable",
    # python containers and strings
    "append", "extend", "insert", "pop", "items", "keys", "values", "get", "index", "count",
    "format", "join", "startswith", "endswith", "lower", "upper", "strip", "replace", "copy",
    "setdefault", "update", "add", "parameters", "named_parameters", "buffers",
}

# Attributes of torch that are values, not functions: forward may name them without calling
# them (x.to(torch.float16), isinstance(x, torch.Tensor)).
TORCH_VALUES = {
    "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "uint8",
    "int16", "short", "int32", "int", "int64", "long", "bool", "complex64", "cfloat",
    "complex128", "cdouble", "float8_e4m3fn", "float8_e5m2", "Tensor", "Size", "dtype", "device",
    "strided", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
    "inf", "nan", "pi", "e", "cuda.Stream",
}

# Builtins forward may call. Not abs, sum, pow, map, filter: on a tensor abs and pow compute,
# and map/filter call whatever they are handed.
SAFE_BUILTINS = {
    "len", "list", "tuple", "dict", "set", "int", "float", "bool", "str", "range", "enumerate",
    "zip", "isinstance", "min", "max", "round", "all", "any", "sorted", "reversed",
    "print", "super", "hasattr", "divmod", "ValueError", "RuntimeError",
    "TypeError", "NotImplementedError", "AssertionError", "type", "id", "iter", "next", "slice",
}

# Methods whose result is a tensor when their receiver is one: views, casts, copies, buffers.
TENSOR_RESULT_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "contiguous", "flatten", "unflatten", "squeeze",
    "unsqueeze", "permute", "transpose", "t", "expand", "expand_as", "narrow", "select",
    "as_strided", "detach", "clone", "to", "cuda", "cpu", "float", "half", "bfloat16", "double",
    "int", "long", "bool", "short", "byte", "char", "new_empty", "new_zeros", "new_ones",
    "new_full", "new_tensor", "zero_", "fill_", "copy_", "pin_memory", "requires_grad_",
}
# Attributes of a tensor that are tensors (x.T, x.data), and of an nn module (self.fc.weight).
TENSOR_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "real", "imag", "grad"}
MODULE_TENSORS = {"weight", "bias", "running_mean", "running_var"}
# The operators of Python arithmetic and comparison, as forward may write them on a tensor.
OPERATOR_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
                 ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
                 ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.USub: "unary -",
                 ast.UAdd: "unary +", ast.Invert: "~"}

# Builtins that run code, or reach names, chosen at run time.
DYNAMIC_BUILTINS = {"eval", "exec", "compile", "__import__", "globals", "vars", "locals"}


class Program:
    """What the checks need to know about the file as a whole."""

    def __init__(self, tree):
        self.tree = tree
        self.aliases = ca.Aliases(tree)
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.extensions = {name for name, _ in ca.load_inline_calls(tree, self.aliases) if name}
        # Module-level `name = lambda ...`: called from forward, its body is walked as a
        # function's.
        self.lambdas = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
                        and isinstance(n.value, ast.Lambda) for t in n.targets
                        if isinstance(t, ast.Name)}
        # Names (`f`, `self.f`) bound anywhere to a function of the extension (`f = ext.fn`).
        self.extension_functions = {
            ca.chain_text(t) for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Attribute) and isinstance(n.value.value, ast.Name)
            and n.value.value.id in self.extensions for t in n.targets
            if ca.chain_text(t) is not None}

    def methods(self, cls):
        return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}

    def init_attribute_types(self, cls):
        """self.<attr> -> dotted constructor name, from assignments in __init__."""
        out = {}
        init = self.methods(cls).get("__init__")
        if init is None:
            return out
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                            and t.value.id == "self":
                        out[t.attr] = self.aliases.resolve(node.value.func)
        return out


class TensorValues:
    """Which expressions of one function (with the functions and lambdas inside it) may hold
    tensors: its parameters (not self, not those with a constant default), what the extension
    returns, what torch allocates, the module's parameters and buffers, and what views, casts,
    items, loops and arithmetic make of those, through assignments in any order. Sizes read from
    a tensor (x.size(0), x.shape[1], x.numel()) are numbers, so honest size arithmetic is not
    a tensor's."""

    def __init__(self, program, fn, attr_types):
        self.p = program
        # self.<attr> bound in __init__ to a tensor: nn.Parameter(...), torch.randn(...).
        self.tensor_attrs = {attr for attr, ctor in attr_types.items()
                             if ctor and ctor.startswith("torch.") and (
                                 ctor.endswith("Parameter") or ctor.split(".")[-1][:1].islower())}
        self.names = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.arguments):
                params = node.posonlyargs + node.args
                defaults = [None] * (len(params) - len(node.defaults)) + list(node.defaults)
                for a, d in list(zip(params, defaults)) + list(zip(node.kwonlyargs,
                                                                   node.kw_defaults)):
                    if a.arg not in ("self", "cls", "ctx") and not isinstance(d, ast.Constant):
                        self.names.add(a.arg)
                for a in (node.vararg, node.kwarg):
                    if a is not None:
                        self.names.add(a.arg)
        bound = []  # (target, value) pairs that may pass a tensor on
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                bound += [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.AugAssign)) and node.value:
                bound.append((node.target, node.value))
            elif isinstance(node, (ast.For, ast.comprehension)):
                bound.append((node.target, node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bound.append((node.optional_vars, node.context_expr))
        # A worklist over the bindings, as candidate_ast.Aliases.follow: a binding is looked at
        # again only when a name its value reads becomes a tensor's, so a chain in any order
        # costs its length.
        readers = {}
        for k, (_, value) in enumerate(bound):
            for key in ca.read_keys(value):
                readers.setdefault(key, []).append(k)
        pending = list(range(len(bound)))
        while pending:
            target, value = bound[pending.pop()]
            if self.holds(value):
                for key in ca.target_keys(target):
                    if key not in self.names:
                        self.names.add(key)
                        pending += readers.get(key, ())
        self.memo = {}  # id(expression) -> holds, once every name is known

    def holds(self, e):
        """Whether expression e may be a tensor: whether a tensor is among the values it is made
        of (through items, tensor attributes, views and casts, arithmetic, conditionals,
        containers). An explicit stack: a chain thousands of terms long is a file Python
        compiles."""
        memo, root = getattr(self, "memo", None), e
        if memo is not None and id(root) in memo:
            return memo[id(root)]
        found, stack = False, [root]
        while stack and not found:
            e = stack.pop()
            if isinstance(e, ast.Name):
                found = e.id in self.names
            elif isinstance(e, (ast.Starred, ast.Subscript)):
                stack.append(e.value)  # an item or a slice of a tensor (or of a list of them)
            elif isinstance(e, ast.Attribute):
                if is_self_attr(e) and e.attr in self.tensor_attrs or \
                        ca.chain_text(e) in self.names or e.attr in MODULE_TENSORS:
                    found = True
                elif e.attr in TENSOR_ATTRIBUTES:
                    stack.append(e.value)
            elif isinstance(e, ast.Call):
                found = self.call_holds(e, stack)
            elif isinstance(e, ast.BinOp):
                stack += [e.left, e.right]
            elif isinstance(e, ast.UnaryOp) and not isinstance(e.op, ast.Not):
                stack.append(e.operand)
            elif isinstance(e, ast.IfExp):
                stack += [e.body, e.orelse]
            elif isinstance(e, (ast.List, ast.Tuple, ast.Set)):
                stack += e.elts
        if memo is not None:
            memo[id(root)] = found
        return found

    def call_holds(self, call, stack):
        """Whether a call's result is a tensor for certain (the extension's, torch's buffers);
        a view or cast of its receiver goes on `stack` (a tensor when the receiver is)."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.p.extensions or \
                ca.chain_text(func) in self.p.extension_functions:
            return True
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_RESULT_METHODS:
            stack.append(func.value)
            return False
        name = self.p.aliases.resolve(func) or ""
        return name in ALLOWED_TORCH_FUNCTIONS and name.split(".")[-1][:1].islower() and \
            name not in NUMBER_TORCH_FUNCTIONS


# Allowed torch functions whose result is not a tensor.
NUMBER_TORCH_FUNCTIONS = {"torch.is_tensor", "torch.is_floating_point", "torch.numel",
                          "torch.get_default_dtype", "torch.promote_types", "torch.result_type",
                          "torch.finfo", "torch.iinfo", "torch.cuda.current_device",
                          "torch.cuda.current_stream", "torch.cuda.is_available",
                          "torch.cuda.device", "torch.cuda.get_device_properties",
                          "torch.cuda.get_device_capability", "torch.jit.is_scripting",
                          "torch._C._get_tracing_state", "torch.no_grad", "torch.inference_mode",
                          "torch.device", "torch.dtype"}


def is_self_attr(expr):
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) \
        and expr.value.id == "self"


def root_name(expr):
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


class ForwardWalker:
    """Walks ModelNew.forward and everything it reaches in this file (its own methods,
    module-level functions, classes defined here: autograd Functions and helper modules),
    reporting compute done outside the extension."""

    def __init__(self, program, report):
        self.p = program
        self.r = report
        self.visited = set()
        self.pending = collections.deque()  # (function, class, name) found, not yet walked
        self.extension_called = False

    def walk_class(self, cls, entry):
        methods = self.p.methods(cls)
        if entry not in methods:
            return
        self.walk_function(methods[entry], cls)

    def walk_function(self, fn, cls, name=None):
        """Walks fn (a function, or a lambda called by `name`) and every local function and
        method it calls. A worklist, not recursion: a chain of helpers longer than Python's
        recursion limit is still a file Python compiles."""
        key = (cls.name if cls else "", name or fn.name)
        if key in self.visited:
            return
        self.visited.add(key)
        self.pending.append((fn, cls, name))
        if len(self.pending) > 1:
            return  # a call found while walking: the loop below, further up, takes it
        while self.pending:
            self.walk_body(*self.pending[0])
            self.pending.popleft()

    def walk_body(self, fn, cls, name=None):
        where = "%s.%s" % (cls.name, name or fn.name) if cls else name or fn.name
        attr_types = self.p.init_attribute_types(cls) if cls else {}
        parents = {id(child): node for node in ast.walk(fn)
                   for child in ast.iter_child_nodes(node)}
        # Functions defined inside fn (and lambdas bound to a name there): their bodies are
        # part of this walk, so calling them by name is calling walked code.
        inner = {n.name for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef,
                                                                ast.AsyncFunctionDef))}
        inner |= {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Lambda) for t in n.targets
                  if isinstance(t, ast.Name)}
        tensors = TensorValues(self.p, fn, attr_types)
        for node in ast.walk(fn):
            self.check_operator(node, tensors, where)
            if isinstance(node, ast.Call):
                self.check_call(node, cls, attr_types, where, inner)
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                self.check_value(node, parents.get(id(node)), where)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                self.r.add("torch-op-in-forward", node.lineno, "`@` matmul in %s" % where)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and cls is not None \
                    and fn.name != "__init__":
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for sub in ast.walk(t):
                        if is_self_attr(sub) and isinstance(sub.ctx, ast.Store) or \
                                isinstance(sub, ast.Subscript) and root_name(sub) == "self":
                            self.r.add("state-in-forward", node.lineno,
                                       "%s stores into self.%s" % (where, root_attr(sub)))
                            break
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.r.add("state-in-forward", node.lineno,
                           "%s declares global %s" % (where, ", ".join(node.names)))

    def check_operator(self, node, tensors, where):
        """Python arithmetic or a comparison on a tensor runs PyTorch's kernel for it (`x + y`
        is torch.add): forward's values pass through the extension, not through operators."""
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
            operands, op = [node.left, node.right], OPERATOR_TEXT.get(type(node.op), "?")
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            operands, op = [node.operand], OPERATOR_TEXT.get(type(node.op), "?")
        elif isinstance(node, ast.AugAssign):
            operands, op = [node.target, node.value], OPERATOR_TEXT.get(type(node.op), "?") + "="
        elif isinstance(node, ast.Compare):
            operands, op = [node.left] + node.comparators, "a comparison"
            if all(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops):
                return  # identity and membership: Python's, not a tensor's
        else:
            return
        if any(tensors.holds(o) for o in operands):
            self.r.add("torch-op-in-forward", node.lineno, "%s on a tensor in %s" % (op, where))

    def check_value(self, node, parent, where):
        """A torch function handed on without being called here (`map(torch.relu, xs)`,
        `functools.partial(F.gelu)`, `sorted(xs, key=torch.sum)`) computes wherever it is
        called. Values of torch that are not functions (dtypes, torch.Tensor) are fine."""
        if isinstance(parent, ast.Attribute) or isinstance(parent, ast.Call) and \
                parent.func is node:
            return  # part of a longer chain, or a callee (check_call reads those)
        parts = ca.chain_parts(node)
        path = self.p.aliases.expand(parts) if parts else None
        if path is None or not path.startswith("torch.") or path in ALLOWED_TORCH_FUNCTIONS \
                or path[len("torch."):] in TORCH_VALUES or self.p.aliases.is_module(path):
            return
        self.r.add("torch-op-in-forward", node.lineno, "%s handed on as a value in %s" % (
            path, where))

    def check_call(self, node, cls, attr_types, where, inner=()):
        """An allow-list: a call in forward's reach must be the extension's function, a function
        or class of this file (walked in turn), an allowed torch function, tensor method or
        builtin. Anything else is reported: an unknown callee may be a fallback."""
        func = literal_getattr_as_attribute(node.func)
        name = self.p.aliases.resolve(func)
        # Calls into the compiled extension: the point of the exercise.
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.p.extensions or \
                ca.chain_text(func) in self.p.extension_functions:
            self.extension_called = True
            return
        if isinstance(func, ast.Lambda):
            return  # its body is part of this walk
        if not isinstance(func, (ast.Name, ast.Attribute)):
            # A callee computed by an expression: `ops["mm"](x)`, `Helper()(x)`, `fns[0](x)`.
            path = self.p.aliases.value_path(func)
            self.r.add("torch-op-in-forward", node.lineno, "calls %s in %s: not a function the "
                       "check can name" % (path or "the value of an expression", where))
            return
        if isinstance(func, ast.Name):
            if func.id in self.p.functions:
                self.walk_function(self.p.functions[func.id], None)
                return
            if func.id in self.p.lambdas:
                self.walk_function(self.p.lambdas[func.id], None, func.id)
                return
            if func.id in self.p.classes or func.id in inner:
                return  # a local helper class (its methods are walked when called), or a
                # function defined in this body
            if func.id in DYNAMIC_BUILTINS or func.id in ("getattr", "setattr"):
                if func.id in ("getattr", "setattr") and len(node.args) >= 2 \
                        and isinstance(node.args[1], ast.Constant):
                    return
                self.r.add("dynamic-code", node.lineno, "%s(...) in %s" % (func.id, where))
                return
            if func.id in SAFE_BUILTINS and not self.p.aliases.is_module_root(func.id):
                return
        if name is not None and name.startswith("torch."):
            if name in ALLOWED_TORCH_FUNCTIONS:
                return
            self.r.add("torch-op-in-forward", node.lineno, "%s in %s" % (name, where))
            return
        if isinstance(func, ast.Name):
            # Fails closed: a name bound to anything else (an nn module made at module level,
            # `f = self.linear`, functools.partial(torch.mm), a parameter) may compute.
            self.r.add("torch-op-in-forward", node.lineno, "calls %s in %s: neither the "
                       "extension's function nor a function of this file" % (name, where))
            return
        if isinstance(func, ast.Attribute):
            # self.method(...) inside a class of this file
            if cls is not None and isinstance(func.value, ast.Name) and func.value.id == "self":
                methods = self.p.methods(cls)
                if func.attr in methods:
                    self.walk_function(methods[func.attr], cls)
                    return
                ctor = attr_types.get(func.attr)
                local = ctor.split(".")[-1] if ctor else None
                if local in self.p.classes:
                    self.walk_class(self.p.classes[local], "forward")
                    return
                self.r.add("torch-op-in-forward", node.lineno,
                           "calls submodule self.%s%s in %s" %
                           (func.attr, " (%s)" % ctor if ctor else "", where))
                return
            # LocalClass.apply(...) / LocalClass.method(...)
            if isinstance(func.value, ast.Name) and func.value.id in self.p.classes:
                target = self.p.classes[func.value.id]
                self.walk_class(target, "forward" if func.attr == "apply" else func.attr)
                return
            if is_self_attr(func.value) and cls is not None:
                ctor = attr_types.get(func.value.attr)
                local = ctor.split(".")[-1] if ctor else None
                if local in self.p.classes and func.attr != "forward":
                    self.walk_class(self.p.classes[local], func.attr)
                    return
            if func.attr in ALLOWED_METHODS:
                return
            self.r.add("torch-op-in-forward", node.lineno,
                       "method .%s(...) in %s" % (func.attr, where))


def literal_getattr_as_attribute(func):
    """`getattr(x, "name")` as the attribute `x.name` it reads (checked as such when called)."""
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) \
            and func.func.id == "getattr" and len(func.args) == 2 and not func.keywords \
            and isinstance(func.args[1], ast.Constant) and isinstance(func.args[1].value, str):
        return ast.copy_location(ast.Attribute(value=func.args[0], attr=func.args[1].value,
                                               ctx=ast.Load()), func)
    return func


def root_attr(expr):
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr.attr if isinstance(expr, ast.Attribute) else "?"
