"""torch.utils.cpp_extension as the runner's candidate code finds it (runner.py): a stand-in that
answers load_inline and load itself and imports the real module only when a candidate names more.
"""

import importlib
import importlib.util
import sys
import types

CPP_EXTENSION = "torch.utils.cpp_extension"


class CppExtensionStandIn(types.ModuleType):
    """torch.utils.cpp_extension as candidate code finds it, without importing the real module.

    The real import costs about 0.3 s of CPU at every runner's start (setuptools and hipify;
    docs/BENCHMARKS.md), and a candidate needs only load_inline, which the runner answers itself:
    load_candidate sets load_inline and load here. Any other name (CUDA_HOME, include_paths, ...)
    imports the real module on first use; it then takes the stand-in's place in sys.modules and
    on torch.utils, with the stand-in's load_inline and load put on it, and the stand-in passes
    names read or set on to it (a candidate may hold it under a name of its own)."""

    __slots__ = ("_real",)

    def __init__(self, spec):
        self._real = None  # first: __setattr__ reads it
        super().__init__(spec.name, "dice's stand-in for %s (cpp_extension_stand_in.py)" % spec.name)
        self.__spec__, self.__loader__, self.__package__ = spec, spec.loader, spec.parent
        self.__file__, self.__cached__ = spec.origin, spec.cached

    def __getattr__(self, name):
        # Dunder names are what the import system and introspection ask any module for
        # (__path__ on each "from ... import"): no reason to import the real module.
        if name.startswith("__") and name != "__all__":
            raise AttributeError("module %r has no attribute %r" % (self.__name__, name))
        real = self._real_module()
        if name == "__all__" and not hasattr(real, "__all__"):
            return [n for n in vars(real) if not n.startswith("_")]  # what "import *" takes
        return getattr(real, name)

    def __setattr__(self, name, value):
        types.ModuleType.__setattr__(self, name, value)
        if name != "_real" and self._real is not None:
            setattr(self._real, name, value)

    def __dir__(self):
        return dir(self._real_module())

    def _real_module(self):
        if self._real is None:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            try:
                real = importlib.import_module(self.__name__)
            except BaseException:
                sys.modules.setdefault(self.__name__, self)
                raise
            for name, value in vars(self).items():  # load_inline and load, and any name set
                if not name.startswith("__"):
                    setattr(real, name, value)
            self._real = real
        return self._real


def install(torch):
    """A CppExtensionStandIn where candidate code looks for torch.utils.cpp_extension, or the
    real module where it was imported already."""
    if CPP_EXTENSION in sys.modules:
        return sys.modules[CPP_EXTENSION]
    stand_in = CppExtensionStandIn(importlib.util.find_spec(CPP_EXTENSION))
    sys.modules[CPP_EXTENSION] = stand_in
    torch.utils.cpp_extension = stand_in
    return stand_in
