"""Plain classes written as `dataclasses.dataclass` makes them (the same constructor, repr and,
for a ValueRecord, ==), for the records that gradcli's modules define: a dataclass's methods
are code generated and compiled at every start (about a tenth of a millisecond a class), these
are compiled once, with the module. A subclass lists its fields in `_fields` (and `__slots__`);
a record whose fields are all given, in that order, takes Record's `__init__`, and one with a
default or a keyword writes its own (a field's default made anew for each record defaults to NEW)."""

NEW = object()  # a default made anew for each record (a dataclass's default_factory)


class Record:
    __slots__ = ()
    _fields: tuple = ()

    def __init__(self, *values):
        if len(values) != len(self._fields):
            raise TypeError(f"{type(self).__qualname__}() takes {len(self._fields)} arguments "
                            f"({', '.join(self._fields)}), got {len(values)}")
        for name, value in zip(self._fields, values):
            setattr(self, name, value)

    def __repr__(self):
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self._fields)})"


class ValueRecord(Record):
    """Equal to a record of its own class with equal fields (and so not hashable)."""

    __slots__ = ()

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return tuple(getattr(self, name) for name in self._fields) == tuple(
                getattr(other, name) for name in self._fields)
        return NotImplemented

    __hash__ = None
