"""Values crossing the boundary: times, ids and the objects records come back as."""

from __future__ import annotations

import copy
import datetime as _dt
import uuid
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional, Union

from .errors import InvalidInput

Time = Union[_dt.datetime, _dt.date, str]
Id = Union[str, uuid.UUID, "Record"]

__all__ = ["Record", "Hit", "Context", "Time", "Id"]


def time_arg(name: str, value: Optional[Time]) -> Optional[str]:
    """A time argument as the engine takes it (RFC 3339); naive datetimes are refused."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise InvalidInput(
                f"`{name}`: the datetime {value.isoformat()} is naive (it has no time zone); "
                "give it one, e.g. datetime.now(timezone.utc), or pass an ISO string"
            )
        return value.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise InvalidInput(f"`{name}` must be a datetime, a date or an ISO string, not {type(value).__name__}")


def id_arg(value: Id, name: str = "id") -> str:
    """A record id argument: a string (a unique head or tail of 6+ hex digits works), a UUID or
    a record."""
    if isinstance(value, str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Record):
        return value.id
    raise InvalidInput(f"`{name}` must be an id (a string or uuid.UUID) or a Record, not {type(value).__name__}")


def strings(name: str, values: Union[str, Iterable[str], None]) -> list:
    """A list of strings argument (a lone string is one item, not its characters)."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    out = list(values)
    for v in out:
        if not isinstance(v, str):
            raise InvalidInput(f"`{name}` must hold strings, not {type(v).__name__}")
    return out


def parse_time(value: Optional[str]) -> Optional[_dt.datetime]:
    """A time the engine wrote (RFC 3339, UTC) as an aware datetime."""
    if value is None:
        return None
    return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _is_record(d: Mapping[str, Any]) -> bool:
    return "recorded_at" in d and "body" in d and "kind" in d and "id" in d


