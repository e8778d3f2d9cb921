"""Vector files for big jobs: ``.npy`` (one float32 matrix per emitted kind) or Parquet (one file with the
ids and every emitted kind), written as batches arrive, so memory stays bounded by the batch.

A ``.npy`` header needs the row count, so rows go to a temporary raw file first and are copied behind
the header at the end; both formats appear atomically (renamed into place) when the sink is closed, and
the temporary files are removed when it is aborted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ppt.io import ExitCode, PptError

FORMATS = ("jsonl", "npy", "parquet")


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise PptError(f"--format must be one of {', '.join(FORMATS)}", ExitCode.USAGE)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise PptError(
                "--format parquet needs pyarrow", ExitCode.CONFIG, hint="pip install pyarrow, or use --format npy"
            ) from None
    return fmt


class VectorSink:
    """``write(ids, {kind: [n, dim] array}) -> first row index``; ``close()`` -> the paths written."""

    def __init__(self, prefix: str | Path, fmt: str, kinds: list[str], dim: int) -> None:
        self.prefix, self.fmt, self.kinds, self.dim = Path(prefix), check_format(fmt), list(kinds), int(dim)
        self.rows = 0
        self._tmp: dict[str, Any] = {}
        self._writer: Any = None
        parent = self.prefix.parent
        parent.mkdir(parents=True, exist_ok=True)
        if fmt == "npy":
            for k in self.kinds:
                fd, name = tempfile.mkstemp(prefix=f".{self.prefix.name}.{k}.", suffix=".raw", dir=parent)
                self._tmp[k] = (os.fdopen(fd, "wb"), name)
        elif fmt == "parquet":
            fd, name = tempfile.mkstemp(prefix=f".{self.prefix.name}.", suffix=".parquet", dir=parent)
            os.close(fd)
            self._tmp["parquet"] = (None, name)

    def paths(self) -> dict[str, str]:
        if self.fmt == "npy":
            return {k: f"{self.prefix}.{k}.npy" for k in self.kinds}
        return {"parquet": f"{self.prefix}.parquet"}

    def write(self, ids: list[Any], arrays: dict[str, np.ndarray]) -> int:
        first = self.rows
        n = len(ids)
        if self.fmt == "npy":
            for k in self.kinds:
                self._tmp[k][0].write(np.ascontiguousarray(arrays[k], dtype="<f4").tobytes())
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            cols = {
                "row": pa.array(range(first, first + n), pa.int64()),
                "id": pa.array([str(i) for i in ids], pa.string()),
            }
            for k in self.kinds:
                flat = pa.array(np.ascontiguousarray(arrays[k], dtype=np.float32).ravel())
                cols[k] = pa.FixedSizeListArray.from_arrays(flat, self.dim)
            table = pa.table(cols)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._tmp["parquet"][1], table.schema)
            self._writer.write_table(table)
        self.rows += n
        return first

    def close(self) -> dict[str, str]:
        out = self.paths()
        if self.fmt == "npy":
            for k in self.kinds:
                fh, name = self._tmp[k]
                fh.close()
                fd, final_tmp = tempfile.mkstemp(
                    prefix=f".{self.prefix.name}.{k}.", suffix=".npy", dir=self.prefix.parent
                )
                with os.fdopen(fd, "wb") as dst, open(name, "rb") as src:
                    np.lib.format.write_array_header_1_0(
                        dst, {"descr": "<f4", "fortran_order": False, "shape": (self.rows, self.dim)}
                    )
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(final_tmp, out[k])
                os.unlink(name)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            if self._writer is None:  # no rows: still write a valid, empty file
                schema = pa.schema(
                    [("row", pa.int64()), ("id", pa.string())]
                    + [(k, pa.list_(pa.float32(), self.dim)) for k in self.kinds]
                )
                pq.write_table(schema.empty_table(), self._tmp["parquet"][1])
            else:
                self._writer.close()
            os.replace(self._tmp["parquet"][1], out["parquet"])
        self._tmp = {}
        return out

    def abort(self) -> None:
        for fh, name in self._tmp.values():
            if fh is not None:
                with contextlib.suppress(OSError):
                    fh.close()
            with contextlib.suppress(OSError):
                os.unlink(name)
        self._tmp = {}
