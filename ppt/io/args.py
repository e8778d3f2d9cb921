"""StreamArgs: the one bundle of the options every stream subcommand shares (input, output, their formats,
fields, --on-error, batch size, device, quiet), so the runner, the stages and the CLI pass one object."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StreamArgs:
    input: str = "-"
    output: str = "-"
    text_field: str = "text"
    id_field: str = "id"
    on_error: str = "fail"
    batch_size: int = 64
    quiet: bool = False
    require_text: bool = True  # not a flag: whether a record without a text field is a bad record
    device: str = "auto"
    private: bool = False  # the output holds raw text or what reveals it: a new -o file is created 0600
    text_fields: tuple[str, ...] = ()  # a command that takes several text fields: all of them (the first is text_field)
    input_format: str = "auto"  # --input-format: jsonl, jsonl.gz, jsonl.zst, csv, parquet; auto: ppt.io.formats
    output_format: str = "auto"  # --output-format: the same; auto: from -o's name (stdout: jsonl)