def wrap(value: Any) -> Any:
    """Records anywhere in an answer as :class:`Record` objects; everything else as is."""
    if isinstance(value, dict):
        if _is_record(value):
            return Hit(value) if "score" in value else Record(value)
        return {k: wrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


class Record:
    """One revision of a record, as read at some valid time: immutable.

    Envelope fields are attributes (``id``, ``kind``, ``namespace``, ``status``, ``rev``,
    ``tags``, ``importance``, ``confidence``, ``source``, ``task``, ``key``, ``metadata``,
    ``supersedes``, ``superseded_by``, ``op``), times are timezone-aware datetimes
    (``valid_from``, ``valid_until``, ``expires_at``, ``recorded_at``, ``replaced_at``),
    ``body`` is the kind's fields (read-only) and ``text`` the text it is searched by. A body
    field is also an attribute (``decision.title``) and an item (``decision["title"]``).
    ``to_dict()`` gives the record as JSON-ready values, as the CLI's ``--json`` prints it.
    """

    __slots__ = ("_d",)

    def __init__(self, data: Mapping[str, Any]):
        # Answers are fresh dicts, never shared: kept as they are, without a copy.
        object.__setattr__(self, "_d", data if type(data) is dict else dict(data))

    # Envelope.
    @property
    def id(self) -> str:
        """The record's id (a UUID v7 string)."""
        return self._d["id"]

    @property
    def kind(self) -> str:
        """What sort of memory it is (``decision``, ``task``, ``learning``...)."""
        return self._d["kind"]

    @property
    def namespace(self) -> str:
        """The namespace it lives in."""
        return self._d["namespace"]

    @property
    def status(self) -> str:
        """Its status at the valid time it was read at: active, superseded, retired, expired
        or not_yet_valid."""
        return self._d["status"]

    @property
    def rev(self) -> int:
        """The revision number (0 for the first)."""
        return self._d["rev"]

    @property
    def op(self) -> str:
        """What made this revision (insert, revise, supersede, retire...)."""
        return self._d.get("op", "")

    @property
    def body(self) -> Mapping[str, Any]:
        """The kind's fields, read-only."""
        return MappingProxyType(self._d.get("body") or {})

    @property
    def text(self) -> str:
        """The text the record is searched by (its main fields, joined)."""
        return self._d.get("text") or ""

    @property
    def tags(self) -> tuple:
        """Its tags."""
        return tuple(self._d.get("tags") or ())

    @property
    def importance(self) -> Optional[int]:
        """How much it matters, 1 to 5, if set."""
        return self._d.get("importance")

    @property
    def confidence(self) -> Optional[float]:
        """How sure its source was, 0 to 1, if set."""
        return self._d.get("confidence")

    @property
    def source(self) -> Optional[str]:
        """Who wrote it (an agent's name), if set."""
        return self._d.get("source")

    @property
    def task(self) -> Optional[str]:
        """The task it belongs to, if set."""
        return self._d.get("task")

    @property
    def key(self) -> Optional[str]:
        """Its identity key (a preference's key...), if set."""
        return self._d.get("key")

    @property
    def metadata(self) -> Any:
        """Free-form extra fields."""
        return self._d.get("metadata")

    @property
    def supersedes(self) -> Optional[str]:
        """The record it replaced, if any."""
        return self._d.get("supersedes")

    @property
    def superseded_by(self) -> Optional[str]:
        """The record that replaced it, if any."""
        return self._d.get("superseded_by")

    # Time.
    @property
    def valid_from(self) -> Optional[_dt.datetime]:
        """When it became true in the world."""
        return parse_time(self._d.get("valid_from"))

    @property
    def valid_until(self) -> Optional[_dt.datetime]:
        """When it stopped (or stops) being true; ``None`` if open."""
        return parse_time(self._d.get("valid_until"))

    @property
    def expires_at(self) -> Optional[_dt.datetime]:
        """When it expires, if it does."""
        return parse_time(self._d.get("expires_at"))

    @property
    def recorded_at(self) -> _dt.datetime:
        """When the database learned this revision (transaction time)."""
        return parse_time(self._d["recorded_at"])  # type: ignore[return-value]

    @property
    def replaced_at(self) -> Optional[_dt.datetime]:
        """When a later revision replaced it in the database; ``None`` if it is the latest."""
        return parse_time(self._d.get("replaced_at"))

    def __getattr__(self, name: str) -> Any:
        body = self._d.get("body") or {}
        if name in body:
            return body[name]
        raise AttributeError(f"a {self._d.get('kind', 'record')} record has no field {name!r}")

    def __getitem__(self, name: str) -> Any:
        return (self._d.get("body") or {})[name]

    def __contains__(self, name: object) -> bool:
        return name in (self._d.get("body") or {})

    def get(self, name: str, default: Any = None) -> Any:
        """A body field, or ``default``."""
        return (self._d.get("body") or {}).get(name, default)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("records are immutable: revise or supersede them through the namespace")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("records are immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._d == other._d

    def __hash__(self) -> int:
        return hash((self._d["id"], self._d["rev"], self._d["recorded_at"], self._d.get("status")))

    def __repr__(self) -> str:
        first = self.text.split("\n", 1)[0]
        if len(first) > 60:
            first = first[:57] + "..."
        return f"Record({self.kind} {self.id} rev {self.rev}, {self.status}: {first!r})"

    def __dir__(self) -> list:
        return sorted(set(super().__dir__()) | set((self._d.get("body") or {}).keys()))

    def to_dict(self) -> dict:
        """The record as JSON-ready values (a copy)."""
        return copy.deepcopy(self._d)


class Hit:
    """One search result: the record, its score and, when asked, how it was found."""

    __slots__ = ("record", "score", "explain")

    def __init__(self, data: Mapping[str, Any]):
        # The answer has the record's fields with the hit's beside them.
        self.record = Record({k: v for k, v in data.items() if k not in ("score", "explain")})
        self.score: float = data["score"]
        self.explain: Optional[dict] = data.get("explain")

    def to_dict(self) -> dict:
        """The hit as JSON-ready values."""
        out = {"record": self.record.to_dict(), "score": self.score}
        if self.explain is not None:
            out["explain"] = dict(self.explain)
        return out

    def __repr__(self) -> str:
        return f"Hit({self.score:.3f}, {self.record!r})"


class Change:
    """One committed change to a record (from :meth:`Namespace.watch`): ``namespace``, ``id``,
    ``kind``, ``op`` (insert, revise, supersede, superseded, retire, expire, forget), ``rev``,
    ``tx`` (its transaction time, an aware datetime) and ``cursor`` (pass it as ``since`` to
    resume after this change: nothing missed, nothing twice). It carries no content: fetch the
    record with :meth:`Namespace.get` if it is wanted."""

    __slots__ = ("namespace", "id", "kind", "op", "rev", "tx", "cursor")

    def __init__(self, data: Mapping[str, Any]):
        self.namespace: str = data["namespace"]
        self.id: str = data["id"]
        self.kind: Optional[str] = data.get("kind")
        self.op: str = data["op"]
        self.rev: int = data["rev"]
        self.tx: _dt.datetime = parse_time(data["tx"])  # type: ignore[assignment]
        self.cursor: str = data["cursor"]

    def to_dict(self) -> dict:
        """The change as JSON-ready values."""
        return {k: (self.tx.isoformat() if k == "tx" else getattr(self, k)) for k in self.__slots__}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Change) and self.cursor == other.cursor and self.id == other.id

    def __hash__(self) -> int:
        return hash((self.cursor, self.id))

    def __repr__(self) -> str:
        return f"Change({self.op} {self.kind or 'record'} {self.id} rev {self.rev} at {self.cursor})"


class Context(str):
    """A context block: the text to put in a prompt (it is the string itself), with
    ``tokens`` (its size), ``ids`` (the records in it, in order) and ``left_out`` (items that
    did not fit the budget)."""

    tokens: int
    ids: tuple
    left_out: int

    def __new__(cls, data: Mapping[str, Any]) -> "Context":
        self = super().__new__(cls, data["context"])
        self.tokens = data["tokens"]
        self.ids = tuple(data["ids"])
        self.left_out = data["left_out"]
        return self

    @property
    def text(self) -> str:
        """The block as a plain string."""
        return str.__str__(self)

    def to_dict(self) -> dict:
        """The block and its figures as JSON-ready values."""
        return {"context": self.text, "tokens": self.tokens, "ids": list(self.ids), "left_out": self.left_out}
