"""Classes registered by name: solvers, observers, commands and pipeline kinds.

Extension is by registration (as PETSc names its KSP types): each kind of extension keeps
one :class:`Registry`, and a new solver, observer, command or pipeline kind is a class
added to it by a decorator, from tachyflow itself or from a plug-in.
"""

from __future__ import annotations


class Registry:
    """Subclasses of ``base`` by name; the name is also set on the class as ``attribute``.

    Parameters
    ----------
    what : str
        What the registry holds, for messages ("solver", "observer", ...).
    base : type
        The class every registered class must derive from.
    attribute : str
        The class attribute that holds the name.
    """

    def __init__(self, what: str, base: type, attribute: str = "name"):
        self.what, self.base, self.attribute = what, base, attribute
        self._classes: dict[str, type] = {}

    def add(self, cls: type, name: str | None = None) -> type:
        """Register ``cls`` under ``name`` (default: its ``attribute``); returns ``cls``."""
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(
                f"{self._article} {self.what} must be a {self.base.__name__} subclass, got {cls!r}"
            )
        name = getattr(cls, self.attribute, None) if name is None else name
        if not isinstance(name, str) or not name.strip():
            raise ValueError(
                f"{cls.__name__}.{self.attribute} must be a non-empty string, got {name!r}"
            )
        if name in self._classes and self._classes[name] is not cls:
            raise ValueError(f"{self._article} {self.what} named {name!r} is already registered")
        setattr(cls, self.attribute, name)
        self._classes[name] = cls
        return cls

    @property
    def _article(self) -> str:
        return "an" if self.what[0] in "aeiou" else "a"

    def named(self, name: str):
        """Class decorator registering under ``name``."""
        return lambda cls: self.add(cls, name)

    def __contains__(self, name: str) -> bool:
        return name in self._classes

    def __getitem__(self, name: str) -> type:
        return self._classes[name]

    def classes(self) -> dict[str, type]:
        """Registered classes by name, in registration order."""
        return dict(self._classes)
