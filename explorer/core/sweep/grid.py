"""The sweep's grid and its value lists: ``1,2,4..256`` (a comma list; ``a..b`` doubles from a up to b)."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.precision import PRECISIONS

PHASES = ("prefill", "decode")
MAX_POINTS_PER_RANGE = 64  # a..b doubles, so 64 steps already reach 2^64: more is a typo


def parse_values(text: str, option: str) -> tuple[int, ...]:
    """``"1,2,4..256"`` -> (1, 2, 4, 8, ..., 256): comma-separated whole numbers >= 1, where ``a..b`` is a, 2a,
    4a, ... while <= b, and b itself (so ``512..32768`` is 512, 1024, ..., 32768 and ``3..10`` is 3, 6, 10).
    Sorted, duplicates dropped. Raises ValueError naming ``option``."""
    out: set[int] = set()
    items = [s.strip() for s in str(text).split(",")]
    if not any(items):
        raise ValueError(f"{option}: expected values such as 1,2,4..256, got {text!r}")
    for item in items:
        lo, sep, hi = item.partition("..")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ValueError(f"{option}: {item!r} is not a whole number or a range a..b (e.g. 1,2,4..256)") from None
        if a < 1 or b < 1:
            raise ValueError(f"{option}: values must be whole numbers >= 1, got {item!r}")
        if b < a:
            raise ValueError(f"{option}: range {item!r} ends below its start")
        v = a
        steps = 0
        while v <= b:
            out.add(v)
            v *= 2
            steps += 1
            if steps > MAX_POINTS_PER_RANGE:
                raise ValueError(f"{option}: range {item!r} has more than {MAX_POINTS_PER_RANGE} points")
        out.add(b)
    return tuple(sorted(out))


def parse_names(text: str, option: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """``"fp16,fp8"`` -> ("fp16", "fp8"), each one of ``known``, order kept, duplicates dropped."""
    items = [s.strip().lower() for s in str(text).split(",") if s.strip()]
    if not items:
        raise ValueError(f"{option}: expected one or more of {', '.join(known)}")
    for s in items:
        if s not in known:
            raise ValueError(f"{option}: unknown value {s!r}; expected one of {', '.join(known)}")
    return tuple(dict.fromkeys(items))


@dataclass(frozen=True)
class Grid:
    """The contexts of a sweep: every combination of batch, sequence length, phase and precision.

    ``seq_lens`` None: the model's own token count. Prefill processes ``seq_len`` tokens per sequence; decode
    makes one new token per sequence against a KV cache of ``seq_len`` positions."""

    batches: tuple[int, ...] = (1,)
    seq_lens: tuple[int, ...] | None = None
    phases: tuple[str, ...] = ("decode",)
    precisions: tuple[str, ...] = ("fp16",)
    attention: str = "naive"
    lm_head: str = "last"

    def __post_init__(self):
        for name in ("batches", "seq_lens"):
            values = getattr(self, name)
            if values is None:
                continue
            if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
                raise ValueError(f"{name}: expected whole numbers >= 1, got {values!r}")
        for name, known in (("phases", PHASES), ("precisions", PRECISIONS)):
            values = getattr(self, name)
            if not values or any(v not in known for v in values):
                raise ValueError(f"{name}: expected one or more of {', '.join(known)}, got {values!r}")

    @property
    def size(self) -> int:
        """Contexts x precisions (points per device)."""
        return len(self.batches) * len(self.seq_lens or (None,)) * len(self.phases) * len(self.precisions)
